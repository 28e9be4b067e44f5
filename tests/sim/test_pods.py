"""Pod subresources and admission: binding, status, priority, validation."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.sim.conftest import Raw, bind, pod_body, unique


def test_binding_answers_201_status_and_sets_node_and_pod_scheduled(raw: Raw) -> None:
    name = unique("b")
    raw.json("POST", "/api/v1/namespaces/default/pods", pod_body(name))
    code, body = raw.json(
        "POST",
        f"/api/v1/namespaces/default/pods/{name}/binding",
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "sim-node-0002"},
        },
    )
    assert code == 201
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    _, pod = raw.json("GET", f"/api/v1/namespaces/default/pods/{name}")
    assert pod["spec"]["nodeName"] == "sim-node-0002"
    scheduled = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled and scheduled[0]["status"] == "True"


def test_binding_a_bound_pod_is_409_with_the_real_message(raw: Raw, core: client.CoreV1Api) -> None:
    name = unique("bb")
    core.create_namespaced_pod("default", pod_body(name))
    bind(core, "default", name, "sim-node-0000")
    code, body = raw.json(
        "POST",
        f"/api/v1/namespaces/default/pods/{name}/binding",
        {"metadata": {"name": name}, "target": {"name": "sim-node-0001"}},
    )
    assert code == 409
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        f'Operation cannot be fulfilled on pods/binding "{name}": pod '
        f'{name} is already assigned to node "sim-node-0000"'
    )
    assert body["details"] == {"name": name, "kind": "pods/binding"}


def test_binding_a_missing_pod_is_404(raw: Raw) -> None:
    code, body = raw.json(
        "POST",
        "/api/v1/namespaces/default/pods/ghost/binding",
        {"metadata": {"name": "ghost"}, "target": {"name": "sim-node-0000"}},
    )
    assert code == 404
    assert body["message"] == 'pods "ghost" not found'


def test_legacy_bindings_resource_binds_too(raw: Raw) -> None:
    name = unique("lb")
    raw.json("POST", "/api/v1/namespaces/default/pods", pod_body(name))
    code, _ = raw.json(
        "POST",
        "/api/v1/namespaces/default/bindings",
        {"metadata": {"name": name}, "target": {"name": "sim-node-0000"}},
    )
    assert code == 201
    assert raw.json("GET", f"/api/v1/namespaces/default/pods/{name}")[1]["spec"]["nodeName"]


def test_node_name_is_immutable_outside_binding(raw: Raw) -> None:
    name = unique("imm")
    _, pod = raw.json("POST", "/api/v1/namespaces/default/pods", pod_body(name))
    pod["spec"]["nodeName"] = "sim-node-0000"
    code, body = raw.json("PUT", f"/api/v1/namespaces/default/pods/{name}", pod)
    assert code == 422
    assert body["reason"] == "Invalid"
    assert body["message"].startswith(
        f'Pod "{name}" is invalid: spec: Forbidden: pod updates may not change fields other than'
    )
    response = raw.request(
        "PATCH",
        f"/api/v1/namespaces/default/pods/{name}",
        {"spec": {"nodeName": "sim-node-0001"}},
        content_type="application/strategic-merge-patch+json",
    )
    assert response.status == 422


def test_status_subresource_writes_only_status(raw: Raw) -> None:
    name = unique("st")
    _, pod = raw.json("POST", "/api/v1/namespaces/default/pods", pod_body(name))
    pod["status"]["phase"] = "Failed"
    pod["metadata"]["labels"] = {"ignored": "yes"}
    code, updated = raw.json("PUT", f"/api/v1/namespaces/default/pods/{name}/status", pod)
    assert code == 200
    assert updated["status"]["phase"] == "Failed"
    assert "labels" not in updated["metadata"]
    # and the main resource ignores status
    updated["status"]["phase"] = "Running"
    code, again = raw.json("PUT", f"/api/v1/namespaces/default/pods/{name}", updated)
    assert code == 200 and again["status"]["phase"] == "Failed"
    code, got = raw.json("GET", f"/api/v1/namespaces/default/pods/{name}/status")
    assert code == 200 and got["status"]["phase"] == "Failed"


def test_node_status_subresource(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    node = core.patch_node_status("sim-node-0002", {"status": {"allocatable": {"cpu": "7"}}})
    assert node.status.allocatable["cpu"] == "7"


def test_priority_class_fills_priority_and_preemption_policy(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    sched = client.SchedulingV1Api(api_client)
    cls = unique("high")
    sched.create_priority_class(
        {"metadata": {"name": cls}, "value": 1000, "preemptionPolicy": "Never"}
    )
    pod = core.create_namespaced_pod("default", pod_body(unique("pr"), priorityClassName=cls))
    assert pod.spec.priority == 1000
    assert pod.spec.preemption_policy == "Never"
    plain = core.create_namespaced_pod("default", pod_body(unique("np")))
    assert plain.spec.priority == 0
    assert plain.spec.preemption_policy == "PreemptLowerPriority"
    system = core.create_namespaced_pod(
        "default", pod_body(unique("sys"), priorityClassName="system-node-critical")
    )
    assert system.spec.priority == 2000001000


def test_unknown_priority_class_is_403_forbidden(raw: Raw) -> None:
    code, body = raw.json(
        "POST", "/api/v1/namespaces/default/pods", pod_body("x", priorityClassName="y")
    )
    assert code == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == 'pods "x" is forbidden: no PriorityClass with name y was found'


def test_unknown_namespaced_kind_path_is_404(raw: Raw) -> None:
    code, body = raw.json("GET", "/api/v1/namespaces/default/widgets")
    assert code == 404
    assert body["message"] == "the server could not find the requested resource"


@pytest.mark.parametrize("bad", ["1.2.3", "lots", "5Zi"])
def test_unparseable_quantity_is_refused(raw: Raw, bad: str) -> None:
    code, body = raw.json("POST", "/api/v1/namespaces/default/pods", pod_body(unique("q"), cpu=bad))
    # the real server fails while decoding the body: 400 BadRequest, not 422
    assert code == 400
    assert "quantities must match the regular expression" in body["message"]


def test_negative_quantity_and_request_above_limit_are_422(raw: Raw) -> None:
    code, body = raw.json(
        "POST", "/api/v1/namespaces/default/pods", pod_body(unique("n"), cpu="-1")
    )
    assert code == 422
    assert body["details"]["causes"][0]["field"] == "spec.containers[0].resources.requests[cpu]"
    assert "must be greater than or equal to 0" in body["message"]
    pod = pod_body(unique("l"), cpu="2")
    pod["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "1"}
    code, body = raw.json("POST", "/api/v1/namespaces/default/pods", pod)
    assert code == 422
    assert "must be less than or equal to cpu limit" in body["message"]


def test_pod_defaults_match_the_real_server(core: client.CoreV1Api) -> None:
    body = pod_body(unique("def"))
    body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
    pod = core.create_namespaced_pod("default", body)
    assert pod.spec.scheduler_name == "default-scheduler"
    assert pod.spec.restart_policy == "Always"
    assert pod.spec.termination_grace_period_seconds == 30
    assert pod.spec.containers[0].resources.requests == {"cpu": "1", "memory": "1Gi"}
    assert pod.status.phase == "Pending"
    assert pod.status.qos_class == "Guaranteed"
    assert {t.key for t in pod.spec.tolerations} >= {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    }


def test_a_node_created_through_the_api_starts_tainted_not_ready(raw: Raw) -> None:
    # kube-apiserver's TaintNodesByCondition admission; the node lifecycle controller
    # lifts the taint once the node is Ready
    node = {
        "metadata": {"name": "fresh"},
        "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]},
    }
    code, created = raw.json("POST", "/api/v1/nodes", node)
    assert code == 201, created
    assert created["spec"]["taints"] == [
        {"key": "a", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
    ]
    raw.json("DELETE", "/api/v1/nodes/fresh")


def test_a_pods_scheduling_group_is_dropped_where_the_native_api_is_not_served(raw: Raw) -> None:
    # As kube-apiserver with its GenericWorkload gate off: the field is not stored.
    name = unique("grouped")
    code, made = raw.json(
        "POST",
        "/api/v1/namespaces/default/pods",
        pod_body(name, schedulingGroup={"podGroupName": "g"}),
    )
    assert code == 201, made
    assert "schedulingGroup" not in made["spec"]
