"""Field errors as kube's field package makes them (field.Required, field.Invalid, ...): a
path, the message in the real server's words, and the reason a Status cause carries."""

from __future__ import annotations

import json
from typing import Any

from muster_sim.errors import FieldError


def shown(value: Any) -> str:
    """A value as field.Error shows it: strings quoted (%q), numbers bare, null for nil."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def listed(values: tuple[str, ...] | list[str]) -> str:
    """Supported values as field.NotSupported lists them."""
    return ", ".join(f'"{v}"' for v in values)


def required(path: str, detail: str = "") -> FieldError:
    """field.Required."""
    message = "Required value" + (f": {detail}" if detail else "")
    return FieldError(path, message, "FieldValueRequired")


def not_supported(path: str, value: Any, values: tuple[str, ...] | list[str]) -> FieldError:
    """field.NotSupported."""
    return FieldError(
        path,
        f"Unsupported value: {shown(value)}: supported values: {listed(values)}",
        "FieldValueNotSupported",
    )


def forbidden(path: str, detail: str) -> FieldError:
    """field.Forbidden."""
    return FieldError(path, f"Forbidden: {detail}", "FieldValueForbidden")


def invalid(path: str, value: Any, detail: str) -> FieldError:
    """field.Invalid."""
    return FieldError(path, f"Invalid value: {shown(value)}: {detail}")


def duplicate(path: str, value: Any) -> FieldError:
    """field.Duplicate."""
    return FieldError(path, f"Duplicate value: {shown(value)}", "FieldValueDuplicate")


def too_long(path: str, limit: int) -> FieldError:
    """field.TooLong (which never shows the value)."""
    unit = "byte" if limit == 1 else "bytes"
    return FieldError(path, f"Too long: may not be more than {limit} {unit}", "FieldValueTooLong")


def too_many(path: str, count: int, limit: int) -> FieldError:
    """field.TooMany: a list longer than its limit, counted."""
    unit = "item" if limit == 1 else "items"
    return FieldError(
        path, f"Too many: {count}: must have at most {limit} {unit}", "FieldValueTooMany"
    )


def not_found(path: str, value: Any, detail: str = "") -> FieldError:
    """field.NotFound, with the explanation some callers add to its detail."""
    message = f"Not found: {shown(value)}" + (f": {detail}" if detail else "")
    return FieldError(path, message, "FieldValueNotFound")


def immutable(path: str, value: Any) -> FieldError:
    """ValidateImmutableField's field.Invalid."""
    return invalid(path, value, "field is immutable")
