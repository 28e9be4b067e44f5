"""sim's parts for pod-level resources: quantities written back as kube-apiserver writes them
(resource.Quantity's String), the form of the pod-level requests sim defaults from the
containers' sums; and what a pod asks of its node, as the stand-in autoscaler counts it."""

from __future__ import annotations

from fractions import Fraction

import pytest

from muster_sim.cluster.autoscaler.fitting import pod_need
from muster_sim.validation.quantities import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    canonical_quantity,
    quantity,
    quantity_format,
)


@pytest.mark.parametrize(
    ("raw", "written"),
    [
        ("1", "1"),
        ("500m", "500m"),
        ("1000m", "1"),
        ("1500m", "1500m"),
        ("0.5", "500m"),
        (2, "2"),
        (1.5, "1500m"),
        ("2048", "2048"),
        ("2000", "2k"),
        ("1G", "1G"),
        ("1Gi", "1Gi"),
        ("1024Ki", "1Mi"),
        ("1536Mi", "1536Mi"),
        ("512", "512"),  # decimal: too small for binary units
        ("2e3", "2e3"),
        ("-1", "-1"),
        ("0", "0"),
        ("1n", "1n"),
    ],
)
def test_a_quantity_is_written_back_in_its_formats_canonical_form(
    raw: str | int | float, written: str
) -> None:
    value = quantity(raw)
    assert value is not None
    assert canonical_quantity(value, quantity_format(raw)) == written


def test_a_binary_value_below_1024_or_not_whole_is_written_in_decimal() -> None:
    assert canonical_quantity(Fraction(512), BINARY_SI) == "512"
    assert canonical_quantity(Fraction(3, 2) * 1024, BINARY_SI) == "1536"
    assert canonical_quantity(Fraction(2049, 2), BINARY_SI) == "1024500m"


def test_a_decimal_sum_not_a_multiple_of_1000_is_written_whole() -> None:
    assert canonical_quantity(Fraction(2073741824), DECIMAL_SI) == "2073741824"
    assert canonical_quantity(Fraction(5000), DECIMAL_EXPONENT) == "5e3"


def test_formats_are_read_from_the_suffix() -> None:
    assert [quantity_format(r) for r in ("1Gi", "1G", "1e3", "1E3", "1E", "1", 7, 1e300)] == [
        BINARY_SI,
        DECIMAL_SI,
        DECIMAL_EXPONENT,
        DECIMAL_EXPONENT,
        DECIMAL_SI,  # exa
        DECIMAL_SI,
        DECIMAL_SI,
        DECIMAL_EXPONENT,
    ]


def test_the_stand_in_autoscaler_sizes_a_pod_by_its_pod_level_requests() -> None:
    spec = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "gpu.x/y": "1"}}}],
        "initContainers": [
            {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"memory": "1Gi"}}}
        ],
        "resources": {"requests": {"cpu": "4"}},
        "overhead": {"cpu": "250m"},
    }
    assert pod_need(spec) == {
        "cpu": Fraction(17, 4),
        "memory": Fraction(2**30),
        "gpu.x/y": Fraction(1),
        "pods": Fraction(1),
    }
