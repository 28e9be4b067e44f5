"""The Kubernetes CEL library a device selector may call, on cel-python's values.

kube-scheduler evaluates selectors in Kubernetes' CEL environment: standard CEL with
heterogeneous equality and cross-type numeric comparisons, the Quantity and Semver types
(`quantity()`, `semver()` and their methods), the strings extension (version 2), the
regex, lists and sets libraries. cel-python implements standard CEL only, and compares as
Python does where CEL differs: `FUNCTIONS` supplies the rest, and overrides the equality,
ordering and `in` operators with CEL's rules (`1 == 1.0`, `"a" == 1` is false, `1 < 1.5`).

A function answers a CELEvalError (a value, as cel-python's own functions do) for a
runtime error, in cel-go's words where a selector's author would read them; an argument
that is already an error is passed on. Namespaced functions (`lists.range(3)`,
`sets.contains(a, b)`, `strings.quote(s)`) reach here with a `Namespace` marker as their
receiver: cel-python reads `lists` as a variable, which dra/cel.py binds to the marker.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable
from fractions import Fraction
from functools import cmp_to_key, total_ordering
from typing import Any, cast

import celpy.celtypes as ct
import re2
from celpy.evaluation import CELEvalError

from scheduler.api.errors import InvalidQuantity
from scheduler.api.quantity import parse_quantity

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


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


class Quantity:
    """Kubernetes' Quantity type in CEL: an exact value compared as resource.Quantity.Cmp."""

    __slots__ = ("value",)

    def __init__(self, value: Fraction) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"quantity({self.value})"


@total_ordering
class Semver:
    """Kubernetes' Semver type in CEL: semver.org 2.0.0, compared as blang/semver does
    (build metadata ignored; a pre-release sorts before its release)."""

    __slots__ = ("build", "major", "minor", "patch", "prerelease")

    def __init__(
        self, major: int, minor: int, patch: int, prerelease: tuple[str, ...], build: str
    ) -> None:
        self.major = major
        self.minor = minor
        self.patch = patch
        self.prerelease = prerelease
        self.build = build

    def compare(self, other: Semver) -> int:
        """-1, 0 or 1, as semver.Version.Compare."""
        mine = (self.major, self.minor, self.patch)
        theirs = (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        if self.prerelease == other.prerelease:
            return 0
        if not self.prerelease:
            return 1
        if not other.prerelease:
            return -1
        for left, right in zip(self.prerelease, other.prerelease, strict=False):
            order = _compare_identifier(left, right)
            if order:
                return order
        return -1 if len(self.prerelease) < len(other.prerelease) else 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __lt__(self, other: Semver) -> bool:
        return self.compare(other) < 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.prerelease))

    def __repr__(self) -> str:
        return f"semver({self.major}.{self.minor}.{self.patch})"


def _compare_identifier(left: str, right: str) -> int:
    # A numeric identifier sorts before an alphanumeric one; numbers compare as numbers.
    left_number, right_number = left.isdigit(), right.isdigit()
    if left_number and right_number:
        a, b = int(left), int(right)
    elif left_number or right_number:
        return -1 if left_number else 1
    else:
        a, b = left, right  # type: ignore[assignment]
    return 0 if a == b else (-1 if a < b else 1)


def parse_semver(text: str) -> Semver:
    """A strict semver.org 2.0.0 version (blang/semver's Parse); ValueError says why not."""
    rest, _, build = text.partition("+")
    if "+" in text and not _identifiers_ok(build.split("."), numeric_rule=False):
        raise ValueError(f"invalid build metadata in {text!r}")
    core, dash, prerelease = rest.partition("-")
    parts = core.split(".")
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    numbers: list[int] = []
    for name, part in zip(("Major", "Minor", "Patch"), parts, strict=True):
        if not part.isdigit() or not part.isascii():
            raise ValueError(f"Invalid character(s) found in {name.lower()} number {part!r}")
        if len(part) > 1 and part[0] == "0":
            raise ValueError(f"{name} number must not contain leading zeroes {part!r}")
        numbers.append(int(part))
    identifiers: tuple[str, ...] = ()
    if dash:
        identifiers = tuple(prerelease.split("."))
        if not _identifiers_ok(list(identifiers), numeric_rule=True):
            raise ValueError(f"invalid pre-release in {text!r}")
    return Semver(numbers[0], numbers[1], numbers[2], identifiers, build)


def _identifiers_ok(identifiers: list[str], *, numeric_rule: bool) -> bool:
    for identifier in identifiers:
        if not identifier or not all(c.isascii() and (c.isalnum() or c == "-") for c in identifier):
            return False
        if numeric_rule and identifier.isdigit() and len(identifier) > 1 and identifier[0] == "0":
            return False
    return True


def _normalized(text: str) -> str:
    # Kubernetes' normalizeAndParse: no "v", no leading zeros, missing minor/patch as 0.
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for index, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or not part[0].isdigit():
                part = "0" + part
            parts[index] = part
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def type_name(value: Any) -> str:
    """The CEL type name of a value, as cel-go's messages print it (cel-python's operators
    sometimes answer plain Python values: "a" + "b" is a str)."""
    if _is_bool(value):
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


def _is_bool(value: Any) -> bool:
    # cel-python's BoolType is an int, not a bool.
    return isinstance(value, bool | ct.BoolType)


def _first_error(args: Iterable[Any]) -> CELEvalError | None:
    for arg in args:
        if isinstance(arg, CELEvalError):
            return arg
    return None


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not _is_bool(value)


# Equality, ordering and membership -------------------------------------------------------


def equal(left: Any, right: Any) -> Any:
    """CEL's `==`: values of different types are not equal (numbers compare across
    int, uint and double); a Quantity or Semver on the left wants its own type on the
    right, as their Equal methods in Kubernetes do."""
    failed = _first_error((left, right))
    if failed is not None:
        return failed
    answer = _equal(left, right)
    return answer if isinstance(answer, CELEvalError) else ct.BoolType(answer)


def not_equal(left: Any, right: Any) -> Any:
    """CEL's `!=`."""
    answer = equal(left, right)
    return answer if isinstance(answer, CELEvalError) else ct.BoolType(not answer)


def _equal(left: Any, right: Any) -> bool | CELEvalError:
    if isinstance(left, Quantity | Semver):
        if type(right) is not type(left):
            return no_overload("_==_", left, right)
        if isinstance(left, Quantity) and isinstance(right, Quantity):
            return bool(left.value == right.value)
        return bool(left == right)
    if _numeric(left) and _numeric(right):
        return _order(left, right) == 0
    if type_name(left) != type_name(right):
        return False
    if isinstance(left, list):
        if len(left) != len(right):
            return False
        for a, b in zip(left, right, strict=True):
            same = _equal(a, b)
            if same is not True:
                return same
        return True
    if isinstance(left, dict):
        if len(left) != len(right) or set(left) != set(right):
            return False
        for key, value in left.items():
            same = _equal(value, right[key])
            if same is not True:
                return same
        return True
    return bool(left == right)


def _ordered(name: str, attribute: str, test: Callable[[int], bool]) -> Callable[[Any, Any], Any]:
    def compare(left: Any, right: Any) -> Any:
        failed = _first_error((left, right))
        if failed is not None:
            return failed
        order = _order(left, right)
        if order is None:
            return no_overload(name, left, right)
        return ct.BoolType(test(order))

    # cel-python's transpiler calls a function by its module and qualified name.
    compare.__name__ = compare.__qualname__ = attribute
    return compare


def _order(left: Any, right: Any) -> int | None:
    if _numeric(left) and _numeric(right):
        if isinstance(left, float) or isinstance(right, float):
            a, b = float(left), float(right)
        else:
            a, b = int(left), int(right)
        return 0 if a == b else (-1 if a < b else 1)
    if _is_bool(left) and _is_bool(right):
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


def logical_not(value: Any) -> Any:
    """CEL's `!`: of a bool only (cel-python's takes only its own BoolType)."""
    failed = _first_error((value,))
    if failed is not None:
        return failed
    if not _is_bool(value):
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
    failed = _first_error((left, right))
    if failed is not None:
        return failed
    try:
        return apply(left, right)
    except ZeroDivisionError:
        return error(message)


def member_of(item: Any, container: Any) -> Any:
    """CEL's `in`: an element equal to the item (CEL's equality), or a map's key."""
    failed = _first_error((item, container))
    if failed is not None:
        return failed
    if isinstance(container, dict):
        return ct.BoolType(item in container)
    if isinstance(container, list):
        return ct.BoolType(any(_equal(item, element) is True for element in container))
    return no_overload("@in", item, container)


# Quantity --------------------------------------------------------------------------------


def quantity(text: Any) -> Any:
    """quantity(string): a Quantity, or an error naming the string."""
    if not isinstance(text, str):
        return _first_error((text,)) or no_overload("quantity", text)
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
        return _first_error((text,)) or no_overload("isQuantity", text)
    try:
        parse_quantity(str(text))
    except InvalidQuantity:
        return ct.BoolType(False)
    return ct.BoolType(True)


def sign(value: Any) -> Any:
    """sign(Quantity): -1, 0 or 1."""
    if not isinstance(value, Quantity):
        return _first_error((value,)) or no_overload("sign", value)
    return ct.IntType((value.value > 0) - (value.value < 0))


def as_approximate_float(value: Any) -> Any:
    """<Quantity>.asApproximateFloat()."""
    if not isinstance(value, Quantity):
        return _first_error((value,)) or no_overload("asApproximateFloat", value)
    return ct.DoubleType(float(value.value))


def is_integer(value: Any) -> Any:
    """<Quantity>.isInteger(): a whole number that fits in an int64."""
    if not isinstance(value, Quantity):
        return _first_error((value,)) or no_overload("isInteger", value)
    return ct.BoolType(_as_int64(value.value) is not None)


def as_integer(value: Any) -> Any:
    """<Quantity>.asInteger(), an error when it is not a whole int64."""
    if not isinstance(value, Quantity):
        return _first_error((value,)) or no_overload("asInteger", value)
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
    failed = _first_error((left, right))
    if failed is not None:
        return failed
    if isinstance(left, Quantity):
        if isinstance(right, Quantity):
            return Quantity(left.value + direction * right.value)
        if isinstance(right, int) and not _is_bool(right):
            return Quantity(left.value + direction * int(right))
    return no_overload(name, left, right)


# Semver ----------------------------------------------------------------------------------


def semver(text: Any, normalize: Any = None) -> Any:
    """semver(string[, bool normalize])."""
    return _semver(text, normalize, "semver")


def is_semver(text: Any, normalize: Any = None) -> Any:
    """isSemver(string[, bool normalize])."""
    parsed = _semver(text, normalize, "isSemver")
    if isinstance(parsed, CELEvalError):
        return parsed if parsed.args[0].startswith("no such overload") else ct.BoolType(False)
    return ct.BoolType(True)


def _semver(text: Any, normalize: Any, name: str) -> Any:
    failed = _first_error((text, normalize))
    if failed is not None:
        return failed
    if not isinstance(text, str) or not (normalize is None or _is_bool(normalize)):
        return no_overload(name, text, normalize)
    try:
        source = _normalized(str(text)) if normalize else str(text)
        return parse_semver(source)
    except ValueError as problem:
        return error(str(problem))


def _semver_part(name: str) -> Callable[[Any], Any]:
    def part(value: Any) -> Any:
        if not isinstance(value, Semver):
            return _first_error((value,)) or no_overload(name, value)
        return ct.IntType(getattr(value, name))

    part.__name__ = part.__qualname__ = name
    return part


major = _semver_part("major")
minor = _semver_part("minor")
patch = _semver_part("patch")


# Quantity and Semver alike ---------------------------------------------------------------


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
    failed = _first_error((left, right))
    if failed is not None:
        return failed
    if isinstance(left, Quantity) and isinstance(right, Quantity):
        return (left.value > right.value) - (left.value < right.value)
    if isinstance(left, Semver) and isinstance(right, Semver):
        return left.compare(right)
    return no_overload(name, left, right)


# Strings (cel-go's strings extension, version 2) and regex --------------------------------


def _string_method(name: str, *arg_kinds: type) -> Callable[[Callable[..., Any]], Any]:
    """Check the receiver is a string and the arguments are of the kinds given (an int is
    never a bool), passing errors on; the decorated function gets plain Python values."""

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        def method(receiver: Any, *args: Any) -> Any:
            failed = _first_error((receiver, *args))
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
        if _is_bool(arg) and kind is not bool:
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
        failed = _first_error((item,))
        if failed is not None:
            return failed
        for position, element in enumerate(receiver):
            if _equal(element, item) is True:
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
        failed = _first_error((item,))
        if failed is not None:
            return failed
        for position in range(len(receiver) - 1, -1, -1):
            if _equal(receiver[position], item) is True:
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
    failed = _first_error((receiver, separator))
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
        return _first_error((text,)) or no_overload("quote", space, text)
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
        return _sets("contains", args, lambda a, b: all(_in(item, a) for item in b))
    failed = _first_error((receiver, *args))
    if failed is not None:
        return failed
    if len(args) != 1 or not isinstance(receiver, str):
        return no_overload("contains", receiver, *args)
    if not isinstance(args[0], str):
        return no_overload("contains", receiver, *args)
    return ct.BoolType(str(args[0]) in str(receiver))


# Lists: Kubernetes' library and cel-go's lists extension (version 3) ----------------------


def _list_method(name: str) -> Callable[[Callable[..., Any]], Any]:
    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        def method(receiver: Any, *args: Any) -> Any:
            failed = _first_error((receiver, *args))
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
        order = _order(left, right)
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
        if not _numeric(item):
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
            order = _order(item, best)
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
    if space is not LISTS or not isinstance(count, int) or _is_bool(count):
        return _first_error((count,)) or no_overload("range", space, count)
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
        if not any(_equal(item, other) is True for other in kept):
            kept.append(item)
    return ct.ListType(kept)


@_list_method("reverse")
def reverse(items: ct.ListType) -> Any:
    """<list>.reverse()."""
    return ct.ListType(list(reversed(items)))


@_list_method("sort")
def sort(items: ct.ListType) -> Any:
    """<list>.sort(): elements of one comparable type."""
    if items and any(_order(items[0], item) is None for item in items):
        return error("list elements must have the same type")
    return ct.ListType(sorted(items, key=cmp_to_key(lambda a, b: _order(a, b) or 0)))


# Sets (cel-go's sets extension) ------------------------------------------------------------


def _in(item: Any, items: ct.ListType) -> bool:
    return any(_equal(item, element) is True for element in items)


def _sets(name: str, args: tuple[Any, ...], test: Callable[[Any, Any], bool]) -> Any:
    failed = _first_error(args)
    if failed is not None:
        return failed
    if len(args) != 2 or not all(isinstance(arg, list) for arg in args):
        return no_overload(f"sets.{name}", *args)
    return ct.BoolType(test(args[0], args[1]))


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


def size(value: Any) -> Any:
    """size(): of a string, bytes, a list or a map (cel-python's takes len() of anything)."""
    failed = _first_error((value,))
    if failed is not None:
        return failed
    if isinstance(value, str | bytes | list | dict):
        return ct.IntType(len(value))
    return no_overload("size", value)


# The operator overrides and library functions, by the name cel-python's transpiler looks
# up. `_k8s_min` is `min` renamed (dra/cel.py renames `.min()`), because cel-python takes a
# method named min for a macro.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "_==_": equal,
    "_!=_": not_equal,
    "_<_": less,
    "_<=_": less_equal,
    "_>_": greater,
    "_>=_": greater_equal,
    "_in_": member_of,
    "_/_": divide,
    "_%_": modulus,
    "!_": logical_not,
    "size": size,
    "quantity": quantity,
    "isQuantity": is_quantity,
    "sign": sign,
    "asApproximateFloat": as_approximate_float,
    "isInteger": is_integer,
    "asInteger": as_integer,
    "add": add,
    "sub": sub,
    "semver": semver,
    "isSemver": is_semver,
    "major": major,
    "minor": minor,
    "patch": patch,
    "compareTo": compare_to,
    "isLessThan": is_less_than,
    "isGreaterThan": is_greater_than,
    "charAt": char_at,
    "indexOf": index_of,
    "lastIndexOf": last_index_of,
    "lowerAscii": lower_ascii,
    "upperAscii": upper_ascii,
    "replace": replace,
    "split": split,
    "substring": substring,
    "trim": trim,
    "join": join,
    "quote": quote,
    "find": find,
    "findAll": find_all,
    "contains": contains,
    "isSorted": is_sorted,
    "sum": sum_of,
    "_k8s_min": list_min,
    "max": list_max,
    "range": list_range,
    "slice": list_slice,
    "flatten": flatten,
    "distinct": distinct,
    "reverse": reverse,
    "sort": sort,
    "equivalent": equivalent,
    "intersects": intersects,
}

# cel-python's own functions a selector may call, besides FUNCTIONS and the macros.
STANDARD_FUNCTIONS = frozenset(
    {
        "startsWith",
        "endsWith",
        "matches",
        "int",
        "uint",
        "double",
        "string",
        "bool",
        "bytes",
        "type",
        "dyn",
        "has",
        "duration",
        "timestamp",
    }
)
