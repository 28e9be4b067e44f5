"""enqueue: Pending -> Inqueue only when the cluster and the queue can hold minResources."""

from __future__ import annotations

from scheduler.api.errors import InvalidObject
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.queue import QueueState
from scheduler.api.task import TaskStatus
from scheduler.engine import load_config, schedule
from tests.unit.builders import gang, node, queue, resources, running_gang, snapshot

ENQUEUE_ONLY = load_config(
    """
actions: "enqueue"
tiers:
- plugins:
  - name: gang
  - name: proportion
"""
)
ENQUEUE_ONLY_NO_OVERCOMMIT = load_config(
    """
actions: "enqueue"
tiers:
- plugins:
  - name: gang
  - name: proportion
configurations:
- name: enqueue
  arguments: {overcommit-factor: 1.0}
"""
)


def test_gang_whose_min_resources_exceed_the_cluster_stays_pending_with_reason() -> None:
    job = gang("huge", 2, phase=PodGroupPhase.PENDING, min_resources=resources(cpu=100))
    result = schedule(snapshot([node("n1", cpu=4)], [job]), ENQUEUE_ONLY)
    (update,) = result.podgroups
    assert update.phase is PodGroupPhase.PENDING
    assert update.conditions[0].reason == "ClusterCapacityExceeded"
    assert "cpu" in update.conditions[0].message


def test_admission_reserves_room_so_the_next_gang_waits() -> None:
    first = gang(
        "first",
        4,
        phase=PodGroupPhase.PENDING,
        min_resources=resources(cpu=4),
        created="2026-01-01T00:00:00Z",
    )
    second = gang(
        "second",
        4,
        phase=PodGroupPhase.PENDING,
        min_resources=resources(cpu=4),
        created="2026-01-01T00:00:01Z",
    )
    result = schedule(snapshot([node("n1", cpu=4)], [first, second]), ENQUEUE_ONLY)
    phases = {u.name: u.phase for u in result.podgroups}
    assert phases["first"] is PodGroupPhase.INQUEUE
    assert phases["second"] is PodGroupPhase.PENDING


def test_gang_without_min_resources_is_admitted() -> None:
    result = schedule(
        snapshot([node("n1", cpu=1)], [gang("a", 8, phase=PodGroupPhase.PENDING)]), ENQUEUE_ONLY
    )
    assert result.podgroups[0].phase is PodGroupPhase.INQUEUE


def test_podgroup_with_no_pods_yet_is_admitted_on_min_resources_alone() -> None:
    # Kubeflow's Training Operator creates the pods only once the PodGroup left Pending.
    job = gang("tfjob", 0, min_member=4, phase=PodGroupPhase.PENDING, min_resources=resources(4))
    result = schedule(snapshot([node("n1", cpu=8)], [job]), ENQUEUE_ONLY)
    (update,) = result.podgroups
    assert update.phase is PodGroupPhase.INQUEUE
    assert result.admitted == ["default/tfjob"]


def test_podgroup_with_no_pods_and_too_large_min_resources_stays_pending() -> None:
    job = gang("tfjob", 0, min_member=4, phase=PodGroupPhase.PENDING, min_resources=resources(16))
    result = schedule(snapshot([node("n1", cpu=8)], [job]), ENQUEUE_ONLY)
    (update,) = result.podgroups
    assert update.phase is PodGroupPhase.PENDING
    assert update.conditions[0].reason == "ClusterCapacityExceeded"


def test_podgroup_naming_a_missing_queue_is_not_admitted_and_says_so() -> None:
    job = gang("lost", 0, min_member=2, queue="nowhere", phase=PodGroupPhase.PENDING)
    result = schedule(snapshot([node("n1", cpu=8)], [job]), ENQUEUE_ONLY)
    (update,) = result.podgroups
    assert update.phase is PodGroupPhase.PENDING
    assert update.conditions[0].reason == "QueueNotFound"


def test_running_gang_keeps_the_rest_of_its_min_resources_reserved() -> None:
    # A RayJob: the cluster (2 cpu) runs, the submitter (1 cpu) comes later; minResources 3.
    ray = running_gang("ray", 2, min_member=2, min_resources=resources(3), on=["n1"])
    later = gang("later", 1, phase=PodGroupPhase.PENDING, min_resources=resources(2))
    result = schedule(snapshot([node("n1", cpu=4)], [ray, later]), ENQUEUE_ONLY_NO_OVERCOMMIT)
    phases = {u.name: u.phase for u in result.podgroups}
    # 4 cpu: 2 used by ray, 1 still reserved for its submitter: 1 left, later needs 2.
    assert phases["later"] is PodGroupPhase.PENDING


def test_running_gang_below_min_member_reserves_nothing_more() -> None:
    # A Spark driver finished while the PodGroup stays Running: its room is not reserved again.
    spark = gang(
        "spark",
        2,
        min_member=2,
        phase=PodGroupPhase.RUNNING,
        min_resources=resources(3),
        statuses=[TaskStatus.RUNNING, TaskStatus.SUCCEEDED],
        on=["n1"],
    )
    later = gang("later", 1, phase=PodGroupPhase.PENDING, min_resources=resources(3))
    result = schedule(snapshot([node("n1", cpu=4)], [spark, later]), ENQUEUE_ONLY_NO_OVERCOMMIT)
    phases = {u.name: u.phase for u in result.podgroups}
    assert phases["later"] is PodGroupPhase.INQUEUE


def test_admitted_gang_in_a_queue_that_closed_releases_its_reservation_at_once() -> None:
    shut = queue("shut", state=QueueState.CLOSING)
    stuck = gang("stuck", 4, min_resources=resources(cpu=4), queue="shut")
    waiting = gang("waiting", 4, phase=PodGroupPhase.PENDING, min_resources=resources(cpu=4))
    # the Pending one first: looking past it, enqueue still finds the stuck one
    result = schedule(snapshot([node("n1", cpu=4)], [waiting, stuck], [shut]), ENQUEUE_ONLY)
    assert result.admitted == [waiting.key]
    update = next(u for u in result.podgroups if u.name == "stuck")
    assert update.phase is PodGroupPhase.PENDING
    reasons = {c.reason: c.message for c in update.conditions}
    assert "released its reservation" in reasons["QueueNotOpen"]


def test_reservation_of_an_admitted_gang_that_has_not_started_counts_against_the_cluster() -> None:
    admitted = gang("admitted", 4, min_resources=resources(cpu=4))
    waiting = gang("waiting", 1, phase=PodGroupPhase.PENDING, min_resources=resources(cpu=1))
    result = schedule(
        snapshot([node("n1", cpu=4)], [admitted, waiting]), ENQUEUE_ONLY_NO_OVERCOMMIT
    )
    assert result.admitted == []
    assert "ClusterCapacityExceeded" in {c.reason for u in result.podgroups for c in u.conditions}


def test_unusable_podgroups_do_not_stop_the_ones_after_them_being_admitted() -> None:
    broken = gang("broken", 1, phase=PodGroupPhase.PENDING)
    broken.invalid = InvalidObject("PodGroup", broken.key, "spec.minMember", -1, "must be 0+")
    lost = gang("lost", 1, phase=PodGroupPhase.PENDING, queue="nope")
    fine = gang("fine", 1, phase=PodGroupPhase.PENDING)
    result = schedule(snapshot([node("n1", cpu=4)], [broken, lost, fine]), ENQUEUE_ONLY)
    assert result.admitted == [fine.key]
    reasons = {u.name: u.conditions[0].reason for u in result.podgroups if u.conditions}
    assert reasons["broken"] == "InvalidPodGroup" and reasons["lost"] == "QueueNotFound"


def test_every_unstarted_gang_of_a_closed_queue_is_released_and_told_how_to_move_on() -> None:
    shut = queue("shut", state=QueueState.CLOSED)
    started = gang("a-started", 2, queue="shut", statuses=[TaskStatus.RUNNING], on=["n1"])
    stuck = [gang(f"b-stuck-{i}", 2, min_resources=resources(cpu=1), queue="shut") for i in (0, 1)]

    result = schedule(snapshot([node("n1", cpu=4)], [started, *stuck], [shut]), ENQUEUE_ONLY)

    phases = {u.name: u.phase for u in result.podgroups}
    assert phases == {
        "a-started": PodGroupPhase.INQUEUE,
        "b-stuck-0": PodGroupPhase.PENDING,
        "b-stuck-1": PodGroupPhase.PENDING,
    }
    message = next(
        c.message
        for u in result.podgroups
        if u.name == "b-stuck-1"
        for c in u.conditions
        if c.reason == "QueueNotOpen"
    )
    assert message == (
        "2/2 tasks in gang unschedulable: "
        "queue 'shut' is Closed: the admitted gang cannot start there, so it returned to "
        "Pending and released its reservation; it is admitted again when the queue reopens, "
        "or move it to an Open queue (spec.queue)"
    )


def test_a_gang_short_of_two_resources_names_both_and_when_it_is_admitted() -> None:
    job = gang("huge", 2, phase=PodGroupPhase.PENDING, min_resources=resources(cpu=100, gpu=4))

    result = schedule(snapshot([node("n1", cpu=4)], [job]), ENQUEUE_ONLY)

    (update,) = result.podgroups
    assert update.conditions[0].message == (
        "2/2 tasks in gang unschedulable: "
        "the cluster cannot hold minResources now (short of cpu, nvidia.com/gpu); "
        "it is admitted when running jobs release resources"
    )


ENQUEUE_AND_ALLOCATE = load_config(
    """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: proportion
  - name: predicates
"""
)


def test_a_pending_gang_with_members_bound_is_admitted_on_what_it_still_needs() -> None:
    # Its leader died after 14 of the 16 binds and before the PodGroup's Running was written:
    # the 14 are counted as used already, so the whole minResources would not fit again.
    short = gang(
        "short",
        16,
        phase=PodGroupPhase.PENDING,
        min_resources=resources(cpu=16),
        statuses=[TaskStatus.RUNNING] * 14,
        on=[f"n{i}" for i in range(14)],
    )
    nodes = [node(f"n{i}", cpu=1) for i in range(16)]

    result = schedule(snapshot(nodes, [short]), ENQUEUE_AND_ALLOCATE)

    (update,) = result.podgroups
    assert update.phase is PodGroupPhase.RUNNING
    assert sorted(b.node for b in result.binds) == ["n14", "n15"]


def test_a_pending_gang_with_members_bound_asks_its_queue_only_for_the_rest() -> None:
    capped = queue("capped", capability=resources(cpu=16))
    short = gang(
        "short",
        16,
        queue="capped",
        phase=PodGroupPhase.PENDING,
        min_resources=resources(cpu=16),
        statuses=[TaskStatus.RUNNING] * 14,
        on=[f"n{i}" for i in range(14)],
    )
    nodes = [node(f"n{i}", cpu=1) for i in range(20)]

    result = schedule(snapshot(nodes, [short], [capped]), ENQUEUE_AND_ALLOCATE)

    assert [u.phase for u in result.podgroups] == [PodGroupPhase.RUNNING]
    assert len(result.binds) == 2
