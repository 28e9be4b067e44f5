"""When a leader's period runs a session: on a change or a reload at once, on status-only
changes every STATUS_REFRESH_SECONDS, and otherwise every RESYNC_SECONDS."""

from __future__ import annotations

import pytest

from scheduler.session_gate import (
    RESYNC_SECONDS,
    STATUS_REFRESH_SECONDS,
    STATUS_SHARE,
    SessionGate,
)

LAST_SESSION = 500.0


def gate_after_a_session(generation: int = 7, status_generation: int = 3) -> SessionGate:
    gate = SessionGate()
    gate.session_ran(
        generation=generation, status_generation=status_generation, now=LAST_SESSION, seconds=0.0
    )
    return gate


@pytest.mark.parametrize(
    ("generation", "status_generation", "reloaded", "since", "runs"),
    [
        pytest.param(7, 3, False, 0.1, False, id="nothing-changed-skips"),
        pytest.param(8, 3, False, 0.1, True, id="a-change-runs-at-once"),
        pytest.param(7, 3, True, 0.1, True, id="a-reloaded-config-runs-at-once"),
        pytest.param(7, 4, False, STATUS_REFRESH_SECONDS - 0.1, False, id="status-only-waits"),
        pytest.param(7, 4, False, STATUS_REFRESH_SECONDS, True, id="status-only-after-refresh"),
        pytest.param(7, 3, False, RESYNC_SECONDS - 0.1, False, id="unchanged-before-resync"),
        pytest.param(7, 3, False, RESYNC_SECONDS, True, id="unchanged-resyncs-for-timeouts"),
    ],
)
def test_a_session_runs_on_change_reload_status_refresh_or_resync(
    generation: int, status_generation: int, reloaded: bool, since: float, runs: bool
) -> None:
    gate = gate_after_a_session(generation=7, status_generation=3)
    decision = gate.needs_session(
        generation=generation,
        status_generation=status_generation,
        reloaded=reloaded,
        now=LAST_SESSION + since,
    )
    assert decision is runs


def test_the_first_period_runs_a_session_whatever_the_generations() -> None:
    gate = SessionGate()
    assert gate.needs_session(generation=0, status_generation=0, reloaded=False, now=0.0)


def test_a_standby_period_makes_the_next_leader_period_run_a_session() -> None:
    gate = gate_after_a_session(generation=7, status_generation=3)
    gate.forget()
    assert gate.needs_session(
        generation=7, status_generation=3, reloaded=False, now=LAST_SESSION + 0.1
    )


def test_the_generations_of_the_last_session_are_the_ones_compared() -> None:
    gate = gate_after_a_session(generation=7, status_generation=3)
    gate.session_ran(generation=9, status_generation=5, now=LAST_SESSION + 2, seconds=0.0)
    assert not gate.needs_session(
        generation=9, status_generation=5, reloaded=False, now=LAST_SESSION + 2.5
    )
    assert gate.needs_session(
        generation=7, status_generation=5, reloaded=False, now=LAST_SESSION + 2.5
    )


@pytest.mark.parametrize(
    ("seconds", "since", "runs"),
    [
        pytest.param(0.01, STATUS_REFRESH_SECONDS, True, id="cheap-session-refreshes-each-second"),
        pytest.param(0.1, STATUS_REFRESH_SECONDS, False, id="costly-session-refreshes-later"),
        pytest.param(0.1, 0.1 * STATUS_SHARE - 0.01, False, id="not-before-its-share"),
        pytest.param(0.1, 0.1 * STATUS_SHARE, True, id="at-its-share"),
    ],
)
def test_status_only_sessions_take_at_most_their_share_of_the_loop(
    seconds: float, since: float, runs: bool
) -> None:
    gate = SessionGate()
    gate.session_ran(generation=7, status_generation=3, now=LAST_SESSION, seconds=seconds)
    assert (
        gate.needs_session(
            generation=7, status_generation=4, reloaded=False, now=LAST_SESSION + since
        )
        is runs
    )
    # a change that can move a decision never waits for the share
    assert gate.needs_session(
        generation=8, status_generation=4, reloaded=False, now=LAST_SESSION + 0.01
    )


def test_only_the_first_session_of_a_term_is_bounded() -> None:
    gate = SessionGate()
    assert gate.first_of_term  # the process's first
    assert gate.pending_pods_bound(10_000, may_leave_gangs=True) == 10_000
    # a config whose sessions must be whole (one that evicts) is never bounded
    assert gate.pending_pods_bound(10_000, may_leave_gangs=False) == 0
    gate.session_ran(generation=7, status_generation=3, now=LAST_SESSION, seconds=0.0)
    assert not gate.first_of_term
    assert gate.pending_pods_bound(10_000, may_leave_gangs=True) == 0
    gate.forget()  # a standby's period: the next is a new leader's first
    assert gate.first_of_term
    assert gate.pending_pods_bound(10_000, may_leave_gangs=True) == 10_000


def test_a_session_that_left_gangs_to_the_next_makes_the_next_due_at_once() -> None:
    gate = SessionGate()
    gate.session_ran(
        generation=7, status_generation=3, now=LAST_SESSION, seconds=0.0, deferred=True
    )
    assert not gate.first_of_term  # the next is a whole one
    assert gate.due_now
    assert gate.needs_session(
        generation=7, status_generation=3, reloaded=False, now=LAST_SESSION + 0.01
    )
    gate.session_ran(generation=7, status_generation=3, now=LAST_SESSION + 0.5, seconds=0.0)
    assert not gate.due_now
    assert not gate.needs_session(
        generation=7, status_generation=3, reloaded=False, now=LAST_SESSION + 0.6
    )


def test_a_standby_period_forgets_that_a_session_was_due_at_once() -> None:
    gate = SessionGate()
    gate.session_ran(
        generation=7, status_generation=3, now=LAST_SESSION, seconds=0.0, deferred=True
    )
    gate.forget()  # the lease went: nothing is due at once on a standby
    assert not gate.due_now
