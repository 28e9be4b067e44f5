"""Kubernetes' Quantity type in CEL and its functions: `quantity()`, `isQuantity()`,
`sign()`, and the methods asApproximateFloat, isInteger, asInteger, add and sub."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import celpy.celtypes as ct

from scheduler.api.errors import InvalidQuantity
from scheduler.api.quantity import parse_quantity
from scheduler.dra.cel.library.values import error, first_error, is_bool, no_overload

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


class Quantity:
    """Kubernetes' Quantity type in CEL: an exact value compared as resource.Quantity.Cmp."""

    __slots__ = ("value",)

    def __init__(self, value: Fraction) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"quantity({self.value})"


def quantity(text: Any) -> Any:
    """quantity(string): a Quantity, or an error naming the string."""
    if not isinstance(text, str):
        return first_error((text,)) or no_overload("quantity", text)
    try:
        return Quantity(parse_quantity(str(text)))
    except InvalidQuantity:
        return error(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )


def is_quantity(text: Any) -> Any:
    """isQuantity(string)."""
    if not isinstance(text, str):
        return first_error((text,)) or no_overload("isQuantity", text)
    try:
        parse_quantity(str(text))
    except InvalidQuantity:
        return ct.BoolType(False)
    return ct.BoolType(True)


def sign(value: Any) -> Any:
    """sign(Quantity): -1, 0 or 1."""
    if not isinstance(value, Quantity):
        return first_error((value,)) or no_overload("sign", value)
    return ct.IntType((value.value > 0) - (value.value < 0))


def as_approximate_float(value: Any) -> Any:
    """<Quantity>.asApproximateFloat()."""
    if not isinstance(value, Quantity):
        return first_error((value,)) or no_overload("asApproximateFloat", value)
    return ct.DoubleType(float(value.value))


def is_integer(value: Any) -> Any:
    """<Quantity>.isInteger(): a whole number that fits in an int64."""
    if not isinstance(value, Quantity):
        return first_error((value,)) or no_overload("isInteger", value)
    return ct.BoolType(_as_int64(value.value) is not None)


def as_integer(value: Any) -> Any:
    """<Quantity>.asInteger(), an error when it is not a whole int64."""
    if not isinstance(value, Quantity):
        return first_error((value,)) or no_overload("asInteger", value)
    number = _as_int64(value.value)
    if number is None:
        return error("cannot convert value to integer")
    return ct.IntType(number)


def _as_int64(value: Fraction) -> int | None:
    if value.denominator != 1 or not _INT64_MIN <= value.numerator <= _INT64_MAX:
        return None
    return value.numerator


def add(left: Any, right: Any) -> Any:
    """<Quantity>.add(Quantity | int)."""
    return _arithmetic("add", left, right, 1)


def sub(left: Any, right: Any) -> Any:
    """<Quantity>.sub(Quantity | int)."""
    return _arithmetic("sub", left, right, -1)


def _arithmetic(name: str, left: Any, right: Any, direction: int) -> Any:
    failed = first_error((left, right))
    if failed is not None:
        return failed
    if isinstance(left, Quantity):
        if isinstance(right, Quantity):
            return Quantity(left.value + direction * right.value)
        if isinstance(right, int) and not is_bool(right):
            return Quantity(left.value + direction * int(right))
    return no_overload(name, left, right)
