"""What every family of the library shares: runtime errors as CEL values, the receivers of
namespaced functions, and the tests of a value's kind CEL makes where Python would not.

A function answers a CELEvalError (a value, as cel-python's own functions do) for a runtime
error, in cel-go's words where a selector's author would read them; an argument that is
already an error is passed on (`first_error`). Namespaced functions (`lists.range(3)`,
`sets.contains(a, b)`, `strings.quote(s)`) reach the library with a `Namespace` marker as
their receiver: cel-python reads `lists` as a variable, which dra/cel/selector.py binds to
the marker.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import celpy.celtypes as ct
from celpy.evaluation import CELEvalError


def error(message: str) -> CELEvalError:
    """A runtime error as a CEL value."""
    return CELEvalError(message)


def no_overload(name: str, *args: Any) -> CELEvalError:
    """cel-go's answer when no overload takes these arguments (it names neither)."""
    return error("no such overload")


class Namespace:
    """The receiver of a namespaced function: `lists`, `sets` or `strings`."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


LISTS = Namespace("lists")
SETS = Namespace("sets")
STRINGS = Namespace("strings")
NAMESPACES = {space.name: space for space in (LISTS, SETS, STRINGS)}


def is_bool(value: Any) -> bool:
    """Whether the value is a CEL bool (cel-python's BoolType is an int, not a bool)."""
    return isinstance(value, bool | ct.BoolType)


def first_error(args: Iterable[Any]) -> CELEvalError | None:
    """The first argument that is already an error, to be passed on."""
    for arg in args:
        if isinstance(arg, CELEvalError):
            return arg
    return None


def is_number(value: Any) -> bool:
    """Whether the value is an int, uint or double (a bool is none of them)."""
    return isinstance(value, int | float) and not is_bool(value)
