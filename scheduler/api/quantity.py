"""Kubernetes quantities ("500m", "1.5Gi", "2e3"), parsed exactly as the API server does."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from scheduler.api.errors import InvalidQuantity

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# The grammar of k8s.io/apimachinery/pkg/api/resource: a signed decimal number
# (digits with at most one point, at least one digit) and one optional suffix,
# binary, decimal, or a decimal exponent e/E with a signed integer.
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)
# Exponents beyond this are not quantities any server accepts; refusing them
# keeps a hostile "1e999999999" from allocating a huge integer.
_MAX_EXPONENT = 64


@lru_cache(maxsize=4096)
def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a quantity; raises InvalidQuantity if it is not one."""
    if isinstance(value, bool):
        raise InvalidQuantity(value, "a quantity is a string or a number, not a boolean")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidQuantity(value, "not a finite number")
        # resource.Quantity reads a JSON number from its text, so 1e300 meets the same
        # exponent rule as the string "1e300" (repr is that text: "1e+300", "0.5").
        return parse_quantity(repr(value))
    if not isinstance(value, str):
        raise InvalidQuantity(value, "a quantity is a string or a number")
    # The API server accepts no surrounding white space, so neither do we.
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise InvalidQuantity(
            value, "expected a number with an optional suffix (m, k, M, Gi, e3, ...)"
        )
    number = Fraction(match["number"])
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        number *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        number *= _DECIMAL[suffix]
    else:
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise InvalidQuantity(value, f"exponent {exponent} is out of range")
        number *= Fraction(10) ** exponent
    return -number if match["sign"] == "-" else number


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


# Pods repeat a handful of request strings ("500m", "1Gi"): caching the rounded
# values keeps Fraction arithmetic off the watch path.
@lru_cache(maxsize=4096)
def milli_value(value: str | int | float) -> int:
    """The quantity in thousandths, rounded up as Kubernetes rounds cpu to millicores."""
    return _ceil(parse_quantity(value) * 1000)


@lru_cache(maxsize=4096)
def int_value(value: str | int | float) -> int:
    """The quantity as a whole number, rounded up (memory, pods, extended resources)."""
    return _ceil(parse_quantity(value))


def format_milli(milli: int) -> str:
    """A millicore count in the shortest Kubernetes form ("2", "500m")."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def format_bytes(value: int) -> str:
    """A byte count in the largest binary unit that divides it ("1536Mi", "2Gi")."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if value and value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(value)
