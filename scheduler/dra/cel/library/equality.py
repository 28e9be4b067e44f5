"""CEL's equality and ordering, where cel-python compares as Python does: `==` and `!=`
across types (`1 == 1.0`, `"a" == 1` is false), `<`, `<=`, `>` and `>=` across numeric
types (`1 < 1.5`), `in` by CEL's equality, and compareTo, isLessThan and isGreaterThan of
Quantity and Semver."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import celpy.celtypes as ct
from celpy.evaluation import CELEvalError

from scheduler.dra.cel.library.quantity import Quantity
from scheduler.dra.cel.library.semver import Semver
from scheduler.dra.cel.library.values import first_error, is_bool, is_number, no_overload


def type_name(value: Any) -> str:
    """The CEL type name of a value, as cel-go's messages print it (cel-python's operators
    sometimes answer plain Python values: "a" + "b" is a str)."""
    if is_bool(value):
        return "bool"
    if isinstance(value, ct.UintType):
        return "uint"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, Quantity):
        return "kubernetes.Quantity"
    if isinstance(value, Semver):
        return "kubernetes.Semver"
    if value is None:
        return "null_type"
    return type(value).__name__


def equal(left: Any, right: Any) -> Any:
    """CEL's `==`: values of different types are not equal (numbers compare across
    int, uint and double); a Quantity or Semver on the left wants its own type on the
    right, as their Equal methods in Kubernetes do."""
    failed = first_error((left, right))
    if failed is not None:
        return failed
    answer = values_equal(left, right)
    return answer if isinstance(answer, CELEvalError) else ct.BoolType(answer)


def not_equal(left: Any, right: Any) -> Any:
    """CEL's `!=`."""
    answer = equal(left, right)
    return answer if isinstance(answer, CELEvalError) else ct.BoolType(not answer)


def values_equal(left: Any, right: Any) -> bool | CELEvalError:
    """CEL's equality as a Python bool (lists and maps element by element), or the error
    a Quantity or Semver compared with another type raises."""
    if isinstance(left, Quantity | Semver):
        if type(right) is not type(left):
            return no_overload("_==_", left, right)
        if isinstance(left, Quantity) and isinstance(right, Quantity):
            return bool(left.value == right.value)
        return bool(left == right)
    if is_number(left) and is_number(right):
        return order_of(left, right) == 0
    if type_name(left) != type_name(right):
        return False
    if isinstance(left, list):
        if len(left) != len(right):
            return False
        for a, b in zip(left, right, strict=True):
            same = values_equal(a, b)
            if same is not True:
                return same
        return True
    if isinstance(left, dict):
        if len(left) != len(right) or set(left) != set(right):
            return False
        for key, value in left.items():
            same = values_equal(value, right[key])
            if same is not True:
                return same
        return True
    return bool(left == right)


def _ordered(name: str, attribute: str, test: Callable[[int], bool]) -> Callable[[Any, Any], Any]:
    def compare(left: Any, right: Any) -> Any:
        failed = first_error((left, right))
        if failed is not None:
            return failed
        order = order_of(left, right)
        if order is None:
            return no_overload(name, left, right)
        return ct.BoolType(test(order))

    # cel-python's transpiler calls a function by its module and qualified name.
    compare.__name__ = compare.__qualname__ = attribute
    return compare


def order_of(left: Any, right: Any) -> int | None:
    """-1, 0 or 1 as CEL orders two values (numbers across types), None when CEL does not
    order them."""
    if is_number(left) and is_number(right):
        if isinstance(left, float) or isinstance(right, float):
            a, b = float(left), float(right)
        else:
            a, b = int(left), int(right)
        return 0 if a == b else (-1 if a < b else 1)
    if is_bool(left) and is_bool(right):
        return int(bool(left)) - int(bool(right))
    for kind in (str, bytes, ct.TimestampType, ct.DurationType):
        if isinstance(left, kind) and isinstance(right, kind):
            a_value: Any = left
            return 0 if a_value == right else (-1 if a_value < right else 1)
    return None


less = _ordered("_<_", "less", lambda order: order < 0)
less_equal = _ordered("_<=_", "less_equal", lambda order: order <= 0)
greater = _ordered("_>_", "greater", lambda order: order > 0)
greater_equal = _ordered("_>=_", "greater_equal", lambda order: order >= 0)


def member_of(item: Any, container: Any) -> Any:
    """CEL's `in`: an element equal to the item (CEL's equality), or a map's key."""
    failed = first_error((item, container))
    if failed is not None:
        return failed
    if isinstance(container, dict):
        return ct.BoolType(item in container)
    if isinstance(container, list):
        return ct.BoolType(any(values_equal(item, element) is True for element in container))
    return no_overload("@in", item, container)


def compare_to(left: Any, right: Any) -> Any:
    """<Quantity|Semver>.compareTo(same type): -1, 0 or 1."""
    order = _compare_typed("compareTo", left, right)
    return order if isinstance(order, CELEvalError) else ct.IntType(order)


def is_less_than(left: Any, right: Any) -> Any:
    """<Quantity|Semver>.isLessThan(same type)."""
    order = _compare_typed("isLessThan", left, right)
    return order if isinstance(order, CELEvalError) else ct.BoolType(order < 0)


def is_greater_than(left: Any, right: Any) -> Any:
    """<Quantity|Semver>.isGreaterThan(same type)."""
    order = _compare_typed("isGreaterThan", left, right)
    return order if isinstance(order, CELEvalError) else ct.BoolType(order > 0)


def _compare_typed(name: str, left: Any, right: Any) -> int | CELEvalError:
    failed = first_error((left, right))
    if failed is not None:
        return failed
    if isinstance(left, Quantity) and isinstance(right, Quantity):
        return (left.value > right.value) - (left.value < right.value)
    if isinstance(left, Semver) and isinstance(right, Semver):
        return left.compare(right)
    return no_overload(name, left, right)
