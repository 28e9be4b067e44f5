"""World: the cache kept event by event, and the binder's assumptions in it."""

from __future__ import annotations

from typing import Any

from scheduler.api import wire
from scheduler.api.task import TaskStatus
from scheduler.cache.kinds import (
    nodes,
    poddisruptionbudgets,
    podgroups,
    pods,
    priorityclasses,
    queues,
)
from scheduler.cache.world import World
from scheduler.engine import schedule


def pod(
    name: str,
    *,
    group: str = "",
    node: str = "",
    cpu: str = "1",
    scheduler: str = "muster",
    phase: str = "Pending",
    uid: str = "",
    deleting: bool = False,
    labels: dict[str, str] | None = None,
) -> wire.Pod:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}"}
    if labels:
        meta["labels"] = labels
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node:
        spec["nodeName"] = node
    return wire.from_dict({"metadata": meta, "spec": spec, "status": {"phase": phase}}, wire.Pod)


def node(name: str, cpu: str = "4") -> wire.Node:
    return wire.from_dict(
        {
            "metadata": {"name": name},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        wire.Node,
    )


def ready_world() -> World:
    """A world with the default queue, as the scheduler creates it at start."""
    world = World()
    queues.upsert(world, wire.from_dict({"metadata": {"name": "default"}}, wire.Queue))
    return world


def podgroup(name: str, min_member: int, **spec: Any) -> wire.PodGroup:
    return wire.from_dict(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": f"pg-{name}"},
            "spec": {"minMember": min_member, **spec},
        },
        wire.PodGroup,
    )


def test_pods_of_other_schedulers_count_on_their_node_only() -> None:
    world = World()
    nodes.upsert(world, node("n1"))
    pods.upsert(world, pod("theirs", scheduler="default-scheduler", node="n1", phase="Running"))
    pods.upsert(world, pod("unplaced", scheduler="default-scheduler"))
    snap = world.snapshot()
    assert snap.nodes["n1"].used.cpu == 1000
    assert snap.jobs == {}
    assert world.counts()["pod"] == 1


def test_pod_arriving_before_its_podgroup_waits_then_joins() -> None:
    world = World()
    pods.upsert(world, pod("a", group="g"))
    assert list(world.snapshot().orphans) == ["uid-a"]
    podgroups.upsert(world, podgroup("g", 1))
    snap = world.snapshot()
    assert snap.orphans == {}
    assert list(snap.jobs["ns/g"].tasks) == ["uid-a"]


def test_deleted_podgroup_turns_its_pods_into_orphans() -> None:
    world = World()
    podgroups.upsert(world, podgroup("g", 1))
    pods.upsert(world, pod("a", group="g"))
    podgroups.delete(world, "ns/g")
    assert list(world.snapshot().orphans) == ["uid-a"]


def test_podgroup_update_keeps_its_members() -> None:
    world = World()
    podgroups.upsert(world, podgroup("g", 2))
    pods.upsert(world, pod("a", group="g"))
    pods.upsert(world, pod("b", group="g"))
    podgroups.upsert(world, podgroup("g", 3))
    job = world.snapshot().jobs["ns/g"]
    assert job.min_member == 3 and len(job.tasks) == 2


def test_pod_on_a_node_not_seen_yet_is_counted_when_the_node_arrives() -> None:
    world = World()
    pods.upsert(world, pod("early", node="n1", phase="Running", scheduler="other"))
    nodes.upsert(world, node("n1"))
    assert world.snapshot().nodes["n1"].used.cpu == 1000


def test_node_update_keeps_the_pods_on_it() -> None:
    world = World()
    nodes.upsert(world, node("n1"))
    pods.upsert(world, pod("a", node="n1", phase="Running"))
    nodes.upsert(world, node("n1", cpu="8"))
    snap = world.snapshot()
    assert snap.nodes["n1"].idle.cpu == 7000


def test_deleted_pod_frees_its_node_and_shadow_job() -> None:
    world = World()
    nodes.upsert(world, node("n1"))
    pods.upsert(world, pod("a", node="n1", phase="Running"))
    pods.delete(world, "uid-a")
    snap = world.snapshot()
    assert snap.nodes["n1"].used.cpu == 0 and snap.jobs == {}


def binding_world() -> World:
    """Pod a of gang g placed on n1 and its bind sent (uid-a Binding)."""
    world = ready_world()
    nodes.upsert(world, node("n1", cpu="1"))
    podgroups.upsert(world, podgroup("g", 1))
    pods.upsert(world, pod("a", group="g"))
    (bind,) = schedule(world.snapshot(), copy=False).binds
    world.assume_bound(bind.uid, bind.node)
    return world


def test_assumed_bind_holds_the_room_until_the_watch_confirms() -> None:
    world = binding_world()
    # A stale watch event (still pending, no node) must not undo the assumption.
    pods.upsert(world, pod("a", group="g"))
    assert schedule(world.snapshot()).binds == []
    assert world.snapshot().nodes["n1"].idle.cpu == 0
    pods.upsert(world, pod("a", group="g", node="n1"))
    assert world.snapshot().jobs["ns/g"].tasks["uid-a"].status is TaskStatus.BOUND


def test_a_bind_answered_and_its_watch_event_ask_for_no_session() -> None:
    for answer_first in (True, False):
        world = binding_world()
        before = (world.generation, world.status_generation)
        if answer_first:
            world.confirm_bound("uid-a")
        pods.upsert(world, pod("a", group="g", node="n1"))
        world.confirm_bound("uid-a")
        # Neither changes what a PodGroup or Queue status counts (Binding and Bound are
        # both placed, not started), so neither asks for a session.
        assert (world.generation, world.status_generation) == before
        assert world.snapshot().jobs["ns/g"].tasks["uid-a"].status is TaskStatus.BOUND


def test_a_bound_pod_that_starts_or_changes_its_labels_asks_for_a_status_session() -> None:
    for changed in (
        pod("a", group="g", node="n1", phase="Running"),
        pod("a", group="g", node="n1", labels={"app": "web"}),
    ):
        world = binding_world()
        world.confirm_bound("uid-a")
        pods.upsert(world, pod("a", group="g", node="n1"))
        before = world.status_generation
        pods.upsert(world, changed)
        assert world.status_generation == before + 1


def test_failed_bind_returns_the_pod_to_pending() -> None:
    world = ready_world()
    nodes.upsert(world, node("n1", cpu="1"))
    pods.upsert(world, pod("a"))
    world.assume_bound("uid-a", "n1")
    world.forget_bound("uid-a")
    snap = world.snapshot()
    assert snap.nodes["n1"].idle.cpu == 1000
    assert len(schedule(snap).binds) == 1


def test_invalid_objects_are_reported_and_dropped_until_fixed() -> None:
    world = World()
    bad = wire.from_dict(
        {"metadata": {"name": "bad"}, "status": {"allocatable": {"cpu": "lots"}}}, wire.Node
    )
    nodes.upsert(world, bad)
    (error,) = world.snapshot().invalid
    assert "status.allocatable.cpu='lots'" in str(error)
    nodes.upsert(world, node("bad"))
    assert world.snapshot().invalid == []
    assert "bad" in world.snapshot().nodes


def test_priority_class_arriving_late_updates_job_priority() -> None:
    world = World()
    podgroups.upsert(world, podgroup("g", 1, priorityClassName="high"))
    assert world.snapshot().jobs["ns/g"].priority == 0
    priorityclasses.upsert(
        world, wire.from_dict({"metadata": {"name": "high"}, "value": 1000}, wire.PriorityClass)
    )
    assert world.snapshot().jobs["ns/g"].priority == 1000


def test_snapshot_is_a_copy_sessions_may_change() -> None:
    world = World()
    nodes.upsert(world, node("n1"))
    pods.upsert(world, pod("a"))
    schedule(world.snapshot(), copy=False)
    assert world.snapshot().nodes["n1"].used.cpu == 0


def budget_object(
    name: str, allowed: int, generation: int = 1, observed: int = 1
) -> wire.PodDisruptionBudget:
    return wire.from_dict(
        {
            "metadata": {"name": name, "namespace": "ns", "generation": generation},
            "spec": {"selector": {"matchLabels": {"app": name}}},
            "status": {"disruptionsAllowed": allowed, "observedGeneration": observed},
        },
        wire.PodDisruptionBudget,
    )


def test_budgets_reach_sessions_by_namespace_and_a_change_asks_for_one() -> None:
    world = ready_world()
    poddisruptionbudgets.upsert(world, budget_object("web", 1))
    generation = world.generation
    (seen,) = world.snapshot().budgets["ns"]
    assert (seen.key, seen.allowed, seen.processed) == ("ns/web", 1, True)
    assert seen.covers("ns", {"app": "web"}) and not seen.covers("other", {"app": "web"})
    poddisruptionbudgets.upsert(world, budget_object("web", 1))
    assert world.generation == generation  # the same figures: nothing to decide again
    poddisruptionbudgets.upsert(world, budget_object("web", 0, generation=2, observed=1))
    (changed,) = world.snapshot().budgets["ns"]
    assert world.generation > generation
    assert (changed.allowed, changed.processed) == (0, False)
    poddisruptionbudgets.delete(world, "ns/web")
    assert world.snapshot().budgets == {}


def test_an_eviction_refusal_reaches_the_next_sessions_until_evictions_go() -> None:
    world = ready_world()
    world.eviction_refused("ns/urgent", "a budget said no", 100.0)
    snapshot = world.snapshot()
    assert snapshot.eviction_refusals == {"ns/urgent": "a budget said no"}
    # It backs off as a gang that failed to place.
    assert (snapshot.failures["ns/urgent"].count, snapshot.failures["ns/urgent"].last) == (1, 100.0)
    world.evictions_sent("ns/urgent")
    assert world.snapshot().eviction_refusals == {}


def test_a_podgroup_annotation_change_asks_for_a_session() -> None:
    world = ready_world()
    podgroups.upsert(world, podgroup("pg", 2))
    generation = world.generation
    annotated = podgroup("pg", 2)
    annotated.metadata.annotations["volcano.sh/sla-waiting-time"] = "5s"
    podgroups.upsert(world, annotated)
    assert world.generation > generation
    assert world.snapshot().jobs["ns/pg"].settings.waiting_time == 5.0


def test_a_gang_awaits_its_binds_until_each_is_answered_and_is_whole_once_all_landed() -> None:
    # What the effects ask before they write a gang's first Running (effects/apply.py).
    world = ready_world()
    nodes.upsert(world, node("n1"))
    podgroups.upsert(world, podgroup("g", 2))
    for name in ("g-0", "g-1"):
        pods.upsert(world, pod(name, group="g"))
    world.assume_bound("uid-g-0", "n1")
    world.assume_bound("uid-g-1", "n1")
    assert world.awaits_binds("ns/g") and not world.bound_whole("ns/g")
    world.confirm_bound("uid-g-0")
    assert world.awaits_binds("ns/g")
    world.forget_bound("uid-g-1")  # refused for good: pending again
    assert not world.awaits_binds("ns/g") and not world.bound_whole("ns/g")
    world.assume_bound("uid-g-1", "n1")
    world.confirm_bound("uid-g-1")
    assert not world.awaits_binds("ns/g") and world.bound_whole("ns/g")


def test_a_gang_written_running_awaits_no_bind() -> None:
    # A running gang's replacement member binds alone: its Running is not held for it.
    world = ready_world()
    nodes.upsert(world, node("n1"))
    group = podgroup("g", 1)
    group.status.phase = "Running"
    podgroups.upsert(world, group)
    pods.upsert(world, pod("g-0", group="g"))
    world.assume_bound("uid-g-0", "n1")
    assert not world.awaits_binds("ns/g")
