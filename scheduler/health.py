"""Liveness and readiness of `muster scheduler`: what /healthz and /readyz answer, and why.

A scheduler can stall while its process looks fine: a reflector task that ended
leaves the cache frozen, a loop stuck in one call (or failing every cycle) binds
nothing. The kubelet only restarts what its probes see, so each such state turns
a probe red:

- live (/healthz): every background task still runs, and the loop finished a cycle
  (a session, a skipped session, or a standby's turn) within max(10 s, 10 periods).
  A cycle that raised does not count as finished.
- ready (/readyz): the cache finished its first lists and no watch has been broken
  (failing to start, or erroring) for longer than 30 s.
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


class Watched(Protocol):
    """What health needs of a reflector."""

    @property
    def name(self) -> str: ...

    def is_synced(self) -> bool: ...

    def broken_since(self) -> float | None: ...


@dataclass(frozen=True)
class Verdict:
    """A probe's answer: ok, or the reasons it is not."""

    reasons: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.reasons

    def text(self) -> str:
        return "ok" if self.ok else "; ".join(self.reasons)


class Health:
    """Computes both probes from the loop's progress, the reflectors and the background tasks."""

    def __init__(
        self,
        period: float,
        reflectors: Sequence[Watched],
        clock: Callable[[], float],
    ) -> None:
        self.stall_seconds = max(MIN_STALL_SECONDS, STALL_PERIODS * period)
        self.reflectors = reflectors
        self.clock = clock
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
        """Red until every cache is synced, and while a watch stays broken for over 30 s."""
        now = self.clock()
        reasons = [f"{r.name} cache not synced" for r in self.reflectors if not r.is_synced()]
        for reflector in self.reflectors:
            since = reflector.broken_since()
            if since is not None and now - since > WATCH_BROKEN_SECONDS:
                reasons.append(f"{reflector.name} watch broken for {now - since:.0f}s")
        return Verdict(tuple(reasons))
