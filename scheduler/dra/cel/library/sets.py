"""cel-go's sets extension: `sets.contains`, `sets.equivalent` and `sets.intersects` of two
lists, elements compared by CEL's equality."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import celpy.celtypes as ct

from scheduler.dra.cel.library.equality import values_equal
from scheduler.dra.cel.library.values import SETS, first_error, no_overload


def _in(item: Any, items: ct.ListType) -> bool:
    return any(values_equal(item, element) is True for element in items)


def _sets(name: str, args: tuple[Any, ...], test: Callable[[Any, Any], bool]) -> Any:
    failed = first_error(args)
    if failed is not None:
        return failed
    if len(args) != 2 or not all(isinstance(arg, list) for arg in args):
        return no_overload(f"sets.{name}", *args)
    return ct.BoolType(test(args[0], args[1]))


def set_contains(args: tuple[Any, ...]) -> Any:
    """sets.contains(list, list): every element of the second is in the first (`contains`
    in dra/cel/library/strings.py, whose name it shares, hands it over)."""
    return _sets("contains", args, lambda a, b: all(_in(item, a) for item in b))


def equivalent(space: Any, *args: Any) -> Any:
    """sets.equivalent(list, list): each contains the other."""
    if space is not SETS:
        return no_overload("equivalent", space, *args)
    return _sets(
        "equivalent",
        args,
        lambda a, b: all(_in(item, b) for item in a) and all(_in(item, a) for item in b),
    )


def intersects(space: Any, *args: Any) -> Any:
    """sets.intersects(list, list): an element in common."""
    if space is not SETS:
        return no_overload("intersects", space, *args)
    return _sets("intersects", args, lambda a, b: any(_in(item, b) for item in a))
