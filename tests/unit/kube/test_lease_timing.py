"""When a standby tries the lease again: at the retry period, or at the holder's expiry
when that comes sooner (so a takeover does not wait up to one more retry period)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.kube import lease
from scheduler.kube.lease import EXPIRY_MARGIN, LeaderElector


def elector() -> LeaderElector:
    client: Any = object()  # never called: only the timing rule is under test
    return LeaderElector(client, namespace="ns", name="lock", identity="me", retry_period=2.0)


@pytest.mark.parametrize(
    ("acquired", "expires_in", "wait"),
    [
        pytest.param(True, None, 2.0, id="leader-renews-every-retry-period"),
        pytest.param(False, None, 2.0, id="no-other-holder-retry-period"),
        pytest.param(False, 10.0, 2.0, id="expiry-far-retry-period"),
        pytest.param(False, 0.5, 0.5 + EXPIRY_MARGIN, id="expiry-sooner-try-at-expiry"),
        pytest.param(False, -3.0, EXPIRY_MARGIN, id="already-expired-try-at-once"),
    ],
)
def test_next_attempt(
    monkeypatch: pytest.MonkeyPatch, acquired: bool, expires_in: float | None, wait: float
) -> None:
    monkeypatch.setattr(lease.time, "monotonic", lambda: 100.0)
    subject = elector()
    subject._expires_at = None if expires_in is None else 100.0 + expires_in

    assert subject._next_attempt_in(acquired) == pytest.approx(wait)
