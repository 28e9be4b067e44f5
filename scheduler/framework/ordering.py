"""Heaps for the session's orders: by a comparison (queues) or by a sort key (jobs)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("compare", "item", "sequence")

    def __init__(self, item: T, sequence: int, compare: Callable[[T, T], int]) -> None:
        self.item = item
        self.sequence = sequence
        self.compare = compare

    def __lt__(self, other: _Entry[T]) -> bool:
        answer = self.compare(self.item, other.item)
        if answer:
            return answer < 0
        return self.sequence < other.sequence


class OrderedHeap(Generic[T]):
    """Pops the item the comparison puts first; ties go to the earliest pushed.

    The comparison is asked when items are pushed and popped, so an order that
    changes during a session (shares move as tasks are placed) is honoured for
    items pushed back after the change, as in Volcano's priority queues.
    """

    def __init__(self, compare: Callable[[T, T], int], items: Iterable[T] = ()) -> None:
        self._compare = compare
        self._sequence = itertools.count()
        self._heap = [_Entry(item, next(self._sequence), compare) for item in items]
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        """Add an item."""
        heapq.heappush(self._heap, _Entry(item, next(self._sequence), self._compare))

    def pop(self) -> T:
        """Remove and return the first item."""
        return heapq.heappop(self._heap).item

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)


class KeyHeap(Generic[T]):
    """Pops the item with the smallest key; ties go to the earliest pushed.

    The key is taken when an item is pushed, so an item pushed back after its standing
    changed (a queue's share moved) takes its new place, as OrderedHeap's comparison does.

    The items it is built with (a session's jobs of one queue) are sorted once, in a run
    popped from its end: on the mostly ordered input a cache yields, a sort compares about
    once an item, where a heap's pops compare twice per level (over 1,250 jobs, 2% of a
    session went to those comparisons). Items pushed later go to a heap; pop takes the
    smaller of the two heads.
    """

    def __init__(self, key: Callable[[T], Any], items: Iterable[T] = ()) -> None:
        self._key = key
        self._sequence = itertools.count()
        # Largest first, so the smallest pops off the end.
        self._run: list[tuple[Any, int, T]] = [
            (key(item), next(self._sequence), item) for item in items
        ]
        self._run.sort(reverse=True)
        self._heap: list[tuple[Any, int, T]] = []

    def push(self, item: T) -> None:
        """Add an item."""
        heapq.heappush(self._heap, (self._key(item), next(self._sequence), item))

    def pop(self) -> T:
        """Remove and return the first item."""
        run, heap = self._run, self._heap
        # Entries never tie (their sequence numbers differ), so items are never compared.
        if heap and (not run or heap[0] < run[-1]):
            return heapq.heappop(heap)[2]
        return run.pop()[2]

    def __len__(self) -> int:
        return len(self._run) + len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._run) or bool(self._heap)
