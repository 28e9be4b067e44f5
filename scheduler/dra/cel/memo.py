"""Compiled selectors by text, and every (selector, device) answer across sessions.

The answer of one selector for one device depends on nothing else, so it is kept per
(slice, device) across sessions; a slice is known by name, uid, resourceVersion and
generation, so a changed slice is a new key, and `keep_only` drops the slices no longer
listed. An evaluation costs tens of microseconds; a cluster has thousands of devices and a
handful of selectors. A selector that reads only a device's plain fields (most class
selectors: `device.driver == ...`) is evaluated once per driver, not per device.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scheduler.api import dra
from scheduler.dra.cel.device import device_fields, device_value, unrepresentable
from scheduler.dra.cel.errors import SelectorError
from scheduler.dra.cel.selector import Selector

# A slice as the memo knows it: name, uid, resourceVersion, generation.
SliceKey = tuple[str, str, str, int]


def slice_key(slice_: dra.ResourceSlice) -> SliceKey:
    """What identifies one version of a slice (a changed slice is a new key)."""
    meta = slice_.metadata
    return (meta.name, meta.uid, meta.resource_version, meta.generation)


class _SliceMemo:
    __slots__ = ("answers", "values")

    def __init__(self) -> None:
        # By the device's position in the slice: its `device` variable, its answers.
        self.values: dict[int, Any] = {}
        self.answers: dict[int, dict[str, bool | str]] = {}


class SelectorMemo:
    """Compiled selectors by text, and every (selector, device) answer found so far: the
    scheduler's cache keeps one across sessions, and each session fills it."""

    def __init__(self) -> None:
        self._selectors: dict[str, Selector] = {}
        self._slices: dict[SliceKey, _SliceMemo] = {}
        # The answers of selectors that read only a device's plain fields, by (selector,
        # driver, allowMultipleAllocations): a handful, whatever the devices.
        self._plain: dict[tuple[str, str, bool], bool | str] = {}
        self.evaluations = 0

    def selector(self, text: str) -> Selector:
        """The compiled selector (compiled on first use)."""
        compiled = self._selectors.get(text)
        if compiled is None:
            compiled = self._selectors[text] = Selector(text)
        return compiled

    def matches(
        self, text: str, key: SliceKey, index: int, driver: str, device: dra.Device
    ) -> bool:
        """Whether device `index` of the slice matches the selector; SelectorError says why
        it could not be evaluated (the answer is memoised either way)."""
        memo = self._slices.get(key)
        if memo is None:
            memo = self._slices[key] = _SliceMemo()
        answers = memo.answers.get(index)
        if answers is None:
            answers = memo.answers[index] = {}
        answer = answers.get(text)
        if answer is None:
            answer = answers[text] = self._evaluate(text, memo, index, driver, device)
        if isinstance(answer, str):
            raise SelectorError(answer)
        return answer

    def _evaluate(
        self, text: str, memo: _SliceMemo, index: int, driver: str, device: dra.Device
    ) -> bool | str:
        selector = self.selector(text)
        if not selector.reads_maps:
            # Its answer depends on the device's plain fields alone (device.py).
            problem = unrepresentable(device)
            if problem is not None:
                return self._run(selector, problem)
            plain = (text, driver, bool(device.allow_multiple_allocations))
            answer = self._plain.get(plain)
            if answer is None:
                answer = self._plain[plain] = self._run(selector, device_fields(driver, device))
            return answer
        value = memo.values.get(index)
        if value is None:
            value = memo.values[index] = device_value(driver, device)
        return self._run(selector, value)

    def _run(self, selector: Selector, value: Any) -> bool | str:
        self.evaluations += 1
        try:
            return selector.matches(value)
        except SelectorError as problem:
            return str(problem)

    def keep_only(self, keys: Iterable[SliceKey]) -> None:
        """Forget the slices not among `keys` (those deleted or changed since)."""
        live = set(keys)
        for key in [key for key in self._slices if key not in live]:
            del self._slices[key]
