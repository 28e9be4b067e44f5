"""PodGroup phases, conditions and counts after a session; written only when they change."""

from __future__ import annotations

from scheduler.api import wire
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.task import TaskStatus
from scheduler.engine import schedule
from tests.unit.builders import gang, node, snapshot


def test_all_members_finished_makes_the_podgroup_completed() -> None:
    job = gang("a", 2, phase=PodGroupPhase.RUNNING, statuses=[TaskStatus.SUCCEEDED] * 2, on=["n1"])
    (update,) = schedule(snapshot([node("n1")], [job])).podgroups
    assert update.phase is PodGroupPhase.COMPLETED and update.succeeded == 2


def test_running_gang_that_lost_members_below_min_member_is_unknown() -> None:
    job = gang(
        "a",
        3,
        phase=PodGroupPhase.RUNNING,
        statuses=[TaskStatus.RUNNING, TaskStatus.FAILED, TaskStatus.FAILED],
        on=["n1"],
    )
    (update,) = schedule(snapshot([node("n1")], [job])).podgroups
    assert update.phase is PodGroupPhase.UNKNOWN
    assert (update.running, update.failed) == (1, 2)


def test_running_podgroup_whose_pods_are_gone_returns_to_pending() -> None:
    job = gang("suspended", 0, min_member=2, phase=PodGroupPhase.RUNNING)
    job.observed_phase = PodGroupPhase.RUNNING
    (update,) = schedule(snapshot([node("n1")], [job])).podgroups
    assert update.phase is PodGroupPhase.PENDING


def test_unchanged_status_is_not_written_again() -> None:
    job = gang("a", 2, phase=PodGroupPhase.RUNNING, statuses=[TaskStatus.RUNNING] * 2, on=["n1"])
    job.running = 2
    job.conditions = (
        wire.Condition(
            type="Scheduled",
            status="True",
            reason="GangReady",
            message="2/2 tasks in gang placed, minMember 2",
        ),
    )
    assert schedule(snapshot([node("n1")], [job])).podgroups == []


def test_counts_changing_alone_is_written() -> None:
    job = gang("a", 2, phase=PodGroupPhase.RUNNING, statuses=[TaskStatus.RUNNING] * 2, on=["n1"])
    job.running = 1
    (update,) = schedule(snapshot([node("n1")], [job])).podgroups
    assert update.running == 2


def test_unschedulable_then_placed_flips_the_condition_to_false_and_adds_scheduled() -> None:
    job = gang("a", 1)
    job.conditions = (
        wire.Condition(
            type="Unschedulable", status="True", reason="NotEnoughResources", message="old"
        ),
    )
    (update,) = schedule(snapshot([node("n1")], [job])).podgroups
    assert {(c.type, c.status) for c in update.conditions} == {
        ("Scheduled", "True"),
        ("Unschedulable", "False"),
    }
