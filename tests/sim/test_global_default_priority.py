"""Priority admission with a globalDefault PriorityClass (its own sim: the default is global)."""

from __future__ import annotations

from kubernetes import client

from tests.sim.conftest import pod_body


def test_pod_without_class_gets_the_global_default(api_client: client.ApiClient) -> None:
    sched = client.SchedulingV1Api(api_client)
    core = client.CoreV1Api(api_client)
    sched.create_priority_class({"metadata": {"name": "batch"}, "value": 50, "globalDefault": True})
    pod = core.create_namespaced_pod("default", pod_body("p"))
    assert pod.spec.priority == 50
    assert pod.spec.priority_class_name == "batch"
