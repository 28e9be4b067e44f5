"""Kubernetes' Semver type in CEL and its functions: `semver()`, `isSemver()` and the
methods major, minor and patch; versions parsed strictly, as blang/semver parses them."""

from __future__ import annotations

from collections.abc import Callable
from functools import total_ordering
from typing import Any

import celpy.celtypes as ct
from celpy.evaluation import CELEvalError

from scheduler.dra.cel.library.values import error, first_error, is_bool, no_overload


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
    failed = first_error((text, normalize))
    if failed is not None:
        return failed
    if not isinstance(text, str) or not (normalize is None or is_bool(normalize)):
        return no_overload(name, text, normalize)
    try:
        source = _normalized(str(text)) if normalize else str(text)
        return parse_semver(source)
    except ValueError as problem:
        return error(str(problem))


def _semver_part(name: str) -> Callable[[Any], Any]:
    def part(value: Any) -> Any:
        if not isinstance(value, Semver):
            return first_error((value,)) or no_overload(name, value)
        return ct.IntType(getattr(value, name))

    part.__name__ = part.__qualname__ = name
    return part


major = _semver_part("major")
minor = _semver_part("minor")
patch = _semver_part("patch")
