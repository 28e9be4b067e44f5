"""SessionGate: whether a leader's schedule period runs a session or skips it.

A session over a world that did not change would decide the same as the last
one, so it is skipped: a 10,000-pod backlog that cannot move would otherwise
cost a whole session every period. Changes that only move what statuses report
(pods starting or ending, PodGroup statuses written back) get a session at most every
STATUS_REFRESH_SECONDS, and no sooner than STATUS_SHARE times the last session lasted:
such a session decides nothing new, and over a large cluster it is not free.
A bind answered, and its pod's watch event, change neither (the cache does not count
them: cache/kinds/pods.py), so a backlog being bound asks for none until its pods start (on a
server with no kubelets, such sessions would be a large share of a run's CPU).
Time-based rules (the Inqueue timeout, placement backoff) get one every RESYNC_SECONDS.
A replica that has just taken the lease does not wait out the rest of its period (`pause`):
a takeover is counted to the new leader's first bind. That first session of a term is
bounded (`first_of_term`; cache/bounded.py), and a session that left gangs to the next is
followed by the next at once (`session_ran(deferred=True)`), once its first binds are out
(server.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

# The longest a leader goes without a session while nothing changes.
RESYNC_SECONDS = 10.0
# How stale PodGroup running counts may get while pods start (no decision depends on them).
STATUS_REFRESH_SECONDS = 1.0
# Status-only sessions take at most about a twentieth of the loop's time.
STATUS_SHARE = 20.0


class SessionGate:
    """Remembers the world's generations at the last session and decides when the next is due.

    Times are monotonic seconds passed in by the caller, so the rule is tested without a clock.
    """

    def __init__(self) -> None:
        # None: no session yet in this term of leadership, so the next period runs one.
        self._generation: int | None = None
        self._status_generation = 0
        self._last_session = 0.0
        self._last_seconds = 0.0
        # The last session left gangs to the next (a bounded one): the next is due at once.
        self._deferred = False

    @property
    def due_now(self) -> bool:
        """Whether the last session left gangs to the next, which is then due at once."""
        return self._deferred

    @property
    def first_of_term(self) -> bool:
        """Whether the next session is the first of this term of leadership (or of the
        process): the one a takeover waits for, which is bounded."""
        return self._generation is None

    def pending_pods_bound(self, limit: int, *, may_leave_gangs: bool) -> int:
        """The pending pods the next session is offered at most (0: no bound): the first of a
        term is bounded to `limit` (cache/bounded.py) when the config lets a session leave
        gangs out (framework/settled.py: one that evicts is whole, the first too)."""
        return limit if self.first_of_term and may_leave_gangs else 0

    def needs_session(
        self, *, generation: int, status_generation: int, reloaded: bool, now: float
    ) -> bool:
        """Whether the period at `now` runs a session, given the world's generations now
        and whether the scheduler config was reloaded since the last period."""
        if reloaded or self._deferred or self._generation != generation:
            return True
        since = now - self._last_session
        if self._status_generation != status_generation:
            return since >= max(STATUS_REFRESH_SECONDS, STATUS_SHARE * self._last_seconds)
        return since >= RESYNC_SECONDS

    def session_ran(
        self,
        *,
        generation: int,
        status_generation: int,
        now: float,
        seconds: float,
        deferred: bool = False,
    ) -> None:
        """A session over the world at these generations finished without an error at `now`,
        after `seconds`; `deferred`: it left gangs to the next session."""
        self._deferred = deferred
        self._generation = generation
        self._status_generation = status_generation
        self._last_session = now
        self._last_seconds = seconds

    def forget(self) -> None:
        """A standby's period: whoever leads next starts with a session, whatever changed."""
        self._generation = None
        self._deferred = False


async def pause(
    seconds: float,
    stop: asyncio.Event,
    lease_taken: asyncio.Event,
    sooner: Awaitable[object] | None = None,
) -> None:
    """Wait out a schedule period, cut short by `stop` or by `lease_taken` (cleared here):
    a replica that just took the lease runs its first session at once; and by `sooner`
    when given (the first answer to a bounded session's binds: the next session is due)."""
    waiters: list[asyncio.Future[object]] = [
        asyncio.ensure_future(event.wait()) for event in (stop, lease_taken)
    ]
    if sooner is not None:
        waiters.append(asyncio.ensure_future(sooner))
    await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    for waiter in waiters:
        waiter.cancel()
    lease_taken.clear()
