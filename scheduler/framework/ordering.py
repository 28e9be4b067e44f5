"""A heap ordered by a comparison function (the session's tiered queue and job orders)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

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
