"""The error hierarchy: every message names the object, the field and the value."""

from __future__ import annotations


class MusterError(Exception):
    """The root of every error muster raises on purpose."""


class InvalidObject(MusterError):
    """A Kubernetes object that muster cannot use as written."""

    def __init__(self, kind: str, name: str, field: str, value: object, problem: str) -> None:
        self.kind = kind
        self.name = name
        self.field = field
        self.value = value
        self.problem = problem
        super().__init__(f"{kind} {name}: {field}={value!r}: {problem}")


class FieldRefused(InvalidObject):
    """An object that uses a field muster does not honour yet and will not act against:
    it is left alone (never scheduled) with a condition that names the field."""


class InvalidQuantity(MusterError):
    """A string that is not a Kubernetes quantity; callers wrap it into InvalidObject."""

    def __init__(self, value: object, problem: str) -> None:
        self.value = value
        self.problem = problem
        super().__init__(f"invalid quantity {value!r}: {problem}")


class ConfigError(MusterError):
    """A scheduler configuration that cannot be loaded; the previous one stays in force."""


class ApiError(MusterError):
    """The API server refused or failed a request."""
