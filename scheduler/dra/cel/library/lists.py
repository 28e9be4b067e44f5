"""Kubernetes' list library and cel-go's lists extension (version 3): isSorted, sum, min,
max, `lists.range`, slice, flatten, distinct, reverse and sort, elements compared and
ordered as CEL does."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import cmp_to_key
from typing import Any, cast

import celpy.celtypes as ct

from scheduler.dra.cel.library.equality import order_of, values_equal
from scheduler.dra.cel.library.values import (
    LISTS,
    error,
    first_error,
    is_bool,
    is_number,
    no_overload,
)


def _list_method(name: str) -> Callable[[Callable[..., Any]], Any]:
    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        def method(receiver: Any, *args: Any) -> Any:
            failed = first_error((receiver, *args))
            if failed is not None:
                return failed
            if not isinstance(receiver, list):
                return no_overload(name, receiver, *args)
            return function(receiver, *args)

        method.__name__ = function.__name__
        method.__qualname__ = function.__qualname__
        return method

    return wrap


@_list_method("isSorted")
def is_sorted(items: ct.ListType) -> Any:
    """<list>.isSorted()."""
    for left, right in itertools.pairwise(items):
        order = order_of(left, right)
        if order is None:
            return no_overload("isSorted", left, right)
        if order > 0:
            return ct.BoolType(False)
    return ct.BoolType(True)


@_list_method("sum")
def sum_of(items: ct.ListType) -> Any:
    """<list>.sum(): 0 for an empty list."""
    total: Any = ct.IntType(0)
    for index, item in enumerate(items):
        if not is_number(item):
            return no_overload("sum", item)
        total = item if index == 0 else total + item
    return total


def _extreme(name: str, pick: Callable[[int], bool]) -> Callable[[Any], Any]:
    @_list_method(name)
    def extreme(items: ct.ListType) -> Any:
        if not items:
            return error(f"{name}(list) argument must not be empty")
        best = items[0]
        for item in items[1:]:
            order = order_of(item, best)
            if order is None:
                return no_overload(name, item, best)
            if pick(order):
                best = item
        return best

    extreme.__name__ = extreme.__qualname__ = f"list_{name}"
    return cast(Callable[[Any], Any], extreme)


list_min = _extreme("min", lambda order: order < 0)
list_max = _extreme("max", lambda order: order > 0)


def list_range(space: Any, count: Any) -> Any:
    """lists.range(int): [0, 1, ..., count-1]."""
    if space is not LISTS or not isinstance(count, int) or is_bool(count):
        return first_error((count,)) or no_overload("range", space, count)
    return ct.ListType([ct.IntType(i) for i in range(int(count))])


@_list_method("slice")
def list_slice(items: ct.ListType, start: Any, end: Any) -> Any:
    """<list>.slice(int, int)."""
    if not isinstance(start, int) or not isinstance(end, int):
        return no_overload("slice", items, start, end)
    if start < 0 or end < 0:
        return error(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        return error(
            f"cannot slice({start}, {end}), start index must be less than or equal to end index"
        )
    if end > len(items):
        return error(f"cannot slice({start}, {end}), list is length {len(items)}")
    return ct.ListType(items[int(start) : int(end)])


@_list_method("flatten")
def flatten(items: ct.ListType, depth: Any = None) -> Any:
    """<list>.flatten([int])."""
    levels = 1 if depth is None else int(depth)
    if levels < 0:
        return error("level must be non-negative")
    return ct.ListType(_flattened(items, levels))


def _flattened(items: ct.ListType, levels: int) -> list[Any]:
    found: list[Any] = []
    for item in items:
        if isinstance(item, list) and levels > 0:
            found.extend(_flattened(item, levels - 1))
        else:
            found.append(item)
    return found


@_list_method("distinct")
def distinct(items: ct.ListType) -> Any:
    """<list>.distinct(): first occurrences, in order."""
    kept: list[Any] = []
    for item in items:
        if not any(values_equal(item, other) is True for other in kept):
            kept.append(item)
    return ct.ListType(kept)


@_list_method("reverse")
def reverse(items: ct.ListType) -> Any:
    """<list>.reverse()."""
    return ct.ListType(list(reversed(items)))


@_list_method("sort")
def sort(items: ct.ListType) -> Any:
    """<list>.sort(): elements of one comparable type."""
    if items and any(order_of(items[0], item) is None for item in items):
        return error("list elements must have the same type")
    return ct.ListType(sorted(items, key=cmp_to_key(lambda a, b: order_of(a, b) or 0)))
