"""Sessions over pods with pod-level resources (spec.resources): every rule that reads a pod's
request reads the pod-level figure, as kube-scheduler does (fit, gangs, queues, preemption,
the scale-up templates)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from scheduler.api import wire
from scheduler.api.names import GROUP_NAME_ANNOTATION
from scheduler.api.pod_templates import PodShape, template_spec
from scheduler.api.resources import Resource
from scheduler.api.snapshot import build_snapshot
from scheduler.api.task import TaskInfo
from scheduler.engine import schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.decisions import SessionResult
from tests.unit.actions.eviction_helpers import config as evicting_config

# Containers that ask little; a pod level that asks a whole 4-cpu node.
WHOLE_NODE = {"requests": {"cpu": "4"}}


def pod(
    name: str,
    *,
    group: str = "",
    node: str = "",
    cpu: str = "100m",
    resources: dict[str, Any] | None = None,
    priority: int = 0,
) -> wire.Pod:
    spec: dict[str, Any] = {
        "schedulerName": "muster",
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if resources is not None:
        spec["resources"] = resources
    if node:
        spec["nodeName"] = node
    body = {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "annotations": {GROUP_NAME_ANNOTATION: group} if group else {},
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }
    return wire.decode_pod(msgspec.json.encode(body))


def node(name: str, cpu: str = "4") -> wire.Node:
    return wire.from_dict(
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        wire.Node,
    )


def podgroup(name: str, min_member: int) -> wire.PodGroup:
    return wire.from_dict(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": f"pg-{name}"},
            "spec": {"minMember": min_member, "queue": "default"},
            "status": {"phase": "Inqueue"},
        },
        wire.PodGroup,
    )


def run(
    pods: list[wire.Pod],
    nodes: list[wire.Node],
    groups: Sequence[wire.PodGroup] = (),
    config: SchedulerConfig | None = None,
) -> SessionResult:
    queue = wire.from_dict({"metadata": {"name": "default", "uid": "q"}}, wire.Queue)
    snap = build_snapshot(pods=pods, nodes=nodes, podgroups=list(groups), queues=[queue])
    return schedule(snap, config) if config is not None else schedule(snap)


def test_pods_asking_a_whole_node_at_pod_level_go_alone_to_the_empty_node() -> None:
    # By their containers (100m each) both would fit on either node.
    result = run(
        [pod("used", node="n0", cpu="1"), pod("big-a", resources=WHOLE_NODE),
         pod("big-b", resources=WHOLE_NODE)],
        [node("n0"), node("n1")],
    )  # fmt: skip
    ((placed, on),) = [(b.name, b.node) for b in result.binds]
    assert on == "n1"
    (waiting,) = result.unschedulable
    assert waiting.name == ({"big-a", "big-b"} - {placed}).pop()
    assert "Insufficient cpu" in waiting.message


def test_a_pod_asking_a_whole_node_at_pod_level_waits_where_every_node_is_partly_used() -> None:
    result = run(
        [
            pod("used-0", node="n0", cpu="1"),
            pod("used-1", node="n1", cpu="1"),
            pod("big", resources=WHOLE_NODE),
        ],
        [node("n0"), node("n1")],
    )
    assert result.binds == []
    (waiting,) = result.unschedulable
    assert waiting.name == "big"
    assert "0/2 nodes are available: 2 Insufficient cpu." in waiting.message


def test_a_gang_waits_by_its_pod_level_figure_where_its_containers_would_fit() -> None:
    members = [pod(f"g-{i}", group="g", resources=WHOLE_NODE) for i in range(3)]
    waits = run(members, [node("n0"), node("n1")], [podgroup("g", 3)])
    assert waits.binds == []
    (update,) = waits.podgroups
    condition = next(c for c in update.conditions if c.type == "Unschedulable")
    assert "Insufficient cpu" in condition.message

    fits = run(members, [node("n0"), node("n1"), node("n2")], [podgroup("g", 3)])
    assert sorted(b.node for b in fits.binds) == ["n0", "n1", "n2"]


def test_the_queue_is_charged_the_pod_level_figure() -> None:
    result = run([pod("big", group="g", resources=WHOLE_NODE)], [node("n0")], [podgroup("g", 1)])
    assert [b.name for b in result.binds] == ["big"]
    (queue,) = result.queues
    assert queue.allocated == Resource(4000)


def test_preemption_evicts_for_the_room_a_pod_holds_at_its_pod_level_figure() -> None:
    # By its containers (100m) the victim would leave 3.9 cpu free, room for the 3 cpu pod
    # without an eviction; by its pod-level figure it holds the whole node.
    victim = pod("low", node="n0", resources=WHOLE_NODE, priority=1)
    high = pod("high", cpu="3", priority=100)
    result = run([victim, high], [node("n0")], config=evicting_config())
    assert [e.name for e in result.evictions] == ["low"]
    assert result.binds == []


def test_a_scale_up_template_asks_the_pod_level_figure() -> None:
    task = TaskInfo.from_pod(pod("big", resources={"requests": {"cpu": "4", "memory": "2Gi"}}))
    container = template_spec(PodShape.of(task))["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "4", "memory": "2Gi"}}
