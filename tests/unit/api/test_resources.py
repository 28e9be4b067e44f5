"""Resource vectors compare and add per dimension, treating missing dimensions as Volcano does."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.api.errors import InvalidObject
from scheduler.api.resources import UNLIMITED, Resource, limit_from_list, total

GPU = "nvidia.com/gpu"
HUGEPAGES = "hugepages-2Mi"


def vector(cpu: int = 0, memory: int = 0, **scalars: int) -> Resource:
    names = {"gpu": GPU, "hugepages": HUGEPAGES}
    return Resource(cpu, memory, {names.get(k, k): v for k, v in scalars.items()})


def test_resource_list_reads_cpu_in_millicores_memory_in_bytes_and_extended_resources() -> None:
    resource = Resource.from_list(
        {"cpu": "1500m", "memory": "1Gi", GPU: "2", HUGEPAGES: "1Gi", "pods": "110"}
    )
    assert resource.cpu == 1500
    assert resource.memory == 2**30
    assert resource.scalars == {GPU: 2, HUGEPAGES: 2**30}


def test_pods_are_not_part_of_the_vector() -> None:
    assert Resource.from_list({"pods": "10"}).is_empty()


def test_malformed_quantity_names_object_field_and_value() -> None:
    with pytest.raises(InvalidObject) as raised:
        Resource.from_list({"memory": "lots"}, kind="Node", name="n1", field="status.allocatable")
    error = raised.value
    assert (error.kind, error.name, error.field, error.value) == (
        "Node",
        "n1",
        "status.allocatable.memory",
        "lots",
    )
    assert "Node n1: status.allocatable.memory='lots'" in str(error)


def test_request_fits_when_every_dimension_fits() -> None:
    assert vector(1000, 100, gpu=1).fits_in(vector(1000, 100, gpu=1))
    assert not vector(1001, 100).fits_in(vector(1000, 100))
    assert not vector(1000, 101).fits_in(vector(1000, 100))


def test_extended_resource_missing_from_available_counts_as_zero() -> None:
    assert not vector(1, gpu=1).fits_in(vector(1000))
    assert vector(1, gpu=0).fits_in(vector(1000))


def test_less_equal_treats_a_missing_extended_resource_as_zero() -> None:
    assert not vector(1, gpu=1).less_equal(vector(1000))


def test_less_equal_with_missing_is_infinite_ignores_unnamed_extended_resources() -> None:
    assert vector(1, gpu=8).less_equal(vector(1000), missing_is_infinite=True)
    assert not vector(1, gpu=8).less_equal(vector(1000, gpu=4), missing_is_infinite=True)
    # cpu and memory are always compared.
    assert not vector(2000).less_equal(vector(1000), missing_is_infinite=True)


def test_add_and_sub_change_the_vector_in_place() -> None:
    resource = vector(1000, 10, gpu=1)
    assert resource.add(vector(500, 5, gpu=1, hugepages=2)) is resource
    assert resource == vector(1500, 15, gpu=2, hugepages=2)
    resource.sub(vector(1500, 15, gpu=2, hugepages=2))
    assert resource.is_empty()


def test_plus_and_minus_leave_their_operands_alone() -> None:
    a, b = vector(1000, gpu=1), vector(500, gpu=2)
    assert a + b == vector(1500, gpu=3)
    assert a - b == vector(500, gpu=-1)
    assert a == vector(1000, gpu=1)
    assert b == vector(500, gpu=2)


def test_minimum_and_maximum_take_each_dimension_apart() -> None:
    a, b = vector(1000, 50, gpu=1), vector(500, 80, hugepages=4)
    assert a.minimum(b) == vector(500, 50)
    assert a.maximum(b) == vector(1000, 80, gpu=1, hugepages=4)


def test_insufficient_names_short_dimensions_in_a_stable_order() -> None:
    request = vector(2000, 2, gpu=2, hugepages=1, **{"example.com/a": 1})
    assert request.insufficient(vector(1000, 1, gpu=1, hugepages=1)) == [
        "cpu",
        "memory",
        "example.com/a",
        GPU,
    ]
    assert request.insufficient(request) == []


def test_equality_treats_a_zero_extended_resource_as_missing() -> None:
    assert vector(1, gpu=0) == vector(1)
    assert hash(vector(1, gpu=0)) == hash(vector(1))
    assert vector(1, gpu=1) != vector(1)


def test_best_effort_vector_is_empty_and_names_nothing() -> None:
    assert vector().is_empty()
    assert vector(gpu=0).names() == set()
    assert vector(1, 0, gpu=2).names() == {"cpu", GPU}


def test_get_reads_any_dimension_with_missing_as_zero() -> None:
    resource = vector(250, 64, gpu=3)
    assert (resource.get("cpu"), resource.get("memory"), resource.get(GPU)) == (250, 64, 3)
    assert resource.get(HUGEPAGES) == 0


def test_set_writes_any_dimension_and_leaves_shared_vectors_alone() -> None:
    empty = Resource()
    changed = Resource()
    changed.set("cpu", 4000)
    changed.set("memory", 2**30)
    changed.set(HUGEPAGES, 2**21)
    assert changed == vector(4000, 2**30, hugepages=2**21)
    assert empty.scalars == {}  # vectors with no scalars share one empty mapping


def test_clone_is_independent() -> None:
    original = vector(1000, gpu=1)
    copy = original.clone()
    copy.add(vector(1, gpu=1))
    assert original == vector(1000, gpu=1)


def test_multiply_scales_and_rounds_down() -> None:
    assert vector(1001, 3, gpu=3).multiply(0.5) == vector(500, 1, gpu=1)


def test_to_list_writes_kubernetes_quantities() -> None:
    assert vector(1500, 2**31, gpu=2).to_list() == {"cpu": "1500m", "memory": "2Gi", GPU: "2"}
    assert Resource.from_list(vector(2000, 3 * 2**20).to_list()) == vector(2000, 3 * 2**20)


def test_total_sums_vectors() -> None:
    assert total([vector(1, gpu=1), vector(2, 5), vector(gpu=2)]) == vector(3, 5, gpu=3)


def test_absent_limit_is_none() -> None:
    assert limit_from_list({}, kind="Queue", name="q", field="spec.capability") is None
    assert limit_from_list(None, kind="Queue", name="q", field="spec.capability") is None


def test_limit_leaves_unnamed_cpu_and_memory_unlimited() -> None:
    limit = limit_from_list({GPU: 4}, kind="Queue", name="q", field="spec.capability")
    assert limit == Resource(UNLIMITED, UNLIMITED, {GPU: 4})
    named = limit_from_list({"cpu": "8"}, kind="Queue", name="q", field="spec.capability")
    assert named == Resource(8000, UNLIMITED)


_names = st.sampled_from([GPU, HUGEPAGES, "example.com/foo"])
_amounts = st.integers(min_value=0, max_value=2**50)
vectors = st.builds(Resource, _amounts, _amounts, st.dictionaries(_names, _amounts, max_size=3))


@given(vectors, vectors)
def test_adding_then_subtracting_gives_back_the_vector(a: Resource, b: Resource) -> None:
    assert a.clone().add(b).sub(b) == a


@given(vectors, vectors)
def test_a_vector_fits_in_itself_plus_anything(a: Resource, b: Resource) -> None:
    assert a.fits_in(a + b)
    assert a.less_equal(a + b)
    assert a.minimum(b).fits_in(a.maximum(b))


def test_negative_quantity_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidObject, match=r"spec.x.cpu='-1': must be 0 or more"):
        Resource.from_list({"cpu": "-1"}, kind="Pod", name="ns/p", field="spec.x")


def test_request_not_using_a_dimension_fits_a_node_overcommitted_in_it() -> None:
    idle = Resource(cpu=-500, memory=2**30)
    assert Resource(cpu=0, memory=2**20).fits_in(idle)
    assert Resource(cpu=0, memory=2**20).insufficient(idle) == []


def test_vectors_without_extended_resources_share_nothing_they_write() -> None:
    # Vectors with no extended resources share one read-only empty mapping (memory); the
    # first write gives a vector a dict of its own, and no other vector sees it.
    first, second = Resource(1000, 0), Resource(2000, 0)
    first.add(Resource(scalars={"nvidia.com/gpu": 2}))
    second.sub(Resource(scalars={"example.com/fpga": 1}))
    assert first.scalars == {"nvidia.com/gpu": 2}
    assert second.scalars == {"example.com/fpga": -1}
    assert Resource().scalars == {}
    assert Resource.from_list({"cpu": "1", "nvidia.com/gpu": "1"}).scalars == {"nvidia.com/gpu": 1}
    assert Resource().scalars == {}


def test_the_shared_empty_mapping_refuses_a_direct_write() -> None:
    with pytest.raises(TypeError):
        Resource().scalars["nvidia.com/gpu"] = 1  # type: ignore[index]
