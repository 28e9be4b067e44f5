"""The base of the kinds' registry strategies (storage, volumes, workloads, DRA): defaults on
every write, validation that refuses a write with one 422 listing every field error; and what
a kind's rules may read besides the objects (the write's context)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

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


class Permission(NamedTuple):
    """A permission as an authorizer is asked for it."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""


# The authorizer's answer for the requester: None when the permission is granted, else the
# message of the 403 it would give.
Denied = Callable[[Permission], "str | None"]


def _no_labels(_namespace: str) -> dict[str, str] | None:
    return None


@dataclass(frozen=True)
class WriteContext:
    """What some kinds' rules read besides the objects, as kube's strategies read it from the
    request's context and their clients: the write's verb and subresource, the authorizer's
    answer for another permission of the requester, a namespace's labels."""

    # "create", "update" or "patch"; "" for sim's own writes (its kubelet, controllers)
    verb: str = ""
    subresource: str | None = None
    # None for writes nobody authorizes: sim's own, and every write of an --insecure sim
    denied: Denied | None = None
    namespace_labels: Callable[[str], dict[str, str] | None] = _no_labels

    def refusal(self, permission: Permission) -> str | None:
        """The 403 message for `permission`, None when the requester has it."""
        return None if self.denied is None else self.denied(permission)


class RequestValidator(Protocol):
    """A kind's validation that also reads the write's context (kube strategies that ask the
    authorizer or another object), run on every create and update in place of a plain one."""

    def validate_request(self, context: WriteContext, old: Obj | None, new: Obj) -> None:
        """Raise an ApiError (422) when the write may not happen (`old` None on create)."""
