"""The base of the kinds' registry strategies (storage, volumes, workloads): defaults on every
write, validation that refuses a write with one 422 listing every field error."""

from __future__ import annotations

from typing import Any

from muster_sim.errors import FieldError, invalid

Obj = dict[str, Any]


class KindStrategy:
    """A kind's v1 defaults, applied to every write as decoding applies them, and its
    validation: a write with field errors is refused with one 422 listing them all."""

    group = ""
    kind = ""

    def validate_create(self, obj: Obj) -> None:
        """422 listing every field error of a new object."""
        self._refuse(obj, self._errors(obj))

    def _errors(self, obj: Obj) -> list[FieldError]:
        return []

    def _refuse(self, obj: Obj, errors: list[FieldError]) -> None:
        if errors:
            raise invalid(self.group, self.kind, str(obj["metadata"].get("name", "")), errors)

    def prepare_for_create(self, obj: Obj) -> None:
        """The v1 defaults."""
        self._default(obj)

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        """The v1 defaults, as decoding applies them to every write."""
        self._default(new)

    def _default(self, obj: Obj) -> None:
        """The kind has no defaults."""
