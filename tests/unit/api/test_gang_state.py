"""The gang rules of api/gang_state.py as tables: each row a gang's members and the verdict."""

from __future__ import annotations

import pytest

from scheduler.api import gang_state
from scheduler.api.task import TaskStatus
from tests.unit.builders import gang

P, A, PL, B, R, S = (
    TaskStatus.PENDING,
    TaskStatus.ALLOCATED,
    TaskStatus.PIPELINED,
    TaskStatus.BOUND,
    TaskStatus.RUNNING,
    TaskStatus.SUCCEEDED,
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
