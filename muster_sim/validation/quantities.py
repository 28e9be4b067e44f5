"""Quantities in the objects sim stores, read with the scheduler's own parser
(scheduler.api.quantity), so sim and the scheduler agree on what a quantity is; one that does
not parse is, in a built-in object, the 400 kube's decoder answers."""

from __future__ import annotations

import math
import re
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


# resource.Quantity's formats: which suffixes it was written with, and so how it is written back.
BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"

_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_EXPONENT = re.compile(r"[+-]?[0-9.]+[eE][+-]?[0-9]+")
_DECIMAL_SUFFIXES = {
    -9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"
}  # fmt: skip


def quantity_format(raw: Any) -> str:
    """The format a quantity as JSON carries it is read in: binary for Ki..Ei, exponent for
    e/E, decimal for the rest (numbers read from their text, as strings are)."""
    text = repr(raw) if isinstance(raw, float) else str(raw)
    if text[-2:] in _BINARY_SUFFIXES[1:]:
        return BINARY_SI
    if _EXPONENT.fullmatch(text):
        return DECIMAL_EXPONENT
    return DECIMAL_SI  # "1E" is exa, not an exponent


def canonical_quantity(value: Fraction, format_: str) -> str:
    """A quantity as kube-apiserver writes it back (Quantity.String, CanonicalizeBytes): in
    binary units when it was binary, whole and at least 1024; otherwise a whole number times
    the largest power of 1000 that keeps it whole (down to nano, rounded up there), with its
    SI suffix or, for the exponent format, e<n>."""
    if value == 0:
        return "0"
    if format_ == BINARY_SI and abs(value) >= 1024 and value.denominator == 1:
        number = int(value)
        power = 0
        while power < len(_BINARY_SUFFIXES) - 1 and number % 1024 == 0:
            number //= 1024
            power += 1
        return f"{number}{_BINARY_SUFFIXES[power]}"
    nanos = math.ceil(value * 10**9)  # rounded up to a whole nano, as Go rounds
    exponent = -9
    while nanos % 1000 == 0 and exponent < 18:
        nanos //= 1000
        exponent += 3
    if format_ == DECIMAL_EXPONENT:
        return f"{nanos}e{exponent}" if exponent else str(nanos)
    return f"{nanos}{_DECIMAL_SUFFIXES[exponent]}"
