"""Access: HTTPS by default, the kubeconfig sim writes, --insecure, and the `muster sim` process."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import urllib3
import yaml
from kubernetes import client, config

from muster_sim.server import SimConfig, SimServer
from tests.sim.conftest import Raw, wait_for


def test_default_is_https_and_the_kubeconfig_holds_the_ca_and_admin_token(tmp_path: Path) -> None:
    out = tmp_path / "kc.yaml"
    with SimServer(
        SimConfig(token="s3cret", kubeconfig_out=out, work_dir=tmp_path)
    ).running() as sim:
        assert sim.url.startswith("https://127.0.0.1:")
        loaded = yaml.safe_load(out.read_text())
        cluster = loaded["clusters"][0]["cluster"]
        assert cluster["server"] == sim.url
        assert sim.cert is not None
        assert (
            base64.b64decode(cluster["certificate-authority-data"]) == sim.cert.ca_path.read_bytes()
        )
        assert loaded["users"][0]["user"] == {"token": "s3cret"}
        api = config.new_client_from_config(str(out))
        try:
            # the official client verifies the serving certificate against the CA in the kubeconfig
            assert client.VersionApi(api).get_code().major == "1"
            assert client.CoreV1Api(api).read_namespace("default").status.phase == "Active"
        finally:
            api.close()


def test_admin_token_is_made_fresh_when_not_given() -> None:
    with SimServer(SimConfig()).running() as first, SimServer(SimConfig()).running() as second:
        assert first.admin_token and second.admin_token
        assert first.admin_token != second.admin_token
        raw = Raw.admin(first)
        assert raw.json("GET", "/api/v1/namespaces")[0] == 200
        assert raw.as_token(second.admin_token).json("GET", "/api/v1/namespaces")[0] == 401


def test_insecure_serves_plain_http_without_authentication() -> None:
    with SimServer(SimConfig(insecure=True)).running() as sim:
        assert sim.url.startswith("http://127.0.0.1:")
        assert sim.cert is None and sim.admin_token is None
        http = urllib3.PoolManager()
        assert http.request("GET", sim.url + "/healthz").status == 200
        # no credential, and every verb is allowed
        assert http.request("GET", sim.url + "/api/v1/namespaces/kube-system").status == 200
        response = http.request("POST", sim.url + "/sim/compact")
        assert response.status == 200


def test_insecure_with_a_token_is_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            *(sys.executable, "-m", "scheduler.cli", "sim", "--port", "0", "--insecure"),
            *("--token", "x", "--kubeconfig-out", str(tmp_path / "kc")),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert "--insecure" in result.stderr and "--token" in result.stderr


@pytest.mark.timeout(60)
def test_muster_sim_command_serves_and_exits_zero_on_sigterm(tmp_path: Path) -> None:
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump([{"name": "big", "count": 2, "cpu": "96"}]))
    kubeconfig = tmp_path / "sim.kubeconfig"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scheduler.cli",
            "sim",
            "--port",
            "0",
            "--nodes",
            "3",
            "--node-gpus",
            "2",
            "--node-pools",
            str(pools),
            "--kubeconfig-out",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_for(kubeconfig.exists, timeout=20, interval=0.05)
        api = config.new_client_from_config(str(kubeconfig))
        try:
            nodes = client.CoreV1Api(api).list_node().items
        finally:
            api.close()
        assert len(nodes) == 5
        assert nodes[-1].status.allocatable["nvidia.com/gpu"] == "2"
        assert {n.metadata.name for n in nodes} >= {"big-0000", "sim-node-0002"}
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=20)
    assert code == 0, process.stderr.read() if process.stderr else ""


def test_bad_pool_file_is_a_clear_error(tmp_path: Path) -> None:
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump([{"name": "odd", "cpu": "lots"}]))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scheduler.cli",
            "sim",
            "--port",
            "0",
            "--node-pools",
            str(pools),
            "--kubeconfig-out",
            str(tmp_path / "kc"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert "odd" in result.stderr and "cpu" in result.stderr
