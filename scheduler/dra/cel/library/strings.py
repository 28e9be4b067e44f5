"""cel-go's strings extension (version 2) and Kubernetes' regex library: the methods of a
string (charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split, substring,
trim, find, findAll, contains), a list's join, and `strings.quote`; indexOf and lastIndexOf
of a list too, whose names they share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import celpy.celtypes as ct
import re2

from scheduler.dra.cel.library.equality import values_equal
from scheduler.dra.cel.library.sets import set_contains
from scheduler.dra.cel.library.values import SETS, STRINGS, error, first_error, is_bool, no_overload


def _string_method(name: str, *arg_kinds: type) -> Callable[[Callable[..., Any]], Any]:
    """Check the receiver is a string and the arguments are of the kinds given (an int is
    never a bool), passing errors on; the decorated function gets plain Python values."""

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        def method(receiver: Any, *args: Any) -> Any:
            failed = first_error((receiver, *args))
            if failed is not None:
                return failed
            if not isinstance(receiver, str) or not _kinds_ok(args, arg_kinds):
                return no_overload(name, receiver, *args)
            return function(str(receiver), *args)

        method.__name__ = function.__name__
        method.__qualname__ = function.__qualname__
        return method

    return wrap


def _kinds_ok(args: tuple[Any, ...], kinds: tuple[type, ...]) -> bool:
    if len(args) > len(kinds):
        return False
    for arg, kind in zip(args, kinds, strict=False):
        if is_bool(arg) and kind is not bool:
            return False
        if not isinstance(arg, kind):
            return False
    return True


@_string_method("charAt", int)
def char_at(text: str, index: Any) -> Any:
    """<string>.charAt(int): "" at the end, an error past it."""
    if index < 0 or index > len(text):
        return error(f"index out of range: {index}")
    return ct.StringType(text[index : index + 1])


def index_of(receiver: Any, item: Any, start: Any = None) -> Any:
    """<string>.indexOf(string[, int]) or <list>.indexOf(value)."""
    if isinstance(receiver, list) and start is None:
        failed = first_error((item,))
        if failed is not None:
            return failed
        for position, element in enumerate(receiver):
            if values_equal(element, item) is True:
                return ct.IntType(position)
        return ct.IntType(-1)
    return _string_index_of(receiver, item, *(() if start is None else (start,)))


@_string_method("indexOf", str, int)
def _string_index_of(text: str, search: Any, start: Any = 0) -> Any:
    if start < 0 or start > len(text):
        return error(f"index out of range: {start}")
    return ct.IntType(text.find(str(search), int(start)))


def last_index_of(receiver: Any, item: Any, start: Any = None) -> Any:
    """<string>.lastIndexOf(string[, int]) or <list>.lastIndexOf(value)."""
    if isinstance(receiver, list) and start is None:
        failed = first_error((item,))
        if failed is not None:
            return failed
        for position in range(len(receiver) - 1, -1, -1):
            if values_equal(receiver[position], item) is True:
                return ct.IntType(position)
        return ct.IntType(-1)
    return _string_last_index_of(receiver, item, *(() if start is None else (start,)))


@_string_method("lastIndexOf", str, int)
def _string_last_index_of(text: str, search: Any, start: Any = None) -> Any:
    if start is None:
        start = len(text)
    if start < 0 or start > len(text):
        return error(f"index out of range: {start}")
    return ct.IntType(text.rfind(str(search), 0, int(start) + len(search)))


@_string_method("lowerAscii")
def lower_ascii(text: str) -> Any:
    """<string>.lowerAscii(): only ASCII letters change."""
    return ct.StringType("".join(c.lower() if c.isascii() else c for c in text))


@_string_method("upperAscii")
def upper_ascii(text: str) -> Any:
    """<string>.upperAscii(): only ASCII letters change."""
    return ct.StringType("".join(c.upper() if c.isascii() else c for c in text))


@_string_method("replace", str, str, int)
def replace(text: str, old: Any, new: Any, limit: Any = -1) -> Any:
    """<string>.replace(string, string[, int]): a negative limit replaces all."""
    return ct.StringType(text.replace(str(old), str(new), int(limit)))


@_string_method("split", str, int)
def split(text: str, separator: Any, limit: Any = -1) -> Any:
    """<string>.split(string[, int]): Go's strings.SplitN."""
    limit = int(limit)
    if limit == 0:
        return ct.ListType([])
    if separator == "":
        pieces = list(text)
        if 0 < limit < len(pieces):
            pieces = [*pieces[: limit - 1], "".join(pieces[limit - 1 :])]
    else:
        pieces = text.split(str(separator), limit - 1 if limit > 0 else -1)
    return ct.ListType([ct.StringType(piece) for piece in pieces])


@_string_method("substring", int, int)
def substring(text: str, start: Any, end: Any = None) -> Any:
    """<string>.substring(int[, int])."""
    stop = len(text) if end is None else int(end)
    if start < 0 or start > len(text):
        return error(f"index out of range: {start}")
    if stop < start or stop > len(text):
        return error(f"invalid substring range. start: {start}, end: {stop}")
    return ct.StringType(text[int(start) : stop])


@_string_method("trim")
def trim(text: str) -> Any:
    """<string>.trim(): Unicode white space off both ends."""
    return ct.StringType(text.strip())


def join(receiver: Any, separator: Any = None) -> Any:
    """<list<string>>.join([string])."""
    failed = first_error((receiver, separator))
    if failed is not None:
        return failed
    if not isinstance(receiver, list) or not (separator is None or isinstance(separator, str)):
        return no_overload("join", receiver, separator)
    if not all(isinstance(item, str) for item in receiver):
        return no_overload("join", receiver)
    return ct.StringType((separator or "").join(receiver))


def quote(space: Any, text: Any) -> Any:
    """strings.quote(string)."""
    if space is not STRINGS or not isinstance(text, str):
        return first_error((text,)) or no_overload("quote", space, text)
    escapes = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    escapes |= {"\v": "\\v", "\\": "\\\\", '"': '\\"'}
    return ct.StringType('"' + "".join(escapes.get(c, c) for c in str(text)) + '"')


@_string_method("find", str)
def find(text: str, pattern: Any) -> Any:
    """<string>.find(regex): the first match, or ""."""
    try:
        found = re2.search(str(pattern), text)
    except re2.error as problem:
        return error(f"Illegal regex: {problem}")
    return ct.StringType(found.group(0) if found else "")


@_string_method("findAll", str, int)
def find_all(text: str, pattern: Any, limit: Any = -1) -> Any:
    """<string>.findAll(regex[, int])."""
    try:
        found = [m.group(0) for m in re2.finditer(str(pattern), text)]
    except re2.error as problem:
        return error(f"Illegal regex: {problem}")
    if limit >= 0:
        found = found[: int(limit)]
    return ct.ListType([ct.StringType(item) for item in found])


def contains(receiver: Any, *args: Any) -> Any:
    """<string>.contains(string), or sets.contains(list, list)."""
    if receiver is SETS:
        return set_contains(args)
    failed = first_error((receiver, *args))
    if failed is not None:
        return failed
    if len(args) != 1 or not isinstance(receiver, str):
        return no_overload("contains", receiver, *args)
    if not isinstance(args[0], str):
        return no_overload("contains", receiver, *args)
    return ct.BoolType(str(args[0]) in str(receiver))
