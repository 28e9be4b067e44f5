"""sim's audit log: every write, with its verb, object, resourceVersion, code and writer."""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from muster_sim.cli import ConfigError, add_parser, config_from_args
from muster_sim.server import SimServer
from tests.sim.conftest import (
    Raw,
    create_namespace,
    pod_body,
    service_account_token,
    sim_config,
    unique,
    wait_for,
)

Record = dict[str, Any]


def records(raw: Raw, since: int = 0) -> list[Record]:
    response = raw.request("GET", f"/sim/audit?since={since}")
    assert response.status == 200, response.data
    return [json.loads(line) for line in response.data.splitlines() if line.strip()]


def last_seq(raw: Raw) -> int:
    # the header holds the newest seq; a since beyond it answers no records but never a 410
    response = raw.request("GET", "/sim/audit?since=1000000000")
    return int(response.headers["X-Sim-Audit-Seq"])


def about(found: list[Record], name: str) -> list[Record]:
    return [r for r in found if r["objectRef"].get("name") == name]


def test_each_write_is_recorded_with_verb_object_resource_version_code_and_user(
    raw: Raw,
) -> None:
    namespace = create_namespace(raw)
    name = unique("audited")
    start = last_seq(raw)
    code, created = raw.json("POST", f"/api/v1/namespaces/{namespace}/pods", pod_body(name))
    assert code == 201
    binding = {"metadata": {"name": name}, "target": {"kind": "Node", "name": "sim-node-0001"}}
    code, _ = raw.json("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", binding)
    assert code == 201
    code, _ = raw.json("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}")
    assert code == 200

    mine = [r for r in about(records(raw, start), name) if r["requestURI"]]
    assert [
        (r["verb"], r["objectRef"]["resource"], r["objectRef"].get("subresource")) for r in mine
    ] == [
        ("create", "pods", None),
        ("create", "pods", "binding"),
        ("delete", "pods", None),
    ]
    create, bind, delete = mine
    assert create["objectRef"]["namespace"] == namespace
    assert create["objectRef"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert create["responseStatus"]["code"] == 201
    assert create["user"]["username"] == "muster-sim-admin"
    assert "system:masters" in create["user"]["groups"]
    assert create["responseObject"]["metadata"]["uid"] == created["metadata"]["uid"]
    assert bind["requestObject"]["target"]["name"] == "sim-node-0001"
    assert bind["responseObject"]["spec"]["nodeName"] == "sim-node-0001"
    assert int(bind["objectRef"]["resourceVersion"]) > int(create["objectRef"]["resourceVersion"])
    assert delete["responseStatus"]["code"] == 200
    seqs = [r["seq"] for r in records(raw, start)]
    assert seqs == list(range(start + 1, start + 1 + len(seqs))), "seq has gaps or repeats"
    assert all(a["time"] <= b["time"] for a, b in itertools.pairwise(mine))


def test_a_refused_write_is_recorded_with_its_code_and_no_object(raw: Raw) -> None:
    namespace = create_namespace(raw)
    name = unique("twice")
    raw.json("POST", f"/api/v1/namespaces/{namespace}/pods", pod_body(name))
    start = last_seq(raw)
    code, _ = raw.json("POST", f"/api/v1/namespaces/{namespace}/pods", pod_body(name))
    assert code == 409
    (refused,) = about(records(raw, start), name)
    assert refused["responseStatus"]["code"] == 409
    assert "responseObject" not in refused
    assert "resourceVersion" not in refused["objectRef"]


def test_a_service_account_writer_is_recorded_with_its_token_credential_id(raw: Raw) -> None:
    namespace = create_namespace(raw)
    token = service_account_token(raw, namespace, "writer")
    start = last_seq(raw)
    # the account has no RBAC: the write is refused, and the refusal names who tried
    code, _ = raw.as_token(token).json(
        "POST", f"/api/v1/namespaces/{namespace}/pods", pod_body(unique("p"))
    )
    assert code == 403
    (refused,) = [r for r in records(raw, start) if r["verb"] == "create"]
    assert refused["user"]["username"] == f"system:serviceaccount:{namespace}:writer"
    assert refused["responseStatus"]["code"] == 403
    (credential,) = refused["user"]["extra"]["authentication.kubernetes.io/credential-id"]
    assert credential.startswith("JTI=")


def test_sims_own_writes_are_recorded_as_internal(raw: Raw) -> None:
    namespace = create_namespace(raw)
    name = unique("runs")
    start = last_seq(raw)
    raw.json("POST", f"/api/v1/namespaces/{namespace}/pods", pod_body(name))
    binding = {"metadata": {"name": name}, "target": {"kind": "Node", "name": "sim-node-0000"}}
    raw.json("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", binding)

    def running() -> list[Record]:
        return [
            r
            for r in about(records(raw, start), name)
            if r["user"]["username"] == "muster-sim:internal"
            and r.get("responseObject", {}).get("status", {}).get("phase") == "Running"
        ]

    (kubelet,) = wait_for(running)
    assert kubelet["verb"] == "update"
    assert kubelet["objectRef"]["namespace"] == namespace


def test_the_audit_endpoint_is_for_the_admin_only(raw: Raw) -> None:
    namespace = create_namespace(raw)
    token = service_account_token(raw, namespace, "reader")
    assert raw.as_token(token).request("GET", "/sim/audit").status == 403
    assert raw.as_token(None).request("GET", "/sim/audit").status == 401


def test_a_non_integer_since_is_a_400_naming_the_parameter(raw: Raw) -> None:
    code, body = raw.json("GET", "/sim/audit?since=yesterday")
    assert code == 400
    assert "since='yesterday'" in body["message"]


def test_records_since_n_resume_after_record_n_and_limit_caps_them(raw: Raw) -> None:
    namespace = create_namespace(raw)
    start = last_seq(raw)
    for _ in range(3):
        raw.json("POST", f"/api/v1/namespaces/{namespace}/pods", pod_body(unique("r")))
    found = records(raw, start)
    assert len(found) >= 3
    response = raw.request("GET", f"/sim/audit?since={start + 1}&limit=1")
    (one,) = [json.loads(line) for line in response.data.splitlines()]
    assert one["seq"] == start + 2


def test_records_dropped_from_memory_are_a_410_and_the_file_keeps_them(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    config = sim_config(nodes=1, audit_capacity=5, audit_log_path=log)
    with SimServer(config).running() as server:
        raw = Raw.admin(server)
        for _ in range(8):
            raw.json("POST", "/api/v1/namespaces", {"metadata": {"name": unique("gone")}})
        code, body = raw.json("GET", "/sim/audit?since=0")
        assert code == 410 and body["reason"] == "Expired"
        assert body["message"].startswith("audit records up to ")
        seq = last_seq(raw)
        kept = raw.request("GET", f"/sim/audit?since={seq - 5}")
        assert kept.status == 200 and len(kept.data.splitlines()) == 5
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["seq"] for r in lines] == list(range(1, seq + 1))
    created = [r for r in lines if r["objectRef"]["resource"] == "namespaces" and r["requestURI"]]
    assert len(created) == 8


def parse(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    return parser.parse_args(["sim", *flags])


def test_the_audit_flags_reach_the_config() -> None:
    config = config_from_args(parse("--audit-log", "/tmp/a.log", "--audit-capacity", "7"))
    assert config.audit_log_path == Path("/tmp/a.log")
    assert config.audit_capacity == 7


def test_an_audit_capacity_below_one_is_refused_naming_the_flag() -> None:
    with pytest.raises(ConfigError, match="--audit-capacity 0"):
        config_from_args(parse("--audit-capacity", "0"))
