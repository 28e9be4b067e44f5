"""One pod's claims on one node: which devices it gets, and why not, as kube-scheduler 1.36
allocates them (selectors, counts, All, firstAvailable, constraints, taints, counters,
admin access) and with the AllocationResult it writes."""

from __future__ import annotations

import msgspec
import pytest

from scheduler.dra import CANNOT_ALLOCATE, INVALID_POOLS, NOT_AVAILABLE, Verdict
from tests.unit.dra.devices import (
    DRIVER,
    allocator,
    claim,
    device_class,
    devices_of,
    exactly,
    first_available,
    gpu,
    held,
    node_slice,
    on_node,
    pod,
    sub,
    version,
)

MODEL = f'device.attributes["{DRIVER}"].model'
SIZE = f'device.attributes["{DRIVER}"].size'


def four_gpus() -> list[object]:
    return [
        gpu("gpu-0", model="a100", numa=0),
        gpu("gpu-1", model="h100", numa=0),
        gpu("gpu-2", model="a100", numa=1),
        gpu("gpu-3", model="h100", numa=1),
    ]


def test_a_pod_alone_gets_the_first_device_its_class_and_request_select() -> None:
    slices = [node_slice("n1", *four_gpus())]  # type: ignore[arg-type]
    classes = [device_class("nvidia", f'{MODEL} != "a100"')]
    devices = allocator(
        slices, [claim("x", exactly("nvidia", f'{MODEL}.startsWith("h")'))], classes=classes
    )
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu=gpu-1"]}


def test_the_class_selectors_apply_before_the_request_selectors() -> None:
    # The request would take gpu-0 (an a100); the class allows h100s only.
    slices = [node_slice("n1", *four_gpus())]  # type: ignore[arg-type]
    classes = [device_class("nvidia", f'{MODEL} == "h100"')]
    devices = allocator(
        slices, [claim("x", exactly("nvidia", f"{MODEL}.size() == 4"))], classes=classes
    )
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu=gpu-1"]}


def test_devices_are_tried_by_driver_pool_slice_and_position_as_kube_scheduler_does() -> None:
    slices = [
        node_slice("n1", gpu("z-first-listed"), pool="pool-b", name="slice-a"),
        node_slice("n1", gpu("b"), gpu("a"), pool="pool-a", name="slice-z"),
    ]
    devices = allocator(slices, [claim("x", exactly(count=2))])
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu=b", "gpu=a"]}


def test_a_selector_failing_at_runtime_fails_the_pod_in_kube_schedulers_words() -> None:
    slices = [node_slice("n1", gpu("gpu-0", model="a100"))]
    missing = f'device.attributes["{DRIVER}"].family == "ampere"'
    by_class = allocator(slices, [claim("x")], classes=[device_class("gpu", missing)])
    fit = by_class.fits(pod("x", "x"), "n1", "g")
    assert fit.verdict is Verdict.POD
    assert fit.reason == "class gpu: selector #0: CEL runtime error: no such key: family"
    by_claim = allocator(slices, [claim("x", exactly("gpu", "true", missing))])
    assert by_claim.fits(pod("x", "x"), "n1", "g").reason == (
        "claim ns/x: selector #1: CEL runtime error: no such key: family"
    )


def test_a_selector_is_evaluated_only_on_devices_the_search_reaches() -> None:
    # gpu-0 matches first; gpu-1 would fail the selector, but kube-scheduler never gets
    # there, nor to a device another claim holds.
    selector = f'{MODEL} == "a100" || device.attributes["{DRIVER}"].family == "x"'
    slices = [
        node_slice(
            "n1",
            gpu("gpu-held", model="h100"),
            gpu("gpu-0", model="a100"),
            gpu("gpu-1", model="h100"),
        )
    ]
    held_claim = claim("other", allocated=[("gpu", "n1", "gpu-held")], node_selector=on_node("n1"))
    devices = allocator(slices, [held_claim, claim("x", exactly("gpu", selector))])
    assert devices.fits(pod("x", "x"), "n1", "g").fits
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu=gpu-0"]}
    two = allocator(slices, [held_claim, claim("x", exactly("gpu", selector, count=2))])
    assert two.fits(pod("x", "x"), "n1", "g").reason.endswith("no such key: family")


def test_exact_count_takes_that_many_and_a_shortage_says_how_many_match_and_are_free() -> None:
    slices = [node_slice("n1", *four_gpus())]  # type: ignore[arg-type]
    other = claim("other", allocated=[("gpu", "n1", "gpu-1")], node_selector=on_node("n1"))
    devices = allocator(
        slices,
        [
            other,
            claim("x", exactly("gpu", count=3)),
            claim("y", exactly("gpu", f'{MODEL} == "h100"', count=2)),
        ],
    )
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu=gpu-0", "gpu=gpu-2", "gpu=gpu-3"]}
    fit = devices.fits(pod("y", "y"), "n1", "g2")
    assert (fit.verdict, fit.reason) == (Verdict.NODE, CANNOT_ALLOCATE)
    assert fit.detail == (
        "claim ns/y, request gpu (class gpu) needs 2: 2 devices match its selectors on "
        "node n1, 0 of them free"
    )


def test_all_takes_every_matching_device_of_the_node_and_fails_if_one_is_taken() -> None:
    slices = [node_slice("n1", *four_gpus()), node_slice("n2", gpu("gpu-9", model="h100"))]  # type: ignore[arg-type]
    everything = claim("x", exactly("gpu", f'{MODEL} == "h100"', all_devices=True))
    devices = allocator(slices, [everything])
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu=gpu-1", "gpu=gpu-3"]}
    other = claim("other", allocated=[("gpu", "n1", "gpu-3")], node_selector=on_node("n1"))
    blocked = allocator(slices, [other, everything])
    fit = blocked.fits(pod("x", "x"), "n1", "g")
    assert fit.reason == CANNOT_ALLOCATE
    assert "needs all: 2 devices match" in fit.detail and "1 of them free" in fit.detail


def test_all_fails_on_a_matching_device_whose_taint_it_does_not_tolerate() -> None:
    taint = {"key": "broken", "effect": "NoSchedule"}
    slices = [node_slice("n1", gpu("gpu-0"), gpu("gpu-1", taints=[taint]))]
    everything = exactly("gpu", all_devices=True)
    assert not allocator(slices, [claim("x", everything)]).fits(pod("x", "x"), "n1", "g").fits
    tolerant = exactly("gpu", all_devices=True, tolerations=[{"operator": "Exists"}])
    assert allocator(slices, [claim("x", tolerant)]).fits(pod("x", "x"), "n1", "g").fits


def test_all_whose_devices_break_a_constraint_is_an_error_in_the_claim() -> None:
    slices = [node_slice("n1", gpu("gpu-0", numa=0), gpu("gpu-1", numa=1))]
    spec = claim(
        "x", exactly("gpu", all_devices=True), constraints=[{"matchAttribute": f"{DRIVER}/numa"}]
    )
    fit = allocator(slices, [spec]).fits(pod("x", "x"), "n1", "g")
    assert (fit.verdict, fit.reason) == (
        Verdict.POD,
        "claim ns/x, request gpu: cannot add device gpu.example.com/n1/gpu-1 because a claim "
        "constraint would not be satisfied",
    )


def test_all_with_no_matching_device_fails() -> None:
    slices = [node_slice("n1", gpu("gpu-0", model="a100"))]
    devices = allocator(slices, [claim("x", exactly("gpu", f'{MODEL} == "l4"', all_devices=True))])
    assert devices.fits(pod("x", "x"), "n1", "g").reason == CANNOT_ALLOCATE


def test_first_available_takes_the_first_sub_request_that_fits() -> None:
    slices = [node_slice("n1", *four_gpus())]  # type: ignore[arg-type]
    request = first_available(
        "gpu",
        sub("big", "gpu", f'{MODEL} == "h100"', count=2),
        sub("small", "gpu", f'{MODEL} == "a100"'),
    )
    devices = allocator(slices, [claim("x", request)])
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu/big=gpu-1", "gpu/big=gpu-3"]}


def test_a_later_sub_request_is_used_only_when_the_earlier_ones_cannot_be_met() -> None:
    slices = [node_slice("n1", *four_gpus())]  # type: ignore[arg-type]
    request = first_available(
        "gpu",
        sub("big", "gpu", f'{MODEL} == "h100"', count=3),
        sub("small", "gpu", f'{MODEL} == "a100"'),
    )
    devices = allocator(slices, [claim("x", request)])
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu/small=gpu-0"]}


def test_match_attribute_puts_the_named_requests_of_a_claim_on_one_value() -> None:
    # First fit would give a=gpu-0 (numa 0) and b=gpu-3 (numa 1); the constraint moves a.
    slices = [node_slice("n1", *four_gpus())]  # type: ignore[arg-type]
    one_numa = claim(
        "x",
        exactly("gpu", name="a"),
        exactly("gpu", f'{MODEL} == "h100" && device.attributes["{DRIVER}"].numa == 1', name="b"),
        constraints=[{"requests": ["a", "b"], "matchAttribute": f"{DRIVER}/numa"}],
    )
    devices = allocator(slices, [one_numa])
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["a=gpu-2", "b=gpu-3"]}


def test_match_attribute_rejects_devices_without_the_attribute() -> None:
    slices = [node_slice("n1", gpu("gpu-0", numa=0), gpu("gpu-1"), gpu("gpu-2", numa=0))]
    devices = allocator(
        slices,
        [claim("x", exactly("gpu", count=2), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])],
    )
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu=gpu-0", "gpu=gpu-2"]}


def test_distinct_attribute_wants_every_value_different() -> None:
    # kube-scheduler 1.36 remembers one value per request, so it would take gpu-0, gpu-1,
    # gpu-2 (rack a, b, a); muster keeps the values pairwise distinct.
    slices = [
        node_slice(
            "n1",
            gpu("gpu-0", rack="a"),
            gpu("gpu-1", rack="b"),
            gpu("gpu-2", rack="a"),
            gpu("gpu-3", rack="c"),
        )
    ]
    distinct = [{"distinctAttribute": f"{DRIVER}/rack"}]
    devices = allocator(slices, [claim("x", exactly("gpu", count=3), constraints=distinct)])
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu=gpu-0", "gpu=gpu-1", "gpu=gpu-3"]}
    four = allocator(slices, [claim("x", exactly("gpu", count=4), constraints=distinct)])
    assert not four.fits(pod("x", "x"), "n1", "g").fits


@pytest.mark.parametrize(
    ("effect", "toleration", "fits"),
    [
        ("NoSchedule", None, False),
        ("NoExecute", None, False),
        ("None", None, True),
        ("NoSchedule", {"key": "maintenance", "operator": "Exists"}, True),
        ("NoExecute", {"key": "maintenance", "value": "soon", "effect": "NoExecute"}, True),
        ("NoSchedule", {"key": "maintenance", "value": "later"}, False),
        ("NoSchedule", {"operator": "Exists", "effect": "NoExecute"}, False),
    ],
    ids=[
        "noschedule",
        "noexecute",
        "none-effect",
        "exists",
        "equal",
        "other-value",
        "other-effect",
    ],
)
def test_a_tainted_device_is_taken_only_when_the_request_tolerates_the_taint(
    effect: str, toleration: dict[str, str] | None, fits: bool
) -> None:
    taint = {"key": "maintenance", "value": "soon", "effect": effect}
    slices = [node_slice("n1", gpu("gpu-0", taints=[taint]))]
    request = exactly("gpu", tolerations=[toleration] if toleration else None)
    devices = allocator(slices, [claim("x", request)])
    assert devices.fits(pod("x", "x"), "n1", "g").fits is fits
    if fits and toleration:
        devices.take(pod("x", "x"), "n1", "g")
        result = devices.tentative_results("g")["ns/x"].devices.results[0]
        assert msgspec.to_builtins(result.tolerations) == [toleration]


def partitioned_gpu() -> list[object]:
    counters = [{"name": "gpu-0-memory", "counters": {"memory": {"value": "80Gi"}}}]
    whole = [{"counterSet": "gpu-0-memory", "counters": {"memory": {"value": "80Gi"}}}]
    half = [{"counterSet": "gpu-0-memory", "counters": {"memory": {"value": "40Gi"}}}]
    return [
        node_slice("n1", pool="gpu-pool", count=2, counters=counters, name="a-counters"),
        node_slice(
            "n1",
            gpu("whole", size="whole", consumes=whole),
            gpu("half-a", size="half", consumes=half),
            gpu("half-b", size="half", consumes=half),
            pool="gpu-pool",
            count=2,
            name="b-devices",
        ),
    ]


def test_a_partition_in_use_takes_its_counters_so_the_whole_device_is_blocked() -> None:
    slices = partitioned_gpu()
    half_held = claim(
        "other", allocated=[("gpu", "gpu-pool", "half-a")], node_selector=on_node("n1")
    )
    whole = claim("x", exactly("gpu", f'{SIZE} == "whole"'))
    half = claim("y", exactly("gpu", f'{SIZE} == "half"'))
    devices = allocator(slices, [half_held, whole, half])  # type: ignore[arg-type]
    assert devices.fits(pod("x", "x"), "n1", "g").reason == CANNOT_ALLOCATE
    devices.take(pod("y", "y"), "n1", "g")
    assert held(devices) == {"y": ["gpu=half-b"]}


def test_two_partitions_fill_a_device_and_a_third_does_not_fit() -> None:
    devices = allocator(
        partitioned_gpu(),  # type: ignore[arg-type]
        [claim("x", exactly("gpu", f'{SIZE} != "whole"', count=2)), claim("y", exactly("gpu"))],
    )
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu=half-a", "gpu=half-b"]}
    # "whole" is free, but its counters are not.
    assert not devices.fits(pod("y", "y"), "n1", "g").fits


def test_admin_access_takes_a_device_in_use_and_holds_nothing() -> None:
    slices = [node_slice("n1", gpu("gpu-0"))]
    in_use = claim("other", allocated=[("gpu", "n1", "gpu-0")], node_selector=on_node("n1"))
    monitor = claim("x", exactly("gpu", admin_access=True))
    devices = allocator(
        slices,
        [in_use, monitor, claim("y")],
        namespaces={"ns": {"resource.kubernetes.io/admin-access": "true"}},
    )
    devices.take(pod("x", "x"), "n1", "g")
    result = devices.tentative_results("g")["ns/x"].devices.results[0]
    assert (result.device, result.admin_access) == ("gpu-0", True)
    assert devices.holder(("gpu.example.com", "n1", "gpu-0")) == "ns/other"


def test_admin_access_is_refused_in_a_namespace_without_the_label() -> None:
    slices = [node_slice("n1", gpu("gpu-0"))]
    devices = allocator(
        slices, [claim("x", exactly("gpu", admin_access=True))], namespaces={"ns": {}}
    )
    fit = devices.fits(pod("x", "x"), "n1", "g")
    assert fit.verdict is Verdict.REFUSED
    assert "resource.kubernetes.io/admin-access: true" in fit.reason


def test_a_claim_allocated_on_the_api_server_is_reused_where_its_node_selector_allows() -> None:
    slices = [node_slice("n1", gpu("gpu-0")), node_slice("n2", gpu("gpu-1"))]
    done = claim("x", allocated=[("gpu", "n1", "gpu-0")], node_selector=on_node("n1"))
    devices = allocator(slices, [done])
    assert devices.fits(pod("x", "x"), "n1", "g").fits
    fit = devices.fits(pod("x", "x"), "n2", "g")
    assert (fit.verdict, fit.reason) == (Verdict.NODE, NOT_AVAILABLE)
    devices.take(pod("x", "x"), "n1", "g")
    assert devices.commit("g") == {}


def test_an_allocated_device_is_in_use_whoever_it_is_reserved_for() -> None:
    slices = [node_slice("n1", gpu("gpu-0"))]
    nobody = claim("other", allocated=[("gpu", "n1", "gpu-0")], node_selector=on_node("n1"))
    devices = allocator(slices, [nobody, claim("x")])
    assert not devices.fits(pod("x", "x"), "n1", "g").fits


def test_a_claim_may_not_ask_for_more_than_32_devices() -> None:
    slices = [node_slice("n1", *(gpu(f"gpu-{i}") for i in range(40)))]
    devices = allocator(slices, [claim("x", exactly("gpu", count=33))])
    fit = devices.fits(pod("x", "x"), "n1", "g")
    assert fit.verdict is Verdict.POD
    assert fit.reason == "claim ns/x: number of requested devices 33 exceeds the claim limit of 32"


def test_a_missing_class_is_an_error_for_the_pod() -> None:
    devices = allocator([node_slice("n1", gpu("gpu-0"))], [claim("x", exactly("tpu"))])
    fit = devices.fits(pod("x", "x"), "n1", "g")
    assert (fit.verdict, fit.reason) == (
        Verdict.POD,
        "request gpu: device class tpu does not exist",
    )


def test_an_invalid_pool_is_named_when_nothing_fits() -> None:
    slices = [node_slice("n1", gpu("gpu-0"), gpu("gpu-0"))]
    fit = allocator(slices, [claim("x")]).fits(pod("x", "x"), "n1", "g")
    assert (fit.verdict, fit.reason) == (Verdict.NODE, INVALID_POOLS)


def test_a_device_muster_does_not_allocate_is_named_in_the_shortage() -> None:
    waits = gpu("gpu-0")
    waits["bindingConditions"] = ["ready"]
    waits["bindingFailureConditions"] = ["failed"]
    fit = allocator([node_slice("n1", waits)], [claim("x")]).fits(pod("x", "x"), "n1", "g")
    assert fit.reason == CANNOT_ALLOCATE
    assert "1 more would match but need binding conditions" in fit.detail


def test_capacity_requests_are_refused_by_name() -> None:
    slices = [node_slice("n1", gpu("gpu-0", capacity={"memory": "80Gi"}))]
    devices = allocator(slices, [claim("x", exactly("gpu", capacity={"memory": "10Gi"}))])
    fit = devices.fits(pod("x", "x"), "n1", "g")
    assert fit.verdict is Verdict.REFUSED
    assert fit.reason.startswith("claim ns/x: spec.devices.requests[0].exactly.capacity:")


def test_the_result_is_what_kube_scheduler_writes() -> None:
    slices = [node_slice("n1", gpu("gpu-0"), gpu("gpu-1"))]
    classes = [device_class("gpu", config=[{"opaque": {"driver": DRIVER, "parameters": {"a": 1}}}])]
    spec = claim(
        "x",
        exactly("gpu", name="one"),
        exactly("gpu", name="two"),
        config=[
            {"opaque": {"driver": DRIVER, "parameters": {"all": True}}},
            {"requests": ["two"], "opaque": {"driver": DRIVER, "parameters": {"two": True}}},
        ],
    )
    devices = allocator(slices, [spec], classes=classes)
    devices.take(pod("x", "x"), "n1", "g")
    written = msgspec.json.decode(msgspec.json.encode(devices.commit("g")["ns/x"]))
    opaque = {"driver": DRIVER}
    assert written == {
        "devices": {
            "results": [
                {"request": "one", "driver": DRIVER, "pool": "n1", "device": "gpu-0"},
                {"request": "two", "driver": DRIVER, "pool": "n1", "device": "gpu-1"},
            ],
            "config": [
                {
                    "source": "FromClass",
                    "requests": ["one", "two"],
                    "opaque": {**opaque, "parameters": {"a": 1}},
                },
                {"source": "FromClaim", "opaque": {**opaque, "parameters": {"all": True}}},
                {
                    "source": "FromClaim",
                    "requests": ["two"],
                    "opaque": {**opaque, "parameters": {"two": True}},
                },
            ],
        },
        "nodeSelector": on_node("n1"),
    }


def test_devices_reachable_from_several_nodes_write_their_selector_or_none() -> None:
    rack = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}
        ]
    }
    kind = f'device.attributes["{DRIVER}"].kind'
    slices = [
        node_slice(None, gpu("net-0", kind="net"), pool="rack-r1", nodeSelector=rack),
        node_slice(None, gpu("any-0", kind="any"), pool="shared", allNodes=True),
    ]
    nodes = {"n1": {"rack": "r1"}, "n2": {"rack": "r2"}}
    devices = allocator(
        slices,
        [
            claim("x", exactly("gpu", f'{kind} == "net"')),
            claim("y", exactly("gpu", f'{kind} == "any"')),
        ],
        nodes=nodes,
    )
    assert not devices.fits(pod("x", "x"), "n2", "g").fits
    devices.take(pod("x", "x"), "n1", "g")
    assert msgspec.to_builtins(devices.commit("g")["ns/x"].node_selector) == rack
    devices.take(pod("y", "y"), "n2", "h")
    result = devices.commit("h")["ns/y"]
    assert devices_of(result) == ["gpu=any-0"]
    assert result.node_selector is None


def test_a_version_attribute_is_compared_as_a_semantic_version() -> None:
    slices = [
        node_slice(
            "n1",
            gpu("gpu-0", driverVersion=version("1.10.0")),
            gpu("gpu-1", driverVersion=version("1.9.0")),
        )
    ]
    newer = f'device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("1.9.5"))'
    devices = allocator(slices, [claim("x", exactly("gpu", newer))])
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu=gpu-0"]}
