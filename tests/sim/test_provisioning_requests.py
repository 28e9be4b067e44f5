"""ProvisioningRequests and PodTemplates on sim, over HTTPS, as kube-apiserver serves them with
cluster-autoscaler's CRD installed; and sim's stand-in autoscaler answering a request."""

from __future__ import annotations

from typing import Any

import pytest

from muster_sim.cluster.autoscaler.config import AutoscalerConfig
from muster_sim.cluster.autoscaler.node_groups import NodeGroup
from muster_sim.cluster.nodes import NodePool
from tests.sim.conftest import Raw, create_namespace, unique, wait_for

SIM_CONFIG = {
    "nodes": 0,
    "autoscaler": AutoscalerConfig(
        groups=(NodeGroup("big", 0, 4, NodePool("big", 0, "8", "32Gi")),),
        node_delay=0.1,
        ready_delay=0.1,
        scan_interval=0.1,
    ),
}
BEST_EFFORT = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"


@pytest.fixture(scope="module")
def ns(raw: Raw) -> str:
    return create_namespace(raw, "provreq")


def requests_path(ns: str) -> str:
    return f"/apis/autoscaling.x-k8s.io/v1/namespaces/{ns}/provisioningrequests"


def templates_path(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/podtemplates"


def template(name: str, cpu: str = "4", **spec: Any) -> dict[str, Any]:
    container = {"name": "m", "image": "registry.k8s.io/pause:3.9"}
    container["resources"] = {"requests": {"cpu": cpu}}
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": name},
        "template": {"spec": {"containers": [container], **spec}},
    }


def request(name: str, pod_sets: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": {"name": name},
        "spec": {"provisioningClassName": BEST_EFFORT, "podSets": pod_sets, **spec},
    }


def pod_set(template_name: str, count: int) -> dict[str, Any]:
    return {"podTemplateRef": {"name": template_name}, "count": count}


def test_the_crd_is_served_with_its_short_names_when_the_stand_in_runs(raw: Raw) -> None:
    code, found = raw.json("GET", "/apis/autoscaling.x-k8s.io/v1")
    assert code == 200
    (resource,) = [r for r in found["resources"] if r["name"] == "provisioningrequests"]
    assert resource["namespaced"] is True
    assert resource["shortNames"] == ["provreq", "provreqs"]
    assert "provisioningrequests/status" in {r["name"] for r in found["resources"]}


def test_a_pod_template_is_defaulted_as_a_pod_spec_and_read_back(raw: Raw, ns: str) -> None:
    name = unique("tpl")
    code, created = raw.json("POST", templates_path(ns), template(name, nodeSelector={"a": "b"}))
    assert code == 201, created
    code, read = raw.json("GET", f"{templates_path(ns)}/{name}")
    assert code == 200
    spec = read["template"]["spec"]
    assert spec["nodeSelector"] == {"a": "b"}
    assert spec["restartPolicy"] == "Always" and spec["schedulerName"] == "default-scheduler"
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert "enableServiceLinks" not in spec  # a pod's default, not a template's


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"spec": {}}, "template.spec.containers"),
        ({"spec": {"containers": [{"image": "x"}]}}, "template.spec.containers[0].name"),
    ],
    ids=["no-containers", "no-container-name"],
)
def test_a_pod_template_whose_spec_is_not_a_pod_spec_is_refused(
    raw: Raw, ns: str, body: dict[str, Any], field: str
) -> None:
    code, status = raw.json(
        "POST", templates_path(ns), {"metadata": {"name": unique("tpl")}, "template": body}
    )
    assert code == 422, status
    assert field in status["message"]


def test_a_request_is_created_and_read_back_whole(raw: Raw, ns: str) -> None:
    name = unique("req")
    body = request(name, [pod_set("absent", 2)], parameters={"noRetry": "true"})
    body["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "muster"}
    code, created = raw.json("POST", requests_path(ns), body)
    assert code == 201, created
    code, read = raw.json("GET", f"{requests_path(ns)}/{name}")
    assert read["spec"] == body["spec"]
    assert read["metadata"]["labels"] == body["metadata"]["labels"]


def test_the_spec_of_a_request_is_immutable(raw: Raw, ns: str) -> None:
    name = unique("req")
    code, _ = raw.json("POST", requests_path(ns), request(name, [pod_set("absent", 2)]))
    assert code == 201
    code, status = raw.json(
        "PATCH",
        f"{requests_path(ns)}/{name}",
        {"spec": {"podSets": [pod_set("absent", 3)]}},
        content_type="application/merge-patch+json",
    )
    assert code == 422, status
    assert "Value is immutable" in status["message"]


@pytest.mark.parametrize(
    ("pod_sets", "words"),
    [
        ([], "spec.podSets"),
        ([pod_set(f"t{i}", 1) for i in range(33)], "spec.podSets"),
        ([pod_set("t", 0)], "spec.podSets[0].count"),
        ([pod_set("Not_A_Name", 1)], "spec.podSets[0].podTemplateRef.name"),
    ],
    ids=["none", "33", "count-0", "bad-template-name"],
)
def test_a_request_outside_the_schema_is_refused(
    raw: Raw, ns: str, pod_sets: list[dict[str, Any]], words: str
) -> None:
    code, status = raw.json("POST", requests_path(ns), request(unique("req"), pod_sets))
    assert code == 422, status
    assert words in status["message"]


def test_unknown_fields_of_a_request_are_pruned(raw: Raw, ns: str) -> None:
    name = unique("req")
    body = request(name, [pod_set("absent", 1)])
    body["spec"]["bogus"] = 1
    code, created = raw.json("POST", requests_path(ns), body)
    assert code == 201
    assert "bogus" not in created["spec"]


def test_the_stand_in_answers_a_request_and_its_nodes_come_ready(raw: Raw, ns: str) -> None:
    name = unique("gang")
    code, _ = raw.json("POST", templates_path(ns), template(f"{name}-0"))
    assert code == 201
    code, _ = raw.json("POST", requests_path(ns), request(name, [pod_set(f"{name}-0", 4)]))
    assert code == 201

    def provisioned() -> dict[str, str] | None:
        _, found = raw.json("GET", f"{requests_path(ns)}/{name}")
        conditions = {c["type"]: c["reason"] for c in found.get("status", {}).get("conditions", [])}
        return conditions if "Provisioned" in conditions else None

    conditions = wait_for(provisioned, timeout=10)
    assert conditions == {"Accepted": "Accepted", "Provisioned": "CapacityIsProvisioned"}

    def ready_nodes() -> list[str]:
        _, listed = raw.json("GET", "/api/v1/nodes?labelSelector=sim.muster.dev/node-group=big")
        return [
            n["metadata"]["name"]
            for n in listed["items"]
            if any(
                c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"]
            )
        ]

    assert len(wait_for(lambda: len(ready_nodes()) == 2 and ready_nodes(), timeout=10)) == 2
