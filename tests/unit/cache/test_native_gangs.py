"""Kubernetes' own PodGroups as muster's gangs: through the cache (keys, ownership, the queue
chain, the pod's two group fields) into a session (all or nothing, the scheduled condition as
kube-scheduler writes it, the fields honoured and refused)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import wire
from scheduler.api.native import PODGROUPS, V1ALPHA2, V1BETA1
from scheduler.cache.kinds import (
    namespaces,
    native_podgroups,
    nodes,
    podgroups,
    pods,
    priorityclasses,
    queues,
    workloads,
)
from scheduler.cache.world import World
from scheduler.engine import load_config, schedule
from scheduler.framework.config import DEFAULT_CONFIG_YAML
from scheduler.framework.decisions import NativeStatusUpdate, SessionResult
from tests.unit.cache.test_world import node, pod, podgroup
from tests.unit.native_objects import member, native_podgroup, workload

KEY = "scheduling.k8s.io/ns/g"
PREEMPTING = load_config(
    DEFAULT_CONFIG_YAML.replace(
        'actions: "enqueue, allocate, backfill"', 'actions: "enqueue, allocate, preempt, backfill"'
    )
)


def cluster(*cpus: str, version: str = V1ALPHA2, queues_named: tuple[str, ...] = ()) -> World:
    world = World()
    world.served_versions[PODGROUPS] = version
    for name in ("default", *queues_named):
        queues.upsert(world, wire.from_dict({"metadata": {"name": name}}, wire.Queue))
    for index, cpu in enumerate(cpus):
        nodes.upsert(world, node(f"n{index}", cpu=cpu))
    return world


def native_gang(
    world: World, name: str, size: int, min_count: int | None = None, **options: Any
) -> None:
    native_podgroups.upsert(
        world, native_podgroup(name, size if min_count is None else min_count, **options)
    )
    for index in range(size):
        pods.upsert(world, member(f"{name}-{index}", group=name))


def scheduled(update: NativeStatusUpdate, version: str = V1ALPHA2) -> wire.Condition | Any:
    kind = "PodGroupScheduled" if version == V1ALPHA2 else "PodGroupInitiallyScheduled"
    return next(c for c in update.conditions if c.type == kind)


def native_updates(result: SessionResult) -> dict[str, NativeStatusUpdate]:
    return {u.key: u for u in result.podgroups if isinstance(u, NativeStatusUpdate)}


@pytest.mark.parametrize("version", [V1ALPHA2, V1BETA1])
def test_a_native_gang_with_room_for_three_of_four_binds_none_and_says_why(version: str) -> None:
    world = cluster("2", "1", version=version)
    native_gang(world, "g", 4, version=version)

    result = schedule(world.snapshot())

    assert result.binds == []
    update = native_updates(result)[KEY]
    condition = scheduled(update, version)
    assert (condition.status, condition.reason) == ("False", "Unschedulable")
    assert condition.message.startswith("4/4 tasks in gang unschedulable: 0/2 nodes are available")
    assert update.version == version
    assert {m.name for m in result.unschedulable} == {f"g-{i}" for i in range(4)}


@pytest.mark.parametrize("version", [V1ALPHA2, V1BETA1])
def test_a_native_gang_with_room_for_all_binds_all_and_is_scheduled(version: str) -> None:
    world = cluster("2", "2", version=version)
    native_gang(world, "g", 4, version=version)

    result = schedule(world.snapshot())

    assert sorted(b.name for b in result.binds) == [f"g-{i}" for i in range(4)]
    assert {b.job for b in result.binds} == {KEY}
    condition = scheduled(native_updates(result)[KEY], version)
    assert (condition.status, condition.reason) == ("True", "Scheduled")


def test_once_scheduled_a_native_podgroup_is_never_set_back_to_unschedulable() -> None:
    scheduled_true = {
        "type": "PodGroupScheduled",
        "status": "True",
        "reason": "Scheduled",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    world = cluster("1")
    native_podgroups.upsert(world, native_podgroup("g", 2, conditions=[scheduled_true]))
    for index in range(3):
        pods.upsert(world, member(f"g-{index}", group="g"))

    result = schedule(world.snapshot())

    assert result.binds == []
    update = native_updates(result).get(KEY)
    conditions = update.conditions if update is not None else ()
    assert all(c.status == "True" for c in conditions if c.type == "PodGroupScheduled")


def test_pods_of_a_native_podgroup_that_does_not_exist_wait_saying_so() -> None:
    world = cluster("4")
    pods.upsert(world, member("g-0", group="g"))

    result = schedule(world.snapshot())

    assert result.binds == []
    (message,) = result.unschedulable
    assert message.message == "waiting for podgroups.scheduling.k8s.io ns/g, which does not exist"


def test_a_native_and_a_volcano_podgroup_of_one_name_are_two_gangs() -> None:
    world = cluster("4")
    native_gang(world, "g", 2)
    podgroups.upsert(world, podgroup("g", 2))
    for index in range(2):
        pods.upsert(world, wire_pod_of_volcano(f"v-{index}", "g"))

    result = schedule(world.snapshot())

    assert {b.job for b in result.binds} == {KEY, "ns/g"}
    assert len(result.binds) == 4


def wire_pod_of_volcano(name: str, group: str) -> wire.Pod:
    return member(name, volcano_group=group)


def test_a_pod_naming_both_groups_joins_the_volcano_one_with_a_warning_naming_both() -> None:
    world = cluster("4")
    native_podgroups.upsert(world, native_podgroup("native", 1))
    podgroups.upsert(world, podgroup("volcano", 1))
    pods.upsert(world, member("both", group="native", volcano_group="volcano"))

    result = schedule(world.snapshot())

    assert [(b.name, b.job) for b in result.binds] == [("both", "ns/volcano")]
    (warning,) = [r for r in result.invalid if r.reason == "SchedulingGroupIgnored"]
    assert (warning.kind, warning.name) == ("Pod", "ns/both")
    assert "PodGroup volcano" in warning.message and "native" in warning.message
    assert "the annotation wins" in warning.message


def test_a_native_podgroup_with_no_pods_is_never_claimed_by_default() -> None:
    world = cluster("4")
    native_podgroups.upsert(world, native_podgroup("empty", 2))
    assert not world.owns("scheduling.k8s.io/ns/empty")
    native_podgroups.upsert(
        world,
        native_podgroup("marked", 2, annotations={"muster.dev/scheduler-name": "muster"}),
    )
    assert world.owns("scheduling.k8s.io/ns/marked")


def test_a_native_podgroup_of_kube_schedulers_pods_gets_nothing_from_muster() -> None:
    world = cluster("4")
    native_podgroups.upsert(world, native_podgroup("g", 2))
    for index in range(2):
        pods.upsert(world, member(f"g-{index}", group="g", scheduler="default-scheduler"))

    result = schedule(world.snapshot())

    assert not world.owns(KEY)
    assert result.binds == [] and native_updates(result) == {}


def test_v1beta1s_min_count_is_read_again_when_it_changes() -> None:
    world = cluster("3", version=V1BETA1)
    native_gang(world, "g", 4, version=V1BETA1)
    assert schedule(world.snapshot()).binds == []

    native_podgroups.upsert(world, native_podgroup("g", 3, version=V1BETA1))
    result = schedule(world.snapshot())

    assert len(result.binds) == 3


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        pytest.param("podgroup", "team-a", id="podgroup-annotation"),
        pytest.param("workload", "team-b", id="workload"),
        pytest.param("pods", "team-c", id="pods"),
        pytest.param("namespace", "team-d", id="namespace"),
        pytest.param("none", "default", id="default"),
    ],
)
def test_a_native_gangs_queue_comes_from_its_chain(setup: str, expected: str) -> None:
    world = cluster("4", queues_named=("team-a", "team-b", "team-c", "team-d"))
    namespaces.upsert(
        world,
        wire.from_dict(
            {
                "metadata": {
                    "name": "ns",
                    "annotations": {"scheduling.volcano.sh/queue-name": "team-d"}
                    if setup != "none"
                    else {},
                }
            },
            wire.Namespace,
        ),
    )
    if setup in ("podgroup", "workload", "pods", "namespace"):
        workloads.upsert(
            world, workload("w", queue="team-b" if setup in ("podgroup", "workload") else "")
        )
    annotations = {"scheduling.volcano.sh/queue-name": "team-a"} if setup == "podgroup" else None
    native_podgroups.upsert(world, native_podgroup("g", 1, workload="w", annotations=annotations))
    pods.upsert(
        world,
        member(
            "g-0", group="g", queue="team-c" if setup in ("podgroup", "workload", "pods") else ""
        ),
    )

    assert world.live.jobs[KEY].queue == expected


def test_a_workload_labelled_later_moves_its_native_gang_to_that_queue() -> None:
    world = cluster("4", queues_named=("team-b",))
    native_podgroups.upsert(world, native_podgroup("g", 1, workload="w"))
    pods.upsert(world, member("g-0", group="g"))
    assert world.live.jobs[KEY].queue == "default"

    workloads.upsert(world, workload("w", queue="team-b"))

    assert world.live.jobs[KEY].queue == "team-b"
    assert list(world.live.jobs[KEY].tasks) == ["uid-g-0"]


def test_a_native_podgroups_priority_is_its_spec_priority_else_its_class() -> None:
    world = cluster("4")
    priorityclasses.upsert(
        world,
        wire.from_dict({"metadata": {"name": "high"}, "value": 1000}, wire.PriorityClass),
    )
    native_gang(world, "set", 1, priority=7, priority_class="high")
    native_gang(world, "resolved", 1, priority_class="high")

    jobs = world.live.jobs
    assert jobs["scheduling.k8s.io/ns/set"].priority == 7
    assert jobs["scheduling.k8s.io/ns/resolved"].priority == 1000


@pytest.mark.parametrize("version", [V1ALPHA2, V1BETA1])
def test_a_victim_native_gang_under_disruption_mode_podgroup_is_evicted_whole(
    version: str,
) -> None:
    world = cluster("2", "2", version=version)
    native_podgroups.upsert(world, native_podgroup("low", 2, version=version, whole=True))
    for index in range(4):
        pods.upsert(
            world, member(f"low-{index}", group="low", node=f"n{index % 2}", phase="Running")
        )
    native_podgroups.upsert(world, native_podgroup("high", 1, version=version, priority=100))
    pods.upsert(world, member("high-0", group="high", priority=100))

    result = schedule(world.snapshot(), PREEMPTING)

    assert sorted(e.name for e in result.evictions) == [f"low-{i}" for i in range(4)]
    update = native_updates(result)["scheduling.k8s.io/ns/low"]
    target = next(c for c in update.conditions if c.type == "DisruptionTarget")
    assert (target.status, target.reason) == ("True", "PreemptionByScheduler")
    assert "scheduling.k8s.io ns/high" in target.message


def test_a_victim_native_gang_disrupted_pod_by_pod_gives_only_its_spares() -> None:
    world = cluster("2", "2")
    native_podgroups.upsert(world, native_podgroup("low", 2))
    for index in range(4):
        pods.upsert(
            world, member(f"low-{index}", group="low", node=f"n{index % 2}", phase="Running")
        )
    native_podgroups.upsert(world, native_podgroup("high", 1, priority=100))
    pods.upsert(world, member("high-0", group="high", priority=100))

    result = schedule(world.snapshot(), PREEMPTING)

    assert len(result.evictions) == 1


def test_a_native_gang_whose_preemption_policy_is_never_does_not_preempt() -> None:
    world = cluster("2", version=V1BETA1)
    native_podgroups.upsert(world, native_podgroup("low", 1, version=V1BETA1))
    for index in range(2):
        pods.upsert(world, member(f"low-{index}", group="low", node="n0", phase="Running"))
    native_podgroups.upsert(
        world,
        native_podgroup("high", 1, version=V1BETA1, priority=100, preemption_policy="Never"),
    )
    pods.upsert(world, member("high-0", group="high", priority=100))

    result = schedule(world.snapshot(), PREEMPTING)

    assert result.evictions == []


def test_a_native_gangs_topology_key_keeps_it_in_one_domain_without_the_plugin() -> None:
    world = World()
    world.served_versions[PODGROUPS] = V1ALPHA2
    queues.upsert(world, wire.from_dict({"metadata": {"name": "default"}}, wire.Queue))
    for name, zone in (("a1", "a"), ("b1", "b"), ("b2", "b")):
        body = node(name, cpu="2")
        body.metadata.labels = {"topology.kubernetes.io/zone": zone}
        nodes.upsert(world, body)
    native_gang(world, "split", 5, topology_key="topology.kubernetes.io/zone")
    native_gang(world, "whole", 3, topology_key="topology.kubernetes.io/zone")

    result = schedule(world.snapshot())

    # Five pods fit the cluster's six cpu but no zone: none goes. Three fit zone b alone.
    assert {b.node for b in result.binds} == {"b1", "b2"}
    assert {b.job for b in result.binds} == {"scheduling.k8s.io/ns/whole"}
    condition = scheduled(native_updates(result)["scheduling.k8s.io/ns/split"])
    assert condition.reason == "Unschedulable"
    assert "topology.kubernetes.io/zone" in condition.message


def test_a_refused_podgroup_field_is_named_in_its_condition_and_an_event() -> None:
    world = cluster("4")
    native_gang(world, "g", 1, claims=[{"name": "gpus", "resourceClaimTemplateName": "t"}])

    result = schedule(world.snapshot())

    assert result.binds == []
    condition = scheduled(native_updates(result)[KEY])
    assert (condition.status, condition.reason) == ("False", "Unschedulable")
    assert "spec.resourceClaims" in condition.message
    (event,) = [r for r in result.invalid if r.reason == "FieldNotHonoured"]
    assert event.kind == "PodGroup.scheduling.k8s.io" and "spec.resourceClaims" in event.message


def test_muster_deletes_its_own_conditions_it_no_longer_wants_and_leaves_others() -> None:
    starving = {
        "type": "Starving",
        "status": "True",
        "reason": "HoldingResources",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    theirs = {
        "type": "example.com/Checked",
        "status": "True",
        "reason": "Fine",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    world = cluster("4")
    native_podgroups.upsert(world, native_podgroup("g", 1, conditions=[starving, theirs]))
    pods.upsert(world, member("g-0", group="g"))

    update = native_updates(schedule(world.snapshot()))[KEY]

    assert update.removed == ("Starving",)
    assert {c.type for c in update.conditions} == {"PodGroupScheduled", "Admitted"}


def test_a_native_gang_and_a_volcano_gang_of_one_name_ask_for_nodes_under_two_names() -> None:
    world = cluster("1")
    native_podgroups.upsert(world, native_podgroup("big", 2))
    podgroups.upsert(world, podgroup("big", 2))
    for index in range(2):
        pods.upsert(world, member(f"big-{index}", group="big", cpu="4"))
        pods.upsert(world, pod(f"vbig-{index}", group="big", cpu="4"))
    config = load_config(
        DEFAULT_CONFIG_YAML.replace("- name: gang", "- name: gang\n  - name: scaleup", 1)
    )
    result = schedule(world.snapshot(), config)
    asked = {(r.name, r.podgroup, r.podgroup_api_version) for r in result.provisioning_requests}
    assert asked == {
        ("big-scaleup-1", "big", ""),
        ("big-scaleup-1-native", "big", "scheduling.k8s.io/v1alpha2"),
    }
    named = {(a.name, a.request) for a in result.pod_annotations}
    assert named == {("big-0", "big-scaleup-1-native"), ("big-1", "big-scaleup-1-native")} | {
        (f"vbig-{i}", "big-scaleup-1") for i in range(2)
    }
