"""CEL's `!`, `/`, `%` and `size()` where cel-python answers otherwise than cel-go: `!` of a
bool only, a zero divisor in cel-go's words, the size of a string, bytes, a list or a map
only."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import celpy.celtypes as ct

from scheduler.dra.cel.library.values import error, first_error, is_bool, no_overload


def logical_not(value: Any) -> Any:
    """CEL's `!`: of a bool only (cel-python's takes only its own BoolType)."""
    failed = first_error((value,))
    if failed is not None:
        return failed
    if not is_bool(value):
        return no_overload("!_", value)
    return ct.BoolType(not value)


def divide(left: Any, right: Any) -> Any:
    """CEL's `/`, with cel-go's words for a zero divisor (cel-python's differ)."""
    return _arithmetic_by_zero(operator.truediv, left, right, "division by zero")


def modulus(left: Any, right: Any) -> Any:
    """CEL's `%`, with cel-go's words for a zero divisor."""
    return _arithmetic_by_zero(operator.mod, left, right, "modulus by zero")


def _arithmetic_by_zero(
    apply: Callable[[Any, Any], Any], left: Any, right: Any, message: str
) -> Any:
    failed = first_error((left, right))
    if failed is not None:
        return failed
    try:
        return apply(left, right)
    except ZeroDivisionError:
        return error(message)


def size(value: Any) -> Any:
    """size(): of a string, bytes, a list or a map (cel-python's takes len() of anything)."""
    failed = first_error((value,))
    if failed is not None:
        return failed
    if isinstance(value, str | bytes | list | dict):
        return ct.IntType(len(value))
    return no_overload("size", value)
