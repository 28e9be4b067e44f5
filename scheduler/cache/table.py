"""Table: the cached objects of one kind by key, and what sessions read of them, made again
only after a change.

A snapshot hands every session the same read-only view of such a kind (storage objects,
HyperNodes, PodDisruptionBudgets, ProvisioningRequests), so a session over a cluster whose
kind did not move copies nothing of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Generic, TypeAlias, TypeVar

V = TypeVar("V")
P = TypeVar("P")


def read_only(records: Mapping[str, V]) -> Mapping[str, V]:
    """A read-only copy of the records: what a session reads of most kinds."""
    return MappingProxyType(dict(records))


class Table(Generic[V, P]):
    """Records of one kind by key, and the view sessions share of them (`publish` makes it
    from the records), kept until a record is put or removed."""

    def __init__(self, publish: Callable[[Mapping[str, V]], P]) -> None:
        self._records: dict[str, V] = {}
        self._publish = publish
        self._view: P | None = None

    def __len__(self) -> int:
        return len(self._records)

    def get(self, key: str) -> V | None:
        """The record of `key`, if there is one."""
        return self._records.get(key)

    def values(self) -> Iterable[V]:
        """Every record."""
        return self._records.values()

    def put(self, key: str, record: V) -> None:
        """Keep `record` under `key` (sessions see it from the next view)."""
        self._records[key] = record
        self._view = None

    def remove(self, key: str) -> bool:
        """Forget the record of `key`; whether there was one."""
        if self._records.pop(key, None) is None:
            return False
        self._view = None
        return True

    def view(self) -> P:
        """What sessions read of the records (made once per change, not per session)."""
        if self._view is None:
            self._view = self._publish(self._records)
        return self._view


# A table sessions read as a read-only mapping of its records.
ReadOnlyTable: TypeAlias = Table[V, Mapping[str, V]]
