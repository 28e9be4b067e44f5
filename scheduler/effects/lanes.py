"""KeyedLane: background writes about objects, a bounded number at a time, where only the
newest write of each object waits.

client-go's workqueue rule: an object queued again before its turn is queued once, and an
object being written is not written twice at once. So a backlog (a takeover writing every
PodGroup, writes slowed by 429s) never grows past the objects it concerns, and an older
write, slowed by its retries, never lands after a newer one and leaves the object stale.

Writes are urgent (a verdict changed: a phase, a condition's status or reason) or
refreshes (only a message changed: a pending gang's count of nodes short of cpu moves with
the cluster on every session). Urgent writes go first; an object's refresh goes at most
once every `refresh_seconds`, the newest one when its time comes, so a queue of waiting
gangs costs a few writes a second, not one per gang per session.

Binds may come first (`yield_to`): while binds wait to be sent, a write waits too, up to
`hold_seconds` from when its object was queued; meanwhile a newer write of the object
replaces it, so a gang placed, bound and started during one burst of binds gets one status
write, not one per step, and the API server spends the burst on the binds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Hashable

Write = Callable[[], Awaitable[None]]

log = logging.getLogger(__name__)

# How often at most an object's refresh (a write that changes only a message) goes out.
REFRESH_SECONDS = 5.0
# How many start times are kept before the ones older than a refresh are swept.
SWEEP_SIZE = 1024


class KeyedLane:
    """Runs the newest write of each key, at most `concurrency` at a time: urgent keys
    first, each in the order it was queued; refreshes no more often than refresh_seconds."""

    def __init__(self, concurrency: int, *, refresh_seconds: float = REFRESH_SECONDS) -> None:
        self.concurrency = concurrency
        self.refresh_seconds = refresh_seconds
        # The newest write of each key not yet started, and whether it is urgent.
        self._waiting: dict[Hashable, tuple[Write, bool]] = {}
        # Keys in their turn order; a key may sit in both (moved to urgent): the first pop
        # that finds it still waiting (and due) takes it, the other is skipped.
        self._urgent: deque[Hashable] = deque()
        self._refresh: deque[Hashable] = deque()
        self._writing: set[Hashable] = set()
        # When each key's last write started (kept for refresh_seconds, then swept).
        self._started_at: dict[Hashable, float] = {}
        self._sweep_at = SWEEP_SIZE
        self._timers: dict[Hashable, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        # When each waiting key was first queued (kept while a newer write replaces it).
        self._queued_at: dict[Hashable, float] = {}
        # yield_to: whether binds wait to be sent now, and an awaitable for when none does.
        self._binds_waiting: Callable[[], bool] | None = None
        self._binds_cleared: Callable[[], Awaitable[None]] | None = None
        self.hold_seconds = 0.0
        self._waker: asyncio.Task[None] | None = None
        self._draining = False

    def yield_to(
        self,
        waiting: Callable[[], bool],
        cleared: Callable[[], Awaitable[None]],
        hold_seconds: float,
    ) -> None:
        """Hold writes while `waiting()` (binds wait to be sent), until `cleared()` returns
        or `hold_seconds` after the object was queued."""
        self._binds_waiting = waiting
        self._binds_cleared = cleared
        self.hold_seconds = hold_seconds

    @property
    def backlog(self) -> int:
        """Writes waiting for their turn (one per object at most)."""
        return len(self._waiting)

    def put(self, key: Hashable, write: Write, *, urgent: bool = True) -> None:
        """Queue `write` for `key`, replacing a write of that key that has not started."""
        previous = self._waiting.get(key)
        urgent = urgent or (previous is not None and previous[1])
        self._waiting[key] = (write, urgent)
        self._idle.clear()
        loop = asyncio.get_running_loop()
        self._queued_at.setdefault(key, loop.time())
        if key in self._writing:
            pass  # queued when the write under way ends
        elif urgent:
            self._cancel_timer(key)
            if previous is None or not previous[1]:
                self._urgent.append(key)
        elif previous is None:
            due = self._started_at.get(key, -self.refresh_seconds) + self.refresh_seconds
            if due <= loop.time():
                self._refresh.append(key)
            else:
                self._timers[key] = loop.call_later(due - loop.time(), self._due, key)
        self._start_writes()

    async def drain(self) -> None:
        """Send every write waiting, refreshes without their wait, and wait for them all."""
        for key in list(self._timers):
            self._cancel_timer(key)
            self._refresh.append(key)
        self._draining = True
        try:
            self._start_writes()
            await self._idle.wait()
        finally:
            self._draining = False
            if self._waker is not None and not self._waiting:
                self._waker.cancel()

    def _cancel_timer(self, key: Hashable) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def _due(self, key: Hashable) -> None:
        self._timers.pop(key, None)
        if key in self._waiting:
            self._refresh.append(key)
            self._start_writes()

    def _sweep(self, now: float) -> None:
        # A start older than a refresh holds no write back: forget it, so a lane over every
        # pod that ever waited does not grow with them.
        horizon = now - self.refresh_seconds
        self._started_at = {k: t for k, t in self._started_at.items() if t > horizon}
        self._sweep_at = max(SWEEP_SIZE, 2 * len(self._started_at))

    def _next_key(self, held_since: float | None) -> tuple[Hashable | None, float | None]:
        """The next key due, else None; with `held_since`, only keys queued before it, and
        then also when the first key held back was queued (None when none was)."""
        held: float | None = None
        for order in (self._urgent, self._refresh):
            while order:
                key = order[0]
                # A key with a timer is not due: the entry was left behind when the key
                # moved to the urgent queue, and the timer queues the key when it is due.
                if key not in self._waiting or key in self._writing or key in self._timers:
                    order.popleft()
                    continue
                queued = self._queued_at[key]
                if held_since is not None and queued > held_since:
                    # The keys behind it were queued later still (mostly): held too.
                    held = queued if held is None else min(held, queued)
                    break
                order.popleft()
                return key, None
        return None, held

    def _held_since(self, now: float) -> float | None:
        """While binds wait to be sent: writes queued after this time wait too."""
        waiting = self._binds_waiting
        if waiting is None or self._draining or not waiting():
            return None
        return now - self.hold_seconds

    def _start_writes(self) -> None:
        loop = asyncio.get_running_loop()
        held_since = self._held_since(loop.time())
        held: float | None = None
        while len(self._writing) < self.concurrency:
            key, held = self._next_key(held_since)
            if key is None:
                break
            write, _ = self._waiting.pop(key)
            del self._queued_at[key]
            self._cancel_timer(key)
            self._writing.add(key)
            self._started_at[key] = loop.time()
            if len(self._started_at) >= self._sweep_at:
                self._sweep(loop.time())
            task = loop.create_task(self._run(key, write))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        if held is not None and held_since is not None and self._waker is None:
            self._waker = loop.create_task(self._wake(held - held_since))
        if not self._writing and not self._waiting:
            self._idle.set()

    async def _wake(self, delay: float) -> None:
        """Start the held writes when no bind waits, or once the first held was held long
        enough (`delay` seconds from now)."""
        assert self._binds_cleared is not None
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._binds_cleared(), delay)
        finally:
            self._waker = None
        self._start_writes()

    async def _run(self, key: Hashable, write: Write) -> None:
        try:
            await write()
        except Exception:
            # A bug in one write must not stop the lane: said, and the next write goes on.
            log.exception("background write crashed", extra={"object": str(key)})
        finally:
            self._writing.discard(key)
            waiting = self._waiting.get(key)
            if waiting is not None:
                # A newer write came while this one ran: its turn now, or the refresh's.
                del self._waiting[key]
                self.put(key, waiting[0], urgent=waiting[1])
            self._start_writes()
