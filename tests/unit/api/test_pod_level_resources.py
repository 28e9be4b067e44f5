"""Pod-level resources (spec.resources): the pod's request as kube-scheduler counts it, and the
pod-level requests the API server writes into a pod made from a template or a manifest."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.pod_defaults import with_defaulted_requests
from scheduler.api.pod_requests import is_pod_level_resource, pod_request
from scheduler.api.resources import Resource
from scheduler.api.task import TaskInfo

GIB = 2**30
MIB = 2**20
GPU = "nvidia.com/gpu"
HUGE = "hugepages-2Mi"


def container(**requests: Any) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": _names(requests)}}


def sidecar(**requests: Any) -> dict[str, Any]:
    return {**container(**requests), "restartPolicy": "Always"}


def limited(**limits: Any) -> dict[str, Any]:
    return {"name": "c", "resources": {"limits": _names(limits)}}


def _names(values: dict[str, Any]) -> dict[str, Any]:
    aliases = {"gpu": GPU, "huge": HUGE}
    return {aliases.get(key, key): value for key, value in values.items()}


def pod_level(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> Any:
    found: dict[str, Any] = {}
    if requests is not None:
        found["requests"] = _names(requests)
    if limits is not None:
        found["limits"] = _names(limits)
    return found


def request_of(**spec: Any) -> Resource:
    return pod_request(wire.from_dict(spec, wire.PodSpec))


# The rule, case by case: (pod spec, the request kube-scheduler counts).
RULE = [
    pytest.param(
        {"containers": [container(cpu="100m", memory="1Gi")], "resources": pod_level({"cpu": "4"})},
        Resource(4000, GIB),
        id="pod-level-cpu-replaces-the-containers-cpu-memory-stays-theirs",
    ),
    pytest.param(
        {
            "containers": [container(cpu="1", memory="1Gi")],
            "resources": pod_level({"memory": "8Gi"}),
        },
        Resource(1000, 8 * GIB),
        id="pod-level-memory-replaces-the-containers-memory-cpu-stays-theirs",
    ),
    pytest.param(
        {
            "containers": [container(cpu="1"), container(cpu="1")],
            "resources": pod_level({"cpu": "3", "memory": "2Gi"}),
        },
        Resource(3000, 2 * GIB),
        id="both-set-the-containers-sum-is-not-counted",
    ),
    pytest.param(
        {"containers": [container(cpu="1")], "resources": pod_level(limits={"cpu": "4"})},
        Resource(1000),
        id="only-limits-set-the-containers-request-counts",
    ),
    pytest.param(
        {"containers": [container(cpu="1", gpu=2)], "resources": pod_level({"cpu": "8"})},
        Resource(8000, 0, {GPU: 2}),
        id="an-extended-resource-stays-the-containers-beside-pod-level-cpu",
    ),
    pytest.param(
        {
            "containers": [container(cpu="1", memory="1Gi", huge="2Mi")],
            "resources": pod_level({"cpu": "2", "memory": "2Gi", "huge": "8Mi"}),
        },
        Resource(2000, 2 * GIB, {HUGE: 8 * MIB}),
        id="pod-level-hugepages-replace-the-containers",
    ),
    pytest.param(
        {
            "containers": [container(cpu="1", memory="1Gi", huge="4Mi")],
            "resources": pod_level({"cpu": "2"}),
        },
        Resource(2000, GIB, {HUGE: 4 * MIB}),
        id="hugepages-not-named-at-pod-level-stay-the-containers",
    ),
    pytest.param(
        {
            "containers": [container(cpu="1", memory="1Gi")],
            "initContainers": [container(cpu="3", memory="4Gi")],
            "resources": pod_level({"cpu": "4"}),
        },
        Resource(4000, 4 * GIB),
        id="pod-level-cpu-replaces-an-init-container-peak-memory-keeps-it",
    ),
    pytest.param(
        {
            "containers": [container(cpu="1", memory="1Gi")],
            "initContainers": [sidecar(cpu="500m", memory="1Gi")],
            "resources": pod_level({"cpu": "2"}),
        },
        Resource(2000, 2 * GIB),
        id="pod-level-cpu-replaces-containers-and-sidecars-memory-adds-them",
    ),
    pytest.param(
        {
            "containers": [container(cpu="100m", memory="1Gi")],
            "resources": pod_level({"cpu": "4"}),
            "overhead": {"cpu": "250m", "memory": "128Mi"},
        },
        Resource(4250, GIB + 128 * MIB),
        id="overhead-is-added-on-top-of-pod-level-requests",
    ),
    pytest.param(
        {"containers": [container(cpu="1")], "resources": pod_level({"cpu": "0"})},
        Resource(0),
        id="a-pod-level-request-of-zero-replaces-too",
    ),
    pytest.param(
        {"containers": [container(cpu="1", gpu=1)], "resources": pod_level({"gpu": 4})},
        Resource(1000, 0, {GPU: 1}),
        id="a-resource-pod-level-may-not-name-is-left-out",
    ),
    pytest.param(
        {"containers": [container(cpu="1")], "resources": {}},
        Resource(1000),
        id="empty-pod-level-resources",
    ),
]


@pytest.mark.parametrize(("spec", "expected"), RULE)
def test_the_pods_request_is_its_pod_level_request_where_set(
    spec: dict[str, Any], expected: Resource
) -> None:
    assert request_of(**spec) == expected


@pytest.mark.parametrize(
    ("name", "allowed"),
    [("cpu", True), ("memory", True), (HUGE, True), ("hugepages-1Gi", True), (GPU, False),
     ("ephemeral-storage", False), ("pods", False)],
)  # fmt: skip
def test_pod_level_resources_are_cpu_memory_and_hugepages(name: str, allowed: bool) -> None:
    assert is_pod_level_resource(name) is allowed


def test_a_malformed_pod_level_request_names_its_field_and_value() -> None:
    spec = {"containers": [container(cpu="1")], "resources": pod_level({"cpu": "four"})}
    body = {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}
    with pytest.raises(InvalidObject) as raised:
        TaskInfo.from_pod(wire.from_dict(body, wire.Pod))
    assert raised.value.field == "spec.resources.requests.cpu"
    assert raised.value.value == "four"
    assert raised.value.name == "ns/p"


def test_a_pod_with_pod_level_resources_is_placed_not_refused() -> None:
    spec = {"containers": [container(cpu="100m")], "resources": pod_level({"cpu": "4"})}
    body = {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}
    task = TaskInfo.from_pod(wire.from_dict(body, wire.Pod))
    assert task.refusal == "" and not task.gated and task.unhonoured is None
    assert task.request == Resource(4000)


# SetDefaults_Pod, for specs the API server has not defaulted (templates, whatif manifests)


def defaulted_request(**spec: Any) -> Resource:
    return request_of(**with_defaulted_requests(spec))


def test_a_containers_limits_become_its_requests_where_it_names_none() -> None:
    spec = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "2"}, "requests": {}}}]}
    assert defaulted_request(**spec) == Resource(2000)


def test_pod_level_limits_alone_become_the_pods_requests() -> None:
    spec = {
        "containers": [{"name": "c"}],
        "resources": pod_level(limits={"cpu": "4", "memory": "2Gi"}),
    }
    defaulted = with_defaulted_requests(spec)
    assert defaulted["resources"]["requests"] == {"cpu": "4", "memory": "2Gi"}
    assert request_of(**defaulted) == Resource(4000, 2 * GIB)


def test_a_pod_level_request_defaults_to_the_containers_where_they_name_it_not_the_limit() -> None:
    spec = {
        "containers": [container(cpu="500m"), container(cpu="250m")],
        "resources": pod_level(limits={"cpu": "4", "memory": "2Gi"}),
    }
    defaulted = with_defaulted_requests(spec)
    assert defaulted["resources"]["requests"] == {"cpu": "750m", "memory": "2Gi"}
    assert request_of(**defaulted) == Resource(750, 2 * GIB)


def test_a_container_limit_counts_as_its_request_before_pod_level_defaults() -> None:
    spec = {"containers": [limited(cpu="1")], "resources": pod_level(limits={"cpu": "4"})}
    assert with_defaulted_requests(spec)["resources"]["requests"] == {"cpu": "1"}


def test_pod_level_hugepages_limits_default_to_the_containers_and_requests_to_them() -> None:
    spec = {
        "containers": [limited(cpu="1", huge="4Mi"), limited(cpu="1", huge="2Mi")],
        "resources": pod_level({"cpu": "4"}),
    }
    defaulted = with_defaulted_requests(spec)
    assert defaulted["resources"]["limits"] == {HUGE: "6Mi"}
    assert defaulted["resources"]["requests"] == {"cpu": "4", HUGE: "6Mi"}
    assert request_of(**defaulted) == Resource(4000, 0, {HUGE: 6 * MIB})


def test_pod_level_requests_alone_get_no_defaults() -> None:
    spec = {"containers": [container(cpu="1", memory="1Gi")], "resources": pod_level({"cpu": "4"})}
    assert with_defaulted_requests(spec)["resources"] == {"requests": {"cpu": "4"}}


def test_defaulting_leaves_the_spec_it_is_given_alone() -> None:
    spec = {"containers": [limited(cpu="1")], "resources": pod_level(limits={"cpu": "4"})}
    before = repr(spec)
    with_defaulted_requests(spec)
    assert repr(spec) == before
