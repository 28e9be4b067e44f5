"""Discovery, /version and health endpoints, as kubectl and kopf read them."""

from __future__ import annotations

import subprocess

from muster_sim.server import SimServer
from tests.sim.conftest import Raw


def test_core_api_versions_and_resources(raw: Raw) -> None:
    code, versions = raw.json("GET", "/api")
    assert code == 200 and versions["kind"] == "APIVersions" and versions["versions"] == ["v1"]
    code, doc = raw.json("GET", "/api/v1")
    assert doc["kind"] == "APIResourceList" and doc["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in doc["resources"]}
    for name in ("pods", "nodes", "namespaces", "events", "configmaps", "secrets"):
        assert "watch" in by_name[name]["verbs"]
    assert by_name["pods"]["namespaced"] is True and by_name["pods"]["kind"] == "Pod"
    assert by_name["pods"]["shortNames"] == ["po"]
    assert by_name["nodes"]["namespaced"] is False
    assert by_name["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert by_name["pods/binding"]["verbs"] == ["create"]
    assert by_name["pods/eviction"]["group"] == "policy"
    assert by_name["nodes/status"]["kind"] == "Node"


def test_group_discovery(raw: Raw) -> None:
    code, groups = raw.json("GET", "/apis")
    assert code == 200 and groups["kind"] == "APIGroupList"
    names = {g["name"] for g in groups["groups"]}
    assert {
        "coordination.k8s.io",
        "events.k8s.io",
        "scheduling.k8s.io",
        "policy",
        "apiextensions.k8s.io",
    } <= names
    code, group = raw.json("GET", "/apis/policy")
    assert group["kind"] == "APIGroup" and group["preferredVersion"]["groupVersion"] == "policy/v1"
    code, doc = raw.json("GET", "/apis/coordination.k8s.io/v1")
    assert [r["name"] for r in doc["resources"]] == ["leases"]
    assert raw.json("GET", "/apis/nope.example.com")[0] == 404


def test_version_and_health(raw: Raw) -> None:
    code, version = raw.json("GET", "/version")
    assert code == 200 and version["major"] == "1" and version["gitVersion"].startswith("v1.")
    for path in ("/healthz", "/readyz", "/livez"):
        response = raw.request("GET", path)
        assert response.status == 200 and response.data == b"ok"


def test_kubectl_gets_pods_and_nodes(sim: SimServer) -> None:
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(sim.kubeconfig_path), "get", "nodes", "-o", "name"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "node/sim-node-0000" in result.stdout.split()
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(sim.kubeconfig_path), "get", "pdb,leases", "-A"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_unknown_method_is_405(raw: Raw) -> None:
    code, body = raw.json("POST", "/api/v1/namespaces/default/configmaps/x/status")
    assert code == 404 or (code == 405 and body["reason"] == "MethodNotAllowed")
    code, body = raw.json("OPTIONS", "/api/v1/namespaces/default/configmaps")
    assert code == 405 and body["reason"] == "MethodNotAllowed"
