"""The process's heap: big blocks in pages of their own, freed memory given back now and then.

glibc's malloc keeps freed memory in its heap for reuse and returns it only from the top of
the heap, so a long-lived process whose objects come and go (pods, watch events, sessions'
copies of the cluster) holds more and more pages it no longer uses, interleaved with ones it
does: RSS climbs while the memory Python's objects take stays flat (tracemalloc shows it),
and malloc_trim(0), which releases the free pages inside the heap too, gives it back. A
container's memory limit counts these pages, so the scheduler trims about once a minute.

Trimming alone does not hold a long-lived leader's RSS flat. glibc gives an allocation of
128 KiB or more pages of its own, but each time such a block is freed it raises that
threshold to the block's size, so later big blocks (TLS read buffers, list pages, watch
chunks, a session's lists over every pod) come from the heap and, freed, leave holes that
trimming cannot close. So the threshold is pinned (MMAP_THRESHOLD says at what, and why);
then RSS rises only when a connection opens (its TLS buffer) and stays flat once sockets
stop opening. docs/performance.md, "The heap and the collector", has the soaks' figures.

Elsewhere than glibc both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger(__name__)

# Seconds between two trims; one costs a walk of the heap.
TRIM_EVERY = 60.0


# glibc's mallopt parameter for the size from which an allocation gets pages of its own.
M_MMAP_THRESHOLD = -3
# Allocations this big or bigger (a list page, a session's lists over 50,000 pods) get pages
# of their own, returned to the OS when freed. glibc's default starts at 128 KiB but rises to
# the size of every such block freed, after which those blocks come from the heap and, freed,
# leave holes among the pages that live objects hold: so the threshold is pinned. Pinned above
# a TLS read: asyncio reads a TLS connection by asking for up to 256 KiB
# (asyncio.sslproto.SSLProtocol.max_size), twice or more each time data comes, and a block
# that size with pages of its own costs an mmap and an munmap each time, several times what
# the heap costs: below a TLS read, those reads were a tenth of muster's CPU per bound pod
# (docs/performance.md has the figures). Blocks of 128 to 512 KiB come from the heap: the
# reads' live within a call; a TLS connection's own 256 KiB buffer
# lives as long as the connection, and the hole it leaves when that closes is among the free
# pages the minute's trim gives back (malloc_trim releases them inside the heap too).
MMAP_THRESHOLD = 512 * 1024


class _Libc(Protocol):
    def malloc_trim(self, pad: int) -> int: ...

    def mallopt(self, param: int, value: int) -> int: ...


def glibc() -> _Libc | None:
    """The C library when it is glibc (it has malloc_trim), else None."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    if not hasattr(libc, "malloc_trim"):
        return None
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    libc.malloc_trim.restype = ctypes.c_int
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.mallopt.restype = ctypes.c_int
    return libc


def pin_mmap_threshold(libc: _Libc | None, threshold: int = MMAP_THRESHOLD) -> bool:
    """Keep big allocations in pages of their own for the process's life (glibc's dynamic
    threshold off); whether glibc took it. Elsewhere than glibc it does nothing."""
    if libc is None:
        return False
    if libc.mallopt(M_MMAP_THRESHOLD, threshold) != 1:
        log.warning("glibc refused an mmap threshold of %d bytes; its own is kept", threshold)
        return False
    return True


class HeapTrimmer:
    """Calls malloc_trim(0) at most every `every` seconds of `clock` time."""

    def __init__(
        self,
        libc: _Libc | None,
        *,
        every: float = TRIM_EVERY,
        clock: Callable[[], float],
    ) -> None:
        self._libc = libc
        self._every = every
        self._clock = clock
        self._last = clock()
        self.trims = 0

    def trim_if_due(self) -> bool:
        """Trim when `every` seconds passed since the last; whether it did."""
        if self._libc is None:
            return False
        now = self._clock()
        if now - self._last < self._every:
            return False
        self._last = now
        self._libc.malloc_trim(0)
        self.trims += 1
        return True
