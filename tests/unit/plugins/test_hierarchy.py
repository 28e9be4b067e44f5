"""proportion over a queue tree: weights within a parent, capability at every level, leaves only."""

from __future__ import annotations

from scheduler.api.job import JobInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.engine import default_config, schedule
from scheduler.framework.cycle import open_cycle
from scheduler.plugins import PLUGINS
from tests.unit.builders import binds_per_queue as placed
from tests.unit.builders import gang, node, queue, resources, snapshot


def saturating(leaves: list[str], per_leaf: int = 40) -> tuple[list[JobInfo], dict[str, str]]:
    jobs = []
    owner = {}
    for name in leaves:
        for index in range(per_leaf):
            job = gang(f"{name}-{index}", 1, queue=name, created=f"2026-01-01T00:00:{index:02d}Z")
            jobs.append(job)
            owner[job.key] = name
    return jobs, owner


def test_three_level_tree_splits_the_cluster_by_weights_within_each_parent() -> None:
    # root -> eng (3), ops (1); eng -> ml (1), web (1). 40 cpu: eng 30 (ml 15, web 15), ops 10
    queues = [
        queue("eng", 3),
        queue("ops", 1),
        queue("ml", 1, parent="eng"),
        queue("web", 1, parent="eng"),
    ]
    jobs, owner = saturating(["ml", "web", "ops"])
    nodes = [node(f"n{i}", cpu=4) for i in range(10)]
    counts = placed(schedule(snapshot(nodes, jobs, queues)), owner)
    assert abs(counts["ml"] - 15) <= 1 and abs(counts["web"] - 15) <= 1
    assert abs(counts["ops"] - 10) <= 1


def test_deserved_of_a_subtree_is_poured_into_its_children_by_weight() -> None:
    queues = [queue("eng", 1), queue("ml", 3, parent="eng"), queue("web", 1, parent="eng")]
    jobs, _ = saturating(["ml", "web"])
    snap = snapshot([node(f"n{i}", cpu=4) for i in range(10)], jobs, queues)
    session = open_cycle(snap, default_config(), PLUGINS).session
    assert session.queue_figures["eng"].deserved.cpu == 40_000
    assert session.queue_figures["ml"].deserved.cpu == 30_000
    assert session.queue_figures["web"].deserved.cpu == 10_000


def test_a_child_never_exceeds_its_parents_capability() -> None:
    queues = [
        queue("eng", 1, capability=resources(cpu=8)),
        queue("ml", 1, parent="eng"),
        queue("web", 1, parent="eng"),
    ]
    jobs, owner = saturating(["ml", "web"])
    counts = placed(
        schedule(snapshot([node(f"n{i}", cpu=4) for i in range(10)], jobs, queues)), owner
    )
    assert sum(counts.values()) == 8


def test_guarantee_of_a_child_holds_within_its_parent() -> None:
    queues = [
        queue("eng", 1),
        queue("ml", 1, parent="eng", guarantee=resources(cpu=30)),
        queue("web", 1, parent="eng"),
    ]
    jobs, _ = saturating(["ml", "web"])
    snap = snapshot([node(f"n{i}", cpu=4) for i in range(10)], jobs, queues)
    session = open_cycle(snap, default_config(), PLUGINS).session
    assert session.queue_figures["ml"].deserved.cpu >= 30_000


def test_podgroup_naming_a_parent_queue_waits_with_a_clear_condition() -> None:
    queues = [queue("eng", 1), queue("ml", 1, parent="eng")]
    job = gang("misplaced", 1, queue="eng")
    result = schedule(snapshot([node("n0", cpu=4)], [job], queues))
    assert result.binds == []
    (update,) = result.podgroups
    (condition,) = update.conditions
    assert condition.reason == "QueueNotLeaf"
    assert "only leaf queues hold PodGroups" in condition.message and "ml" in condition.message


def test_queue_with_a_missing_parent_hangs_from_root_and_still_schedules() -> None:
    job = gang("j", 2, queue="lost")
    result = schedule(snapshot([node("n0", cpu=4)], [job], [queue("lost", parent="nowhere")]))
    assert len(result.binds) == 2


def test_root_queue_capability_caps_the_whole_tree() -> None:
    queues = [queue("root", capability=resources(cpu=6)), queue("a"), queue("b")]
    jobs, owner = saturating(["a", "b"])
    counts = placed(
        schedule(snapshot([node(f"n{i}", cpu=4) for i in range(10)], jobs, queues)), owner
    )
    assert sum(counts.values()) == 6


def test_queues_naming_each_other_as_parent_hang_from_root_and_still_schedule() -> None:
    queues = [queue("a", parent="b"), queue("b", parent="a")]
    jobs, owner = saturating(["a", "b"], per_leaf=2)
    counts = placed(schedule(snapshot([node("n0", cpu=4)], jobs, queues)), owner)
    assert counts == {"a": 2, "b": 2}


def test_root_queue_capability_bounds_what_a_top_level_queue_may_admit() -> None:
    queues = [queue("root", capability=resources(cpu=2)), queue("a")]
    job = gang("big", 3, queue="a", phase=PodGroupPhase.PENDING, min_resources=resources(cpu=3))
    result = schedule(snapshot([node("n0", cpu=8)], [job], queues))
    assert result.admitted == []
