"""One copy of equal values many cached records hold (the members of a gang carry the same
labels, the same claims from one template): a table by key, bounded, so the values of
long-gone objects are not kept for ever."""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def alike(table: dict[K, V], key: K, value: V, limit: int = 8192) -> V:
    """The value kept for `key` (an equal one seen before), else `value`, kept for it; a
    table of `limit` keys starts again. Shared values are read only."""
    shared = table.get(key)
    if shared is None:
        if len(table) >= limit:
            table.clear()
        shared = table[key] = value
    return shared
