"""The garbage collector's settings for a process that holds a cluster in memory.

CPython's cyclic collector runs its young generation every 700 allocations and, every
hundred of those, may traverse every object the process holds. A scheduler holding tens
of thousands of pods, and copying them for each session, pays for that over and over, most
of it in full traversals of the cache. Most of what a session allocates dies by reference
count, not by the collector, so the young generation can be far larger; and what the first
full list loaded lives for the process's life, so it is moved out of the collector's sight.

Until then the collector does not run at all (`hold`, from the start of `muster scheduler`
to the cache's first full list): nearly everything allocated meanwhile, the modules'
classes and functions and the listed cluster (some twenty objects a listed pod), lives for
the process's life, so each traversal of it finds nothing and costs much. If the cache is
not loaded within HOLD_SECONDS (an API server that does not answer), the collector runs
again, so the reference cycles of failing requests retried meanwhile do not pile up.

Nor does it run during a session (`paused`): a session allocates some ten objects a pod (the
snapshot's copies, the statement's operations, the decisions) and they die by reference
count when it ends, so the young collections a session triggers would traverse objects
about to be freed anyway. What survives it is collected at the next young collection after.

docs/performance.md, "The heap and the collector", has what each of these saves.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterable, Iterator

# Allocations between young-generation collections (CPython's default: 700).
YOUNG_THRESHOLD = 20_000
# How long at most the collector is held while the cache loads.
HOLD_SECONDS = 60.0


def hold() -> None:
    """Stop the collector until the cache is loaded (settle) or HOLD_SECONDS pass (release)."""
    gc.disable()


def release() -> None:
    """Let the collector run again, the cache loaded or not."""
    gc.enable()


async def wait_loaded(loaded: Iterable[asyncio.Event], stopping: asyncio.Event) -> None:
    """Wait until every event in `loaded` is set (each cache listed once) or `stopping` is;
    past HOLD_SECONDS, with the collector let go (a slow start collects meanwhile)."""

    async def all_loaded() -> None:
        await asyncio.gather(*(event.wait() for event in loaded))

    synced = asyncio.ensure_future(all_loaded())
    stop = asyncio.ensure_future(stopping.wait())
    done, _ = await asyncio.wait(
        [synced, stop], timeout=HOLD_SECONDS, return_when=asyncio.FIRST_COMPLETED
    )
    if not done:
        release()
        await asyncio.wait([synced, stop], return_when=asyncio.FIRST_COMPLETED)
    synced.cancel()
    stop.cancel()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No collection inside the block (a session); the collector as it was after it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def tune() -> None:
    """Fewer, larger young collections; the older generations' thresholds as CPython's."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


def settle() -> int:
    """Once the caches hold the cluster: keep every object there is out of later traversals
    (gc.freeze), then let the collector run. They are still freed by reference count when
    the cache drops them. No collection first: it would traverse the whole cache and hold the
    first session back, for the few reference cycles loading leaves (kept, then, for the
    process's life). Returns how many objects are kept out."""
    gc.freeze()
    gc.enable()
    return gc.get_freeze_count()
