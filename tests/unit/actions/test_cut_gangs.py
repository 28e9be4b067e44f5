"""A gang a leader left part-bound (killed between two binds) whose bound members then
finished before the next leader ran: the next sessions must complete it, never leave it
short for good. The finished members count towards minMember and need no room again."""

from __future__ import annotations

from scheduler.api.job import JobInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.task import TaskStatus
from scheduler.engine import load_config, schedule
from tests.unit.builders import binds_per_job, gang, node, resources, snapshot

# Volcano's default actions and tiers, with no overcommit: admission sees exactly the room.
CONFIG = load_config(
    """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
configurations:
- name: enqueue
  arguments: {overcommit-factor: 1.0, inqueue-timeout: 60}
"""
)
NOW = 1_800_000_000.0
FINISHED_FIVE = [TaskStatus.SUCCEEDED] * 5


def cut_gang(phase: PodGroupPhase) -> JobInfo:
    """8 members of 1 cpu, minResources for all 8: five bound by the dead leader, finished."""
    return gang(
        "cut",
        8,
        cpu=1,
        phase=phase,
        min_resources=resources(cpu=8),
        statuses=FINISHED_FIVE,
        created="2026-01-01T00:00:00Z",
    )


def test_inqueue_gang_whose_bound_members_finished_gets_its_last_members_first() -> None:
    # Room for three pods: a younger gang of higher priority would take it and leave `cut`
    # five of eight for good.
    cut = cut_gang(PodGroupPhase.INQUEUE)
    eager = gang("eager", 3, cpu=1, priority=1000, created="2026-01-01T00:00:09Z")
    snap = snapshot([node("n0", cpu=3)], [cut, eager])

    result = schedule(snap, CONFIG)

    assert binds_per_job(result) == {"default/cut": 3}
    update = next(u for u in result.podgroups if u.name == "cut")
    assert update.phase is PodGroupPhase.RUNNING
    assert (update.succeeded, update.running) == (5, 0)


def test_pending_gang_whose_bound_members_finished_is_admitted_on_the_room_still_needed() -> None:
    # The dead leader's Inqueue never reached the PodGroup. minResources is for all eight, but
    # five are done: the gang needs three cpus, and three is what the cluster has.
    cut = cut_gang(PodGroupPhase.PENDING)
    snap = snapshot([node("n0", cpu=3)], [cut])

    result = schedule(snap, CONFIG)

    assert binds_per_job(result) == {"default/cut": 3}
    assert [u.phase for u in result.podgroups] == [PodGroupPhase.RUNNING]


def test_inqueue_gang_whose_bound_members_finished_keeps_its_admission_past_the_timeout() -> None:
    # It has started: the Inqueue timeout is for gangs that never began, so it keeps its
    # place and waits for room for the last three, saying why.
    cut = cut_gang(PodGroupPhase.INQUEUE)
    snap = snapshot([node("n0", cpu=2)], [cut])
    snap.now = NOW
    snap.admitted_at = {cut.key: NOW - 600}

    result = schedule(snap, CONFIG)

    assert result.binds == []
    assert result.dequeued == []
    (update,) = result.podgroups
    assert update.phase is PodGroupPhase.INQUEUE
    reasons = {c.type: c.reason for c in update.conditions}
    assert reasons["Unschedulable"] == "NotEnoughResources"


def test_inqueue_gang_whose_finished_members_leave_room_reserves_only_the_rest() -> None:
    # `cut` reserves three cpus (eight less the five done), so a gang of five cpus behind it
    # on a cluster of eight is admitted too.
    cut = cut_gang(PodGroupPhase.INQUEUE)
    other = gang(
        "other",
        5,
        cpu=1,
        phase=PodGroupPhase.PENDING,
        min_resources=resources(cpu=5),
        created="2026-01-01T00:00:05Z",
    )
    snap = snapshot([node("n0", cpu=8)], [cut, other])

    result = schedule(snap, CONFIG)

    assert binds_per_job(result) == {"default/cut": 3, "default/other": 5}
