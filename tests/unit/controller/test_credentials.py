"""kopf's credentials for every kind of user the official client loads (no server needed)."""

from __future__ import annotations

import base64
import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s_client
from kubernetes.config.incluster_config import InClusterConfigLoader

from scheduler.api.errors import ConfigError
from scheduler.controller.credentials import connection_info, login_handler
from scheduler.kube.config import load_configuration

SERVER = "https://127.0.0.1:6443"
# Any PEM text will do: the loader only writes it to a file, nothing parses it here.
PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def kubeconfig(path: Path, user: dict[str, Any]) -> str:
    """A one-context kubeconfig whose user is `user`, as kubectl writes them."""
    ca = base64.b64encode(PEM.encode()).decode()
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": SERVER, "certificate-authority-data": ca}}
                ],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)


def test_kubeconfig_token_becomes_a_bearer_token(tmp_path: Path) -> None:
    info = connection_info(load_configuration(kubeconfig(tmp_path / "kc", {"token": "abc"})))
    assert (info.server, info.scheme, info.token) == (SERVER, "Bearer", "abc")
    assert info.ca_path is not None and Path(info.ca_path).read_text() == PEM
    assert info.insecure is False


def test_kubeconfig_token_file_is_read(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("from-file\n")
    info = connection_info(
        load_configuration(kubeconfig(tmp_path / "kc", {"tokenFile": str(token)}))
    )
    assert (info.scheme, info.token) == ("Bearer", "from-file")


def test_client_certificate_data_becomes_files(tmp_path: Path) -> None:
    data = base64.b64encode(PEM.encode()).decode()
    user = {"client-certificate-data": data, "client-key-data": data}
    info = connection_info(load_configuration(kubeconfig(tmp_path / "kc", user)))
    assert info.token is None and info.scheme is None
    assert info.certificate_path is not None and info.private_key_path is not None
    assert Path(info.certificate_path).read_text() == PEM
    assert Path(info.private_key_path).read_text() == PEM


def test_exec_plugin_token_is_taken(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin.py"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {"token": "exec-token"},
    }
    plugin.write_text(f"import json\nprint(json.dumps({credential!r}))\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": [str(plugin)],
            "interactiveMode": "Never",
        }
    }
    info = connection_info(load_configuration(kubeconfig(tmp_path / "kc", user)))
    assert (info.scheme, info.token) == ("Bearer", "exec-token")


def test_in_cluster_service_account_token(tmp_path: Path) -> None:
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("sa-token")
    ca.write_text(PEM)
    configuration = k8s_client.Configuration()
    InClusterConfigLoader(  # type: ignore[no-untyped-call]
        token_filename=str(token),
        cert_filename=str(ca),
        environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
    ).load_and_set(configuration)
    info = connection_info(configuration)
    assert info.scheme is not None and info.scheme.lower() == "bearer"  # in-cluster: "bearer"
    assert (info.server, info.token) == ("https://10.0.0.1:443", "sa-token")
    assert info.ca_path == str(ca)


def test_login_loads_anew_so_a_rotated_token_is_seen(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first")
    path = kubeconfig(tmp_path / "kc", {"tokenFile": str(token)})
    login = login_handler(lambda: load_configuration(path))
    assert login().token == "first"
    # the kubelet rotates a projected token by replacing the file
    token.write_text("second")
    assert login().token == "second"


def test_a_user_without_any_credential_is_refused_with_a_message(tmp_path: Path) -> None:
    configuration = load_configuration(kubeconfig(tmp_path / "kc", {}))
    with pytest.raises(ConfigError, match="neither a token nor a client certificate"):
        connection_info(configuration)


def test_the_official_client_sends_what_kopf_gets(tmp_path: Path) -> None:
    # The header kopf sends must be the one the official client itself would send.
    configuration = load_configuration(kubeconfig(tmp_path / "kc", {"token": "abc"}))
    sent = json.dumps(configuration.auth_settings())
    info = connection_info(configuration)
    assert f"{info.scheme} {info.token}" in sent
