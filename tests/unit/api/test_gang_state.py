"""The gang rules of api/gang_state.py as tables: each row a gang's members and the verdict."""

from __future__ import annotations

import pytest

from scheduler.api import gang_state
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.task import TaskStatus
from scheduler.api.timestamps import parse_rfc3339
from tests.unit.builders import gang

P, A, PL, BI, B, R, S, F, RE = (
    TaskStatus.PENDING,
    TaskStatus.ALLOCATED,
    TaskStatus.PIPELINED,
    TaskStatus.BINDING,
    TaskStatus.BOUND,
    TaskStatus.RUNNING,
    TaskStatus.SUCCEEDED,
    TaskStatus.FAILED,
    TaskStatus.RELEASING,
)
INQUEUE, PENDING, RUNNING, UNKNOWN, COMPLETED = (
    PodGroupPhase.INQUEUE,
    PodGroupPhase.PENDING,
    PodGroupPhase.RUNNING,
    PodGroupPhase.UNKNOWN,
    PodGroupPhase.COMPLETED,
)


@pytest.mark.parametrize(
    ("size", "min_member", "statuses", "running"),
    [
        pytest.param(3, 3, (R, R, R), True, id="all-min-members-run"),
        pytest.param(3, 2, (R, R, P), True, id="min-member-run-rest-pending"),
        pytest.param(3, 3, (R, R, P), False, id="one-short-of-min-member"),
        pytest.param(2, 0, (P, P), False, id="min-member-0-nothing-placed-is-not-running"),
        pytest.param(2, 0, (B, P), True, id="min-member-0-one-bound-runs"),
        pytest.param(2, 2, (S, R), True, id="finished-members-count"),
    ],
)
def test_runs_as_gang(
    size: int, min_member: int, statuses: tuple[TaskStatus, ...], running: bool
) -> None:
    job = gang("g", size, min_member=min_member, statuses=statuses, on=["n1"])

    assert gang_state.runs_as_gang(job) is running


@pytest.mark.parametrize(
    ("size", "min_member", "statuses", "short"),
    [
        pytest.param(3, 3, (A, A, P), True, id="fewer-than-min-member-placed"),
        pytest.param(3, 2, (A, A, P), False, id="exactly-min-member-placed-is-not-short"),
        pytest.param(3, 2, (PL, B, P), False, id="pipelined-counts-as-placed"),
        pytest.param(2, 2, (P, P), True, id="nothing-placed"),
        pytest.param(2, 0, (P, P), False, id="min-member-0-is-never-short"),
    ],
)
def test_short_of_min_member(
    size: int, min_member: int, statuses: tuple[TaskStatus, ...], short: bool
) -> None:
    job = gang("g", size, min_member=min_member, statuses=statuses, on=["n1"])

    assert gang_state.short_of_min_member(job) is short


@pytest.mark.parametrize(
    ("phase", "min_member", "statuses", "partly"),
    [
        pytest.param(INQUEUE, 4, (R, B, P, P), True, id="some-bound-never-ran-whole"),
        pytest.param(INQUEUE, 4, (BI, P, P, P), True, id="a-bind-in-flight-counts-as-bound"),
        pytest.param(PENDING, 4, (B, P, P, P), True, id="pending-phase-without-enqueue"),
        pytest.param(INQUEUE, 4, (R, S, P, P), True, id="finished-members-count-towards-ready"),
        pytest.param(
            INQUEUE, 4, (B, B, B, B), False, id="bound-whole-running-not-written-yet-is-ready"
        ),
        pytest.param(INQUEUE, 4, (B, B, B, A), False, id="completed-this-session"),
        pytest.param(RUNNING, 4, (R, R, R, P), False, id="ran-whole-then-lost-a-member"),
        pytest.param(UNKNOWN, 4, (R, R, P, P), False, id="written-unknown-after-running"),
        pytest.param(RUNNING, 6, (R, R, R, R), False, id="min-member-raised-in-place"),
        pytest.param(COMPLETED, 4, (R, S, P, P), False, id="completed-phase"),
        pytest.param(INQUEUE, 4, (S, S, P, P), True, id="members-that-finished-were-bound"),
        pytest.param(INQUEUE, 4, (RE, RE, P, P), False, id="being-evicted-holds-nothing-bound"),
        pytest.param(INQUEUE, 4, (F, P, P, P), False, id="a-failed-member-is-not-bound"),
        pytest.param(INQUEUE, 4, (P, P, P, P), False, id="nothing-bound"),
        pytest.param(INQUEUE, 2, (R, R, P, P), False, id="min-member-met-by-the-bound"),
    ],
)
def test_partly_bound(
    phase: PodGroupPhase, min_member: int, statuses: tuple[TaskStatus, ...], partly: bool
) -> None:
    job = gang("g", 4, min_member=min_member, phase=phase, statuses=statuses, on=["n1"])

    assert gang_state.partly_bound(job) is partly


def test_a_gang_short_of_a_role_is_partly_bound_though_min_member_is_met() -> None:
    # minTaskMember is part of being ready: two workers bound, the ps not.
    job = gang(
        "g",
        3,
        min_member=2,
        roles={"worker": 2, "ps": 1},
        min_task_member={"ps": 1},
        statuses=(R, R, P),
        on=["n1"],
    )

    assert gang_state.partly_bound(job)


def test_partly_bound_since_is_the_first_bind_of_a_member_still_bound() -> None:
    job = gang("g", 4, statuses=(R, B), on=["n1"])
    first, second = sorted(job.tasks.values(), key=lambda t: t.name)[:2]
    first.bound_at = "2026-01-01T00:00:09Z"
    second.bound_at = "2026-01-01T00:00:04Z"

    assert gang_state.partly_bound_since(job) == parse_rfc3339("2026-01-01T00:00:04Z")


def test_partly_bound_since_counts_a_member_that_finished_since() -> None:
    job = gang("g", 4, statuses=(S, B), on=["n1"])
    done, running = sorted(job.tasks.values(), key=lambda t: t.name)[:2]
    done.bound_at = "2026-01-01T00:00:01Z"
    running.bound_at = "2026-01-01T00:00:02Z"

    assert gang_state.partly_bound_since(job) == parse_rfc3339("2026-01-01T00:00:01Z")


def test_partly_bound_since_is_unknown_when_no_bound_member_says() -> None:
    job = gang("g", 4, statuses=(BI, B), on=["n1"])

    assert gang_state.partly_bound_since(job) is None
