"""When a replica tries the lease again: the leader at the retry period; a standby often
(it sees each renewal at most one read late) or at the holder's expiry when that comes
sooner (so a takeover does not wait up to one more retry period)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.kube import lease
from scheduler.kube.errors import TransportError
from scheduler.kube.lease import EXPIRY_MARGIN, FAILED_RETRY, STANDBY_READ, LeaderElector


def elector() -> LeaderElector:
    client: Any = object()  # never called: only the timing rule is under test
    return LeaderElector(client, namespace="ns", name="lock", identity="me", retry_period=2.0)


@pytest.mark.parametrize(
    ("acquired", "failed", "expires_in", "wait"),
    [
        pytest.param(True, False, None, 2.0, id="leader-renews-every-retry-period"),
        pytest.param(False, False, None, 2.0, id="no-other-holder-retry-period"),
        pytest.param(False, False, 10.0, STANDBY_READ, id="standby-reads-the-lease-often"),
        pytest.param(False, False, 0.3, 0.3 + EXPIRY_MARGIN, id="expiry-sooner-try-at-expiry"),
        pytest.param(False, False, -3.0, EXPIRY_MARGIN, id="already-expired-try-at-once"),
        pytest.param(
            False, True, 10.0, min(FAILED_RETRY, STANDBY_READ), id="unanswered-standby-soon"
        ),
        pytest.param(False, True, None, FAILED_RETRY, id="unanswered-asks-again-soon"),
        pytest.param(False, True, 0.1, 0.1 + EXPIRY_MARGIN, id="unanswered-expiry-sooner"),
    ],
)
def test_next_attempt(
    monkeypatch: pytest.MonkeyPatch,
    acquired: bool,
    failed: bool,
    expires_in: float | None,
    wait: float,
) -> None:
    monkeypatch.setattr(lease.time, "monotonic", lambda: 100.0)
    subject = elector()
    subject._expires_at = None if expires_in is None else 100.0 + expires_in

    assert subject._next_attempt_in(acquired, failed=failed) == pytest.approx(wait)


class SlowRenewal:
    """A lease this replica holds; the renewal's answer takes `delay` seconds of the clock."""

    def __init__(self, clock: list[float], delay: float) -> None:
        self.clock = clock
        self.delay = delay

    async def get_json(self, path: str) -> dict[str, Any]:
        return {"spec": {"holderIdentity": "me", "renewTime": "t", "leaseDurationSeconds": 15}}

    async def request(self, method: str, path: str, **_: Any) -> bytes:
        self.clock[0] += self.delay
        return b"{}"


def test_the_term_counts_from_before_the_renewal_was_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    # Others count the term from when they saw the renewal, which may be as early as it
    # was sent: an answer that took 8 s (or a process stopped meanwhile) must not lengthen
    # this replica's term by 8 s.
    clock = [100.0]
    monkeypatch.setattr(lease.time, "monotonic", lambda: clock[0])
    client: Any = SlowRenewal(clock, delay=8.0)
    subject = LeaderElector(client, namespace="ns", name="lock", identity="me", renew_deadline=10.0)

    async def stop_after_one_attempt(_: float) -> None:
        subject._stopped = True

    monkeypatch.setattr(lease.asyncio, "sleep", stop_after_one_attempt)
    asyncio.run(subject.run())

    assert subject.is_leader  # 108: 8 s into a 10 s term
    clock[0] = 110.5
    assert not subject.is_leader  # the term ran from 100, not from the answer at 108


class Unanswered:
    """An API server that is down (restarting): every request fails to connect."""

    async def get_json(self, path: str) -> dict[str, Any]:
        raise TransportError("connection refused")


def test_an_attempt_the_api_server_did_not_answer_is_made_again_soon(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client: Any = Unanswered()
    subject = LeaderElector(client, namespace="ns", name="lock", identity="me", retry_period=2.0)
    waits: list[float] = []

    async def record_and_stop(seconds: float) -> None:
        waits.append(seconds)
        subject._stopped = True

    monkeypatch.setattr(lease.asyncio, "sleep", record_and_stop)
    asyncio.run(subject.run())

    assert waits == [FAILED_RETRY]
    assert not subject.is_leader
