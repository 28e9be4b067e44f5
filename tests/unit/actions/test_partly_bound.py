"""Partly bound gangs (api/gang_state.py): some members bound, the gang never ready since it
was last Pending. Every session completes one before any other gang is placed, or holds the
room its missing members need against every other gang, and undoes it (evicts its bound
members) once it has been partly bound for allocate's partly-bound-timeout."""

from __future__ import annotations

import pytest

from scheduler.api import wire
from scheduler.api.job import JobInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.reasons import (
    PARTLY_BOUND,
    PARTLY_BOUND_COMPLETED,
    PARTLY_BOUND_HOLDING,
    PARTLY_BOUND_UNDO_REFUSED,
    PARTLY_BOUND_UNDOING,
    PARTLY_BOUND_UNDONE,
)
from scheduler.api.snapshot import ClusterSnapshot, PlacementFailures
from scheduler.api.task import TaskStatus
from scheduler.api.timestamps import format_rfc3339
from scheduler.engine import load_config, schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.decisions import GroupCondition, SessionResult
from tests.unit.builders import (
    binds_per_job,
    evictions_per_job,
    gang,
    node,
    queue,
    resources,
    running_gang,
    snapshot,
)

NOW = 1_800_000_000.0
# When the cut gang's first member was bound.
BOUND_AT = NOW - 10
R, B, BI, P, S = (
    TaskStatus.RUNNING,
    TaskStatus.BOUND,
    TaskStatus.BINDING,
    TaskStatus.PENDING,
    TaskStatus.SUCCEEDED,
)
TIERS = """
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""
CONFIG = load_config('actions: "enqueue, allocate, backfill"' + TIERS)


def config(actions: str = "enqueue, allocate, backfill", **allocate: object) -> SchedulerConfig:
    arguments = ", ".join(f"{key}: {value}" for key, value in allocate.items())
    text = f'actions: "{actions}"' + TIERS
    if arguments:
        text += f"configurations:\n- name: allocate\n  arguments: {{{arguments}}}\n"
    return load_config(text)


def cut_gang(
    size: int = 7,
    statuses: tuple[TaskStatus, ...] = (R, R, B, B),
    *,
    phase: PodGroupPhase = PodGroupPhase.INQUEUE,
    queue_name: str = "a",
    **kwargs: object,
) -> JobInfo:
    """A gang of 1-cpu members whose first members a dead leader bound on n0."""
    return gang(
        "cut",
        size,
        cpu=1,
        phase=phase,
        queue=queue_name,
        statuses=statuses,
        on=["n0"],
        bound_at=format_rfc3339(BOUND_AT),
        created=format_rfc3339(NOW - 30),
        **kwargs,  # type: ignore[arg-type]
    )


def eager_gang(size: int = 2) -> JobInfo:
    """A younger gang of higher priority, in another queue."""
    return gang("eager", size, cpu=1, priority=1000, queue="b", created=format_rfc3339(NOW - 5))


def cluster(*jobs: JobInfo, busy_on_n1: int = 2, now: float = NOW) -> ClusterSnapshot:
    """n0 (4 cpu) holds the cut gang's bound members; n1 (4 cpu) runs `busy_on_n1` cpu of
    other work, the rest free."""
    busy = [running_gang("busy", busy_on_n1, on=["n1"], queue="b")] if busy_on_n1 else []
    snap = snapshot(
        [node("n0", cpu=4), node("n1", cpu=4)], [*jobs, *busy], [queue("a"), queue("b")]
    )
    snap.now = now
    return snap


def condition(result: SessionResult, name: str, kind: str) -> GroupCondition | None:
    update = next((u for u in result.podgroups if u.name == name), None)
    if update is None:
        return None
    return next((c for c in update.conditions if c.type == kind), None)


def events(result: SessionResult, name: str) -> list[tuple[str, str]]:
    return [(e.type, e.reason) for e in result.events if e.name == name]


def test_a_partly_bound_gang_is_completed_before_a_younger_gang_of_higher_priority() -> None:
    # Room for three more pods on n1: `eager` alone would take two of them, and leave the
    # cut gang short of its last three for good.
    snap = cluster(cut_gang(), eager_gang(), busy_on_n1=1)

    result = schedule(snap, CONFIG)

    assert binds_per_job(result) == {"default/cut": 3}
    assert {b.node for b in result.binds} == {"n1"}
    assert result.evictions == []
    completed = condition(result, "cut", PARTLY_BOUND)
    assert completed is not None
    assert (completed.status, completed.reason) == ("False", PARTLY_BOUND_COMPLETED)
    assert format_rfc3339(BOUND_AT) in completed.message
    assert events(result, "cut") == [("Normal", PARTLY_BOUND_COMPLETED)]


def test_a_partly_bound_gang_that_cannot_complete_holds_its_room_against_every_other() -> None:
    # Two cpus free on n1, three missing members: it cannot complete, and `eager` (higher
    # priority, another queue) fits in the two cpus it would need.
    snap = cluster(cut_gang(), eager_gang())

    result = schedule(snap, CONFIG)

    assert result.binds == [] and result.evictions == []
    (held,) = result.holds
    assert (held.job, held.kind, held.nodes) == (
        "default/cut",
        "partly-bound",
        {"n1": resources(2)},
    )
    holding = condition(result, "cut", PARTLY_BOUND)
    assert holding is not None
    assert (holding.status, holding.reason) == ("True", PARTLY_BOUND_HOLDING)
    assert format_rfc3339(BOUND_AT + 60) in holding.message  # when it is undone
    assert events(result, "cut") == [("Warning", PARTLY_BOUND_HOLDING)]
    waits = condition(result, "eager", "Unschedulable")
    assert waits is not None and "partly bound gangs: default/cut" in waits.message


def test_a_partly_bound_gang_spread_over_its_nodes_holds_every_cpu_free_there() -> None:
    # Four nodes of 4 cpu; the dead leader bound 8 of 16 members two to a node; another
    # scheduler's pod sits on a cpu of n3. The 8 missing members need the 7 free cpus and
    # the squatter's: laid out on nodes emptied of their pods they would all go on two
    # nodes, and only those two nodes' free cpus would be held; the other three would go
    # to `eager`, and the cut gang could never complete.
    statuses = (B,) * 8 + (P,) * 8
    cut = gang(
        "cut",
        16,
        cpu=1,
        phase=PodGroupPhase.INQUEUE,
        queue="a",
        statuses=statuses,
        on=["n0", "n1", "n2", "n3"],
        bound_at=format_rfc3339(BOUND_AT),
        created=format_rfc3339(NOW - 30),
    )
    squatter = running_gang("squatter", 1, on=["n3"], queue="b")
    nodes = [node(f"n{i}", cpu=4) for i in range(4)]
    snap = snapshot(nodes, [cut, eager_gang(), squatter], [queue("a"), queue("b")])
    snap.now = NOW

    result = schedule(snap, CONFIG)

    assert result.binds == [] and result.evictions == []
    (held,) = result.holds
    assert (held.job, held.kind) == ("default/cut", "partly-bound")
    assert held.nodes == {
        "n0": resources(2),
        "n1": resources(2),
        "n2": resources(2),
        "n3": resources(1),
    }
    waits = condition(result, "eager", "Unschedulable")
    assert waits is not None and "partly bound gangs: default/cut" in waits.message


def test_a_partly_bound_gang_is_not_undone_before_its_time() -> None:
    snap = cluster(cut_gang(), eager_gang(), now=BOUND_AT + 59)

    result = schedule(snap, CONFIG)

    assert result.evictions == [] and result.binds == []
    holding = condition(result, "cut", PARTLY_BOUND)
    assert holding is not None and holding.reason == PARTLY_BOUND_HOLDING


def test_a_partly_bound_gang_is_undone_once_its_time_is_up() -> None:
    snap = cluster(cut_gang(), eager_gang(), now=BOUND_AT + 61)

    result = schedule(snap, CONFIG)

    # Its four bound members are evicted as one group named for the gang itself.
    assert evictions_per_job(result) == {"default/cut": 4}
    assert {e.preemptor for e in result.evictions} == {"default/cut"}
    assert {e.event for e in result.evictions} == {PARTLY_BOUND_UNDOING}
    undoing = condition(result, "cut", PARTLY_BOUND)
    assert undoing is not None
    assert (undoing.status, undoing.reason) == ("True", PARTLY_BOUND_UNDOING)
    assert events(result, "cut") == [("Warning", PARTLY_BOUND_UNDOING)]
    # Its room is no longer held: the other gang takes the free room.
    assert result.holds == []
    assert binds_per_job(result) == {"default/eager": 2}


def test_the_time_to_complete_is_allocates_argument() -> None:
    snap = cluster(cut_gang(), eager_gang(), now=BOUND_AT + 11)

    result = schedule(snap, config(**{"partly-bound-timeout": "10s"}))

    assert evictions_per_job(result) == {"default/cut": 4}


def test_the_time_to_complete_counts_from_the_first_member_still_bound() -> None:
    cut = cut_gang()
    later = sorted(cut.tasks.values(), key=lambda t: t.name)[1:4]
    for member in later:
        member.bound_at = format_rfc3339(BOUND_AT + 30)
    snap = cluster(cut, eager_gang(), now=BOUND_AT + 61)

    result = schedule(snap, CONFIG)

    assert evictions_per_job(result) == {"default/cut": 4}


def test_a_gang_whose_placed_members_finished_is_held_for_then_left_with_nothing_to_undo() -> None:
    # A dead leader bound four; they ran and finished before the next leader came. The gang
    # still needs its three others, which cannot fit yet: it is held for, then past its time
    # there is nothing to evict; it is no longer held for.
    def full(now: float) -> ClusterSnapshot:
        # n0's room went to other work meanwhile; one cpu is free on n1.
        on_n0 = running_gang("other", 4, on=["n0"], queue="b")
        return cluster(cut_gang(statuses=(S, S, S, S)), on_n0, busy_on_n1=3, now=now)

    waiting = schedule(full(NOW), CONFIG)

    assert [h.job for h in waiting.holds] == ["default/cut"]
    holding = condition(waiting, "cut", PARTLY_BOUND)
    assert holding is not None and holding.reason == PARTLY_BOUND_HOLDING

    late = schedule(full(BOUND_AT + 61), CONFIG)

    assert late.evictions == [] and late.holds == []
    undone = condition(late, "cut", PARTLY_BOUND)
    assert undone is not None
    assert (undone.status, undone.reason) == ("False", PARTLY_BOUND_UNDONE)
    assert "nothing to evict" in undone.message


def test_an_undo_waits_for_a_bind_in_flight() -> None:
    # The leader still sends a bind of the gang (a passing failure, sent again): the gang
    # may yet complete, so nothing of it is evicted while that bind is out.
    snap = cluster(cut_gang(statuses=(R, R, B, BI)), eager_gang(), now=BOUND_AT + 61)

    result = schedule(snap, CONFIG)

    assert result.evictions == []
    holding = condition(result, "cut", PARTLY_BOUND)
    assert holding is not None and holding.reason == PARTLY_BOUND_HOLDING


def test_an_undo_a_budget_refused_is_tried_again_after_its_backoff_its_room_held() -> None:
    refusal = "the Eviction API refused to evict default/cut-0: The disruption budget ..."
    snap = cluster(cut_gang(), eager_gang(), now=BOUND_AT + 61)
    snap.eviction_refusals = {"default/cut": refusal}
    snap.failures = {"default/cut": PlacementFailures(1, BOUND_AT + 60.5)}

    backing_off = schedule(snap, CONFIG)

    assert backing_off.evictions == [] and backing_off.binds == []
    assert [h.job for h in backing_off.holds] == ["default/cut"]
    refused = condition(backing_off, "cut", PARTLY_BOUND)
    assert refused is not None
    assert (refused.status, refused.reason) == ("True", PARTLY_BOUND_UNDO_REFUSED)
    assert "The disruption budget" in refused.message

    snap = cluster(cut_gang(), eager_gang(), now=BOUND_AT + 90)
    snap.eviction_refusals = {"default/cut": refusal}
    snap.failures = {"default/cut": PlacementFailures(1, BOUND_AT + 60.5)}

    again = schedule(snap, CONFIG)

    assert evictions_per_job(again) == {"default/cut": 4}


@pytest.mark.parametrize(
    ("phase", "statuses", "min_member"),
    [
        pytest.param(PodGroupPhase.RUNNING, (R, R, R, R), 7, id="ran-whole-then-lost-members"),
        pytest.param(PodGroupPhase.UNKNOWN, (R, R, R, R), 7, id="written-unknown"),
        pytest.param(PodGroupPhase.RUNNING, (R, R, R, R), 6, id="min-member-raised-in-place"),
    ],
)
def test_a_gang_that_ran_whole_is_a_running_gang_not_a_partly_bound_one(
    phase: PodGroupPhase, statuses: tuple[TaskStatus, ...], min_member: int
) -> None:
    cut = cut_gang(phase=phase, statuses=statuses, min_member=min_member)
    snap = cluster(cut, eager_gang(), now=BOUND_AT + 600)

    result = schedule(snap, CONFIG)

    assert result.evictions == [] and result.holds == []
    assert condition(result, "cut", PARTLY_BOUND) is None
    assert binds_per_job(result) == {"default/eager": 2}


def test_completing_a_partly_bound_gang_is_not_held_back_by_its_queues_share() -> None:
    # Queue a already holds its deserved half of the cluster (the cut gang's four bound
    # members); completing the gang takes it over, before b's gang of the same size.
    b_waits = gang("wants-b", 4, cpu=1, queue="b", created=format_rfc3339(NOW - 20))
    snap = cluster(cut_gang(size=6), b_waits, busy_on_n1=0)

    result = schedule(snap, CONFIG)

    assert binds_per_job(result) == {"default/cut": 2}


def test_a_pending_partly_bound_gang_is_completed_without_being_admitted_again() -> None:
    # Its Inqueue never reached the PodGroup, and minResources for all seven is more than
    # the cluster has free: enqueue would keep it Pending, but it holds room already.
    cut = cut_gang(phase=PodGroupPhase.PENDING, min_resources=resources(cpu=7))
    snap = cluster(cut, busy_on_n1=1)

    result = schedule(snap, CONFIG)

    assert binds_per_job(result) == {"default/cut": 3}


def test_preempt_and_reclaim_never_take_a_partly_bound_gangs_members() -> None:
    # The only pods a high-priority gang of the same queue could evict are the cut gang's,
    # and whole gangs may go (evictWholeGangs): the cut gang is completed or undone first.
    cut = cut_gang(size=5, statuses=(R, R, R, R), queue_name="a")
    urgent = gang("urgent", 4, cpu=1, priority=1000, queue="a", created=format_rfc3339(NOW - 5))
    snap = cluster(cut, urgent, busy_on_n1=4)
    eviction = load_config(
        'actions: "enqueue, allocate, preempt, reclaim, backfill"'
        + TIERS
        + "configurations:\n"
        + "- name: preempt\n  arguments: {evictWholeGangs: true}\n"
        + "- name: reclaim\n  arguments: {evictWholeGangs: true}\n"
    )

    result = schedule(snap, eviction)

    assert "default/cut" not in evictions_per_job(result)


def test_once_no_member_is_bound_the_condition_says_the_gang_was_undone() -> None:
    cut = cut_gang(statuses=())
    cut.conditions = (
        wire.Condition(
            type=PARTLY_BOUND,
            status="True",
            reason=PARTLY_BOUND_UNDOING,
            message="it could not be completed within 60s",
            last_transition_time=format_rfc3339(BOUND_AT + 60),
        ),
    )
    snap = cluster(cut, busy_on_n1=4)

    result = schedule(snap, CONFIG)

    undone = condition(result, "cut", PARTLY_BOUND)
    assert undone is not None
    assert (undone.status, undone.reason) == ("False", PARTLY_BOUND_UNDONE)
    assert events(result, "cut") == [("Normal", PARTLY_BOUND_UNDONE)]
