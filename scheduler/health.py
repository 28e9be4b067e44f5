"""Liveness and readiness of `muster scheduler`: what /healthz and /readyz answer, and why.

A scheduler can stall while its process looks fine: a reflector task that ended
leaves the cache frozen, a loop stuck in one call (or failing every cycle) binds
nothing. The kubelet only restarts what its probes see, so each such state turns
a probe red:

- live (/healthz): every background task still runs, and the loop finished a cycle
  (a session, a skipped session, or a standby's turn) within max(10 s, 10 periods).
  A cycle that raised does not count as finished.
- ready (/readyz): the cache finished its first lists; no watch has been broken
  (failing to start, or erroring) for longer than 30 s; no working watch has been quiet
  (no event, no bookmark) for longer than its timeout plus QUIET_MARGIN_SECONDS, though a
  server sends a bookmark at least every minute and before each timeout; and work that
  could move does move: while gangs are placeable (BindProgress: their binds sent and not
  answered, or failed since the last session, which places them again), a bind succeeds
  within max(30 s, 10 periods). A full cluster has nothing placeable, so it is no stall.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

# A watch may fail and resume within seconds (the server restarted, a 410 relist);
# longer than this and the cache is too stale to schedule from.
WATCH_BROKEN_SECONDS = 30.0
# The loop may pause for a long session or a slow reload; past this it is wedged.
MIN_STALL_SECONDS = 10.0
STALL_PERIODS = 10
# Placeable gangs may wait this long for a bind to succeed (a server's passing errors, a
# long session); past it, work that could move does not.
MIN_PROGRESS_SECONDS = 30.0
# A working watch delivers a bookmark at least every minute and before its timeout; one
# silent past its timeout by this much is stuck (a connection that died unseen).
QUIET_MARGIN_SECONDS = 30.0


class Watched(Protocol):
    """What health needs of a reflector."""

    @property
    def name(self) -> str: ...

    def is_synced(self) -> bool: ...

    def broken_since(self) -> float | None: ...

    def last_heard(self) -> float | None: ...

    @property
    def watch_timeout(self) -> int: ...


@dataclass(frozen=True)
class Verdict:
    """A probe's answer: ok, or the reasons it is not."""

    reasons: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.reasons

    def text(self) -> str:
        return "ok" if self.ok else "; ".join(self.reasons)


class BindProgress:
    """Which gangs could move now, and when a bind last succeeded: the binder tells it, the
    readiness probe and `muster_placeable_gangs` read it.

    A gang is placeable while a bind of it is in the binder's hands (queued, sent, or
    waiting to be sent again; not while it waits for its claims to be bound, which is the
    provisioner's work), and from a bind that failed for good until the next session,
    which places it again or finds it no longer fits. Written by the scheduling loop only;
    other threads read `placeable` and the times, each a single value.
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        # Binds in the binder's hands: pod uid -> its gang; and how many per gang.
        self._sending: dict[str, str] = {}
        self._per_gang: dict[str, int] = {}
        # Gangs a bind of which failed for good since the last session.
        self._failed: set[str] = set()
        self.placeable = 0
        # Since when gangs have been placeable without a break, and when a bind last
        # succeeded (clock time; None: not so / never).
        self.placeable_since: float | None = None
        self.last_bind: float | None = None

    def sending(self, uid: str, gang: str) -> None:
        """A bind of pod `uid`, of `gang`, is in the binder's hands."""
        self._add(uid, gang)
        self._changed()

    def _add(self, uid: str, gang: str) -> None:
        if uid not in self._sending:
            self._sending[uid] = gang
            self._per_gang[gang] = self._per_gang.get(gang, 0) + 1

    def settled(self, uid: str, *, bound: bool = False, failed: bool = False) -> None:
        """The bind of pod `uid` left the binder's hands: bound, failed for good, or neither
        (abandoned with the lease, or waiting for its claims)."""
        gang = self._sending.pop(uid, None)
        if gang is not None:
            left = self._per_gang[gang] - 1
            if left:
                self._per_gang[gang] = left
            else:
                del self._per_gang[gang]
            if failed:
                self._failed.add(gang)
        if bound:
            self.last_bind = self.clock()
        self._changed()

    def session_applied(self, binds: Iterable[tuple[str, str]]) -> None:
        """A session's binds (pod uid, gang) are being handed over: what failed before is
        among them, or no longer fits. One change, so work placed again each session
        counts as placeable without a break."""
        self._failed.clear()
        for uid, gang in binds:
            self._add(uid, gang)
        self._changed()

    def _changed(self) -> None:
        self.placeable = len(self._per_gang) + sum(
            1 for gang in self._failed if gang not in self._per_gang
        )
        if not self.placeable:
            self.placeable_since = None
        elif self.placeable_since is None:
            self.placeable_since = self.clock()


class Health:
    """Computes both probes from the loop's progress, the reflectors and the background tasks."""

    def __init__(
        self,
        period: float,
        reflectors: Sequence[Watched],
        clock: Callable[[], float],
        progress: BindProgress | None = None,
    ) -> None:
        self.stall_seconds = max(MIN_STALL_SECONDS, STALL_PERIODS * period)
        self.progress_seconds = max(MIN_PROGRESS_SECONDS, STALL_PERIODS * period)
        self.reflectors = reflectors
        self.clock = clock
        self.progress = progress
        self.tasks: list[asyncio.Task[object]] = []
        self._last_cycle = clock()

    def watch_tasks(self, tasks: Iterable[asyncio.Task[object]]) -> None:
        """Tasks that must run as long as the process does."""
        self.tasks.extend(tasks)

    def cycle_finished(self) -> None:
        """The loop finished one cycle without an error."""
        self._last_cycle = self.clock()

    def liveness(self) -> Verdict:
        """Red when a background task ended or the loop has not finished a cycle for too long."""
        reasons = [f"task {task.get_name()} ended" for task in self.tasks if task.done()]
        stalled = self.clock() - self._last_cycle
        if stalled > self.stall_seconds:
            reasons.append(
                f"no scheduling cycle finished for {stalled:.0f}s (limit {self.stall_seconds:.0f}s)"
            )
        return Verdict(tuple(reasons))

    def readiness(self) -> Verdict:
        """Red until every cache is synced; while a watch stays broken for over 30 s or
        quiet past its timeout; and while placeable gangs wait with no bind succeeding."""
        now = self.clock()
        reasons = [f"{r.name} cache not synced" for r in self.reflectors if not r.is_synced()]
        for reflector in self.reflectors:
            since = reflector.broken_since()
            if since is not None and now - since > WATCH_BROKEN_SECONDS:
                reasons.append(f"{reflector.name} watch broken for {now - since:.0f}s")
            heard = reflector.last_heard()
            quiet_limit = reflector.watch_timeout + QUIET_MARGIN_SECONDS
            if heard is not None and now - heard > quiet_limit:
                reasons.append(
                    f"{reflector.name} watch quiet for {now - heard:.0f}s: no event and no "
                    f"bookmark (limit {quiet_limit:.0f}s)"
                )
        stalled = self._stalled_for(now)
        if stalled is not None:
            assert self.progress is not None
            reasons.append(
                f"{self.progress.placeable} gang(s) could be placed but no bind succeeded for "
                f"{stalled:.0f}s (limit {self.progress_seconds:.0f}s)"
            )
        return Verdict(tuple(reasons))

    def _stalled_for(self, now: float) -> float | None:
        """How long placeable work has waited with no bind succeeding, past the limit."""
        progress = self.progress
        if progress is None or progress.placeable_since is None:
            return None
        waited = now - max(progress.placeable_since, progress.last_bind or 0.0)
        return waited if waited > self.progress_seconds else None
