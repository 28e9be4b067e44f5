"""Quantities in the objects sim stores, read with the scheduler's own parser
(scheduler.api.quantity), so sim and the scheduler agree on what a quantity is; one that does
not parse is, in a built-in object, the 400 kube's decoder answers."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from muster_sim.errors import ApiError, bad_request
from scheduler.api.errors import InvalidQuantity
from scheduler.api.quantity import parse_quantity

# apimachinery's own pattern, which its decode error quotes.
QUANTITY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


def quantity(raw: Any) -> Fraction | None:
    """The exact value of a quantity as JSON carries it (a string, or a number read from its
    text); None when it is not one."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        return None
    try:
        return parse_quantity(raw)
    except InvalidQuantity:
        return None


def decoded_quantity(raw: Any, kind: str) -> Fraction:
    """The value of a quantity in an object of `kind` being decoded; when it is not one, the
    400 the real server answers, failing while decoding, before validation."""
    value = quantity(raw)
    if value is None:
        raise undecodable_quantity(kind)
    return value


def undecodable_quantity(kind: str) -> ApiError:
    """kube's 400 for an object of `kind` with a quantity that does not parse."""
    return bad_request(
        f'{kind} in version "v1" cannot be handled as a {kind}: quantities must match the '
        f"regular expression '{QUANTITY_PATTERN}'"
    )
