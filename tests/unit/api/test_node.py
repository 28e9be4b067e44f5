"""Node records: what a node offers, what its pods use, and what is coming free."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.node import DEFAULT_MAX_PODS, NodeInfo, Taint
from scheduler.api.placement import HostPort
from scheduler.api.resources import Resource
from scheduler.api.task import TaskStatus
from tests.unit.builders import node, task

GIB = 2**30


def node_document(
    *,
    allocatable: dict[str, Any] | None = None,
    capacity: dict[str, Any] | None = None,
    conditions: list[dict[str, str]] | None = None,
    **spec: Any,
) -> wire.Node:
    status: dict[str, Any] = {
        "conditions": [{"type": "Ready", "status": "True"}] if conditions is None else conditions
    }
    if allocatable is not None:
        status["allocatable"] = allocatable
    if capacity is not None:
        status["capacity"] = capacity
    document = {
        "metadata": {"name": "n1", "labels": {"zone": "a"}},
        "spec": spec,
        "status": status,
    }
    return wire.from_dict(document, wire.Node)


def running(name: str, cpu: float, memory: str | int = 0, **options: Any) -> Any:
    options.setdefault("status", TaskStatus.RUNNING)
    return task(name, cpu, memory, node_name="n1", **options)


# from_node


def test_node_offers_its_allocatable_resources_and_pod_slots() -> None:
    info = NodeInfo.from_node(
        node_document(allocatable={"cpu": "3900m", "memory": "15Gi", "pods": "58"})
    )
    assert info.allocatable == Resource(3900, 15 * GIB)
    assert info.idle == info.allocatable
    assert info.max_pods == 58
    assert info.labels == {"zone": "a"}
    assert info.ready
    assert not info.unschedulable


def test_node_without_allocatable_offers_its_capacity() -> None:
    info = NodeInfo.from_node(node_document(capacity={"cpu": "4", "memory": "16Gi"}))
    assert info.allocatable == Resource(4000, 16 * GIB)


def test_node_without_a_pods_figure_takes_the_kubelet_default() -> None:
    info = NodeInfo.from_node(node_document(allocatable={"cpu": "4"}))
    assert info.max_pods == DEFAULT_MAX_PODS == 110


def test_node_reads_taints_and_cordon() -> None:
    info = NodeInfo.from_node(
        node_document(
            allocatable={"cpu": "4"},
            unschedulable=True,
            taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
        )
    )
    assert info.unschedulable
    assert info.taints == (Taint("dedicated", "gpu", "NoSchedule"),)
    assert str(info.taints[0]) == "{dedicated: gpu}"


@pytest.mark.parametrize(
    "conditions",
    [
        [{"type": "Ready", "status": "False"}],
        [{"type": "Ready", "status": "Unknown"}],
        [{"type": "MemoryPressure", "status": "True"}],
        [],
    ],
    ids=["ready-false", "ready-unknown", "no-ready-condition", "no-conditions"],
)
def test_node_is_not_ready_unless_its_ready_condition_is_true(
    conditions: list[dict[str, str]],
) -> None:
    assert not NodeInfo.from_node(
        node_document(allocatable={"cpu": "4"}, conditions=conditions)
    ).ready


def test_malformed_allocatable_names_node_field_and_value() -> None:
    with pytest.raises(InvalidObject) as raised:
        NodeInfo.from_node(node_document(allocatable={"cpu": "four"}))
    assert (raised.value.kind, raised.value.name, raised.value.field) == (
        "Node",
        "n1",
        "status.allocatable.cpu",
    )
    assert raised.value.value == "four"


# accounting


def test_running_task_uses_resources_and_a_pod_slot() -> None:
    info = node("n1", cpu=4, memory="16Gi")
    info.add_task(running("a", 1, "4Gi"))
    assert info.used == Resource(1000, 4 * GIB)
    assert info.idle == Resource(3000, 12 * GIB)
    assert info.pod_count == 1
    assert info.releasing.is_empty()


def test_releasing_task_still_uses_resources_and_counts_as_releasing() -> None:
    info = node("n1", cpu=4)
    info.add_task(running("a", 1, status=TaskStatus.RELEASING))
    assert info.used.cpu == 1000
    assert info.idle.cpu == 3000
    assert info.releasing.cpu == 1000
    assert info.pod_count == 1


def test_pipelined_task_takes_from_future_idle_only() -> None:
    info = node("n1", cpu=4)
    info.add_task(running("leaving", 2, status=TaskStatus.RELEASING))
    info.add_task(running("next", 1, status=TaskStatus.PIPELINED))
    assert info.idle.cpu == 2000
    assert info.pipelined.cpu == 1000
    assert info.pod_count == 1
    # idle 2 + releasing 2 - pipelined 1
    assert info.future_idle().cpu == 3000


def test_future_idle_is_a_new_vector() -> None:
    info = node("n1", cpu=4)
    info.future_idle().add(Resource(1000))
    assert info.idle.cpu == 4000


@pytest.mark.parametrize(
    "status", [TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.PIPELINED, TaskStatus.BOUND]
)
def test_removing_a_task_undoes_adding_it(status: TaskStatus) -> None:
    info = node("n1", cpu=4, memory="8Gi")
    info.add_task(running("stays", 1, "1Gi"))
    before = (info.used.clone(), info.idle.clone(), info.releasing.clone(), info.pipelined.clone())
    member = running("goes", 2, "2Gi", status=status)
    info.add_task(member)
    info.remove_task(member)
    assert (info.used, info.idle, info.releasing, info.pipelined) == before
    assert info.pod_count == 1
    assert member.uid not in info.tasks
    assert len(info.tasks) == 1


GPUS = "deviceclass/gpu"


@pytest.mark.parametrize(
    "status", [TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.PIPELINED, TaskStatus.BOUND]
)
def test_a_node_room_leaves_out_the_devices_claims_count_for_queues(status: TaskStatus) -> None:
    # No node has deviceclass/<class>: its room never carries the count, its used does
    # (the cluster's headroom reads it), and removing the pod undoes both exactly.
    info = node("n1", cpu=4, memory="8Gi")
    before = (info.used.clone(), info.idle.clone(), info.releasing.clone(), info.pipelined.clone())
    member = running("gpu", 1, "1Gi", status=status)
    member.set_request(Resource(2000, 2 * GIB, {GPUS: 2}))
    assert member.node_request == Resource(2000, 2 * GIB)
    assert member.clone().node_request is member.node_request
    info.add_task(member)
    for room in (info.idle, info.releasing, info.pipelined):
        assert GPUS not in room.scalars
    assert info.used.get(GPUS) == (0 if status is TaskStatus.PIPELINED else 2)
    assert info.idle.cpu == (4000 if status is TaskStatus.PIPELINED else 2000)
    info.remove_task(member)
    assert (info.used, info.idle, info.releasing, info.pipelined) == before


def test_removing_an_unknown_task_changes_nothing() -> None:
    info = node("n1", cpu=4)
    version = info.version
    info.remove_task(running("stranger", 1))
    assert info.idle.cpu == 4000
    assert info.version == version


def test_host_ports_are_claimed_and_released_with_their_task() -> None:
    info = node("n1", cpu=4)
    spec = {"containers": [{"ports": [{"containerPort": 80, "hostPort": 8080}]}]}
    member = running("web", 1, spec=spec)
    info.add_task(member)
    assert info.used_ports == (HostPort("", "TCP", 8080),)
    info.remove_task(member)
    assert info.used_ports == ()


def test_every_change_bumps_the_version() -> None:
    info = node("n1", cpu=4)
    member = running("a", 1)
    info.add_task(member)
    after_add = info.version
    info.remove_task(member)
    assert 0 < after_add < info.version


def test_clone_accounting_is_independent() -> None:
    original = node("n1", cpu=4)
    original.add_task(running("a", 1, status=TaskStatus.RELEASING))
    copy = original.clone()
    copy.add_task(running("b", 2))
    copy.add_task(running("c", 1, status=TaskStatus.PIPELINED))
    assert original.idle.cpu == 3000
    assert original.used.cpu == 1000
    assert original.pipelined.is_empty()
    assert original.pod_count == 1
    assert len(original.tasks) == 1
    assert copy.idle.cpu == 1000
    assert copy.pod_count == 2


def test_clone_ports_are_independent() -> None:
    original = node("n1", cpu=4)
    spec = {"containers": [{"ports": [{"containerPort": 80, "hostPort": 8080}]}]}
    copy = original.clone()
    copy.add_task(running("web", 1, spec=spec))
    assert original.used_ports == ()


# status.images (ImageLocality)


def images_document(name: str, images: list[dict[str, Any]]) -> wire.Node:
    document = {
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "4"}, "images": images},
    }
    return wire.from_dict(document, wire.Node)


def test_node_keeps_each_name_of_its_images_with_the_images_size() -> None:
    info = NodeInfo.from_node(
        images_document(
            "n1",
            [
                {
                    "names": ["example.com/app@sha256:" + "0" * 64, "example.com/app:v1"],
                    "sizeBytes": 300,
                },
                {"names": ["busybox:1.36"], "sizeBytes": 5},
            ],
        )
    )
    assert info.images is not None
    assert info.images.names == (
        "example.com/app@sha256:" + "0" * 64,
        "example.com/app:v1",
        "busybox:1.36",
    )
    assert [info.images.size_of(name) for name in info.images.names] == [300, 300, 5]


def test_a_name_listed_twice_keeps_its_first_size() -> None:
    listed = [{"names": ["a:v1", "a:v1"], "sizeBytes": 10}, {"names": ["a:v1"], "sizeBytes": 99}]
    info = NodeInfo.from_node(images_document("n1", listed))
    assert info.images is not None
    assert info.images.names == ("a:v1",)
    assert info.images.size_of("a:v1") == 10


def test_node_reporting_no_images_holds_none() -> None:
    assert NodeInfo.from_node(images_document("n1", [])).images is None
    assert NodeInfo.from_node(images_document("n1", [{"names": [], "sizeBytes": 7}])).images is None


def test_nodes_holding_one_image_share_its_name_string() -> None:
    # Each node's JSON decodes to its own strings; interning keeps one per name.
    first = NodeInfo.from_node(images_document("n1", [{"names": ["x/app:v1"], "sizeBytes": 1}]))
    second = NodeInfo.from_node(images_document("n2", [{"names": ["x/app:v1"], "sizeBytes": 1}]))
    assert first.images is not None and second.images is not None
    assert first.images.names[0] is second.images.names[0]


def test_clone_shares_the_images() -> None:
    info = NodeInfo.from_node(images_document("n1", [{"names": ["a:v1"], "sizeBytes": 1}]))
    assert info.clone().images is info.images
