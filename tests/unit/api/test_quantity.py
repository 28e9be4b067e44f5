"""Quantities parse exactly as the API server reads them, and malformed ones are refused."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.api.errors import InvalidQuantity
from scheduler.api.quantity import (
    format_bytes,
    format_milli,
    int_value,
    milli_value,
    parse_quantity,
)

MULTIPLIERS = {
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
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


@pytest.mark.parametrize("suffix", sorted(MULTIPLIERS))
def test_every_suffix_scales_by_its_multiplier(suffix: str) -> None:
    assert parse_quantity(f"3{suffix}") == 3 * MULTIPLIERS[suffix]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1e3", Fraction(1000)),
        ("2E-3", Fraction(2, 1000)),
        ("1.5e2", Fraction(150)),
        ("1e+3", Fraction(1000)),
        ("5e0", Fraction(5)),
    ],
)
def test_decimal_exponents_scale_by_powers_of_ten(text: str, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0.5", Fraction(1, 2)),
        ("1.5Gi", Fraction(3 * 2**29)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("0.25Ki", Fraction(256)),
        ("+1", Fraction(1)),
        ("-1.5", Fraction(-3, 2)),
    ],
)
def test_fractions_and_signs_are_exact(text: str, value: Fraction) -> None:
    assert parse_quantity(text) == value


def test_numbers_from_json_are_quantities() -> None:
    assert parse_quantity(3) == 3
    assert parse_quantity(0.5) == Fraction(1, 2)


@pytest.mark.parametrize(
    ("text", "milli"),
    [("1", 1000), ("1.5", 1500), ("100m", 100), ("0.0001", 1), ("0.1m", 1), ("2e-3", 2)],
)
def test_cpu_rounds_up_to_whole_millicores(text: str, milli: int) -> None:
    assert milli_value(text) == milli


@pytest.mark.parametrize(
    ("text", "whole"),
    [("1.5", 2), ("1m", 1), ("0.5Ki", 512), ("1Gi", 2**30), ("1.1", 2), ("4", 4)],
)
def test_memory_and_counts_round_up_to_whole_units(text: str, whole: int) -> None:
    assert int_value(text) == whole


@pytest.mark.parametrize(
    "text",
    ["", " 1", "1 ", "1Gb", "1K", "1.2.3", "abc", "1e", "Gi", "--1", "1ee3", "1Mii", "0x10", "1,5"],
)
def test_malformed_quantity_is_refused_naming_the_value(text: str) -> None:
    with pytest.raises(InvalidQuantity) as raised:
        parse_quantity(text)
    assert raised.value.value == text
    assert repr(text) in str(raised.value)


def test_huge_exponent_is_refused_instead_of_computed() -> None:
    with pytest.raises(InvalidQuantity, match="exponent"):
        parse_quantity("1e999999999")


@pytest.mark.parametrize("number", [1e300, 1.7976931348623157e308, 5e-324])
def test_a_json_number_meets_the_exponent_rule_of_its_text(number: float) -> None:
    # Found by the chaos fuzz: a Queue capability of 1e300 (a JSON number) was taken
    # while the string "1e300" was refused.
    with pytest.raises(InvalidQuantity, match="exponent"):
        parse_quantity(number)
    with pytest.raises(InvalidQuantity, match="exponent"):
        parse_quantity(repr(number))


def test_a_json_number_in_exponent_form_keeps_its_value() -> None:
    assert parse_quantity(5.4e16) == 54 * 10**15
    assert parse_quantity(1.5e-7) == Fraction(15, 10**8)


@pytest.mark.parametrize("value", [True, False, None])
def test_a_value_that_is_not_a_string_or_number_is_refused(value: object) -> None:
    with pytest.raises(InvalidQuantity):
        parse_quantity(value)


def test_milli_format_is_the_shortest_kubernetes_form() -> None:
    assert format_milli(2000) == "2"
    assert format_milli(500) == "500m"
    assert format_milli(0) == "0"


def test_byte_format_uses_the_largest_dividing_binary_unit() -> None:
    assert format_bytes(1536 * 2**20) == "1536Mi"
    assert format_bytes(2 * 2**30) == "2Gi"
    assert format_bytes(1000) == "1000"
    assert format_bytes(0) == "0"


@given(st.integers(min_value=0, max_value=10**15))
def test_formatted_millicores_parse_back_to_the_same_value(milli: int) -> None:
    assert milli_value(format_milli(milli)) == milli


@given(st.integers(min_value=0, max_value=2**62))
def test_formatted_bytes_parse_back_to_the_same_value(value: int) -> None:
    assert int_value(format_bytes(value)) == value


@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(sorted(MULTIPLIERS)))
def test_integer_with_suffix_is_the_integer_times_the_multiplier(number: int, suffix: str) -> None:
    assert parse_quantity(f"{number}{suffix}") == number * MULTIPLIERS[suffix]


def _parsed_or_refused(text: str) -> None:
    try:
        value = parse_quantity(text)
    except InvalidQuantity as error:
        assert error.value == text
        return
    assert isinstance(value, Fraction)
    # The same text always means the same value, and rounding never goes down.
    assert parse_quantity(text) == value
    assert milli_value(text) == math.ceil(value * 1000)
    assert int_value(text) == math.ceil(value)


@given(st.text(max_size=20))
def test_junk_text_is_parsed_consistently_or_refused(text: str) -> None:
    _parsed_or_refused(text)


@given(st.text(alphabet="0123456789.+-eEnumkMGTPKi ", max_size=12))
def test_quantity_shaped_junk_is_parsed_consistently_or_refused(text: str) -> None:
    _parsed_or_refused(text)
