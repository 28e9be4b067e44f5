"""Pools and their generations, and which devices a node reaches, as kube-scheduler's
structured allocator gathers them."""

from __future__ import annotations

from scheduler.dra import CANNOT_ALLOCATE, Verdict
from scheduler.dra.inventory import COMPLETE, INCOMPLETE, INVALID, Inventory
from tests.unit.dra.devices import allocator, claim, exactly, gpu, held, node_slice, pod

RACK = {
    "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}
    ]
}
NODES = {"n1": {"rack": "r1"}, "n2": {"rack": "r2"}}


def names(inventory: Inventory, node: str) -> list[str]:
    return [device.id[2] for device in inventory.devices_on(node)]


def test_the_newest_complete_generation_of_a_pool_is_the_one_that_counts() -> None:
    old = node_slice("n1", gpu("old-0"), gpu("old-1"), pool="p", generation=1)
    new = node_slice("n1", gpu("new-0"), pool="p", generation=2)
    inventory = Inventory([old, new], {"n1": {}})
    assert [pool.state for pool in inventory.pools] == [COMPLETE]
    assert names(inventory, "n1") == ["new-0"]


def test_an_incomplete_newest_generation_is_never_used_not_even_its_older_one() -> None:
    old = node_slice("n1", gpu("old-0"), pool="p", generation=1)
    half = node_slice("n1", gpu("new-0"), pool="p", generation=2, count=2)
    inventory = Inventory([old, half], {"n1": {}})
    assert [pool.state for pool in inventory.pools] == [INCOMPLETE]
    assert names(inventory, "n1") == []
    fit = allocator([old, half], [claim("x")]).fits(pod("x", "x"), "n1", "g")
    assert (fit.verdict, fit.reason) == (Verdict.NODE, CANNOT_ALLOCATE)


def test_a_pool_complete_once_all_its_slices_of_the_generation_are_there() -> None:
    first = node_slice("n1", gpu("a"), pool="p", count=2, name="s-1")
    second = node_slice("n1", gpu("b"), pool="p", count=2, name="s-2")
    assert names(Inventory([first, second], {"n1": {}}), "n1") == ["a", "b"]


def test_all_on_an_incomplete_pool_is_an_error_for_the_pod() -> None:
    whole = node_slice("n1", gpu("gpu-0"), pool="p-ok")
    updating = node_slice("n1", gpu("gpu-1"), pool="p-updating", count=2)
    devices = allocator([whole, updating], [claim("x", exactly("gpu", all_devices=True))])
    fit = devices.fits(pod("x", "x"), "n1", "g")
    assert fit.verdict is Verdict.POD
    assert fit.reason == (
        "claim ns/x, request gpu: asks for all devices, but resource pool "
        "gpu.example.com/p-updating is currently being updated"
    )


def test_a_pool_with_a_duplicate_device_or_a_missing_counter_is_invalid() -> None:
    duplicate = node_slice("n1", gpu("gpu-0"), gpu("gpu-0"), pool="dup")
    missing = node_slice(
        "n1",
        gpu("gpu-1", consumes=[{"counterSet": "none", "counters": {"m": {"value": "1"}}}]),
        pool="missing",
    )
    inventory = Inventory([duplicate, missing], {"n1": {}})
    assert [(pool.name, pool.state, pool.reason) for pool in inventory.pools] == [
        ("dup", INVALID, "duplicate device name gpu-0"),
        ("missing", INVALID, "counter set none not found"),
    ]
    assert names(inventory, "n1") == []


def test_a_node_reaches_its_own_devices_those_for_all_and_those_its_labels_select() -> None:
    slices = [
        node_slice("n1", gpu("local-1")),
        node_slice("n2", gpu("local-2")),
        node_slice(None, gpu("rack-r1"), pool="rack", nodeSelector=RACK),
        node_slice(None, gpu("everywhere"), pool="fabric", allNodes=True),
    ]
    inventory = Inventory(slices, NODES)
    assert names(inventory, "n1") == ["everywhere", "local-1", "rack-r1"]
    assert names(inventory, "n2") == ["everywhere", "local-2"]


def test_per_device_node_selection_reads_each_devices_own_fields() -> None:
    local = gpu("local-2")
    local["nodeName"] = "n2"
    racked = gpu("rack-r1")
    racked["nodeSelector"] = RACK
    everywhere = gpu("everywhere")
    everywhere["allNodes"] = True
    item = node_slice(None, local, racked, everywhere, pool="mixed", perDeviceNodeSelection=True)
    inventory = Inventory([item], NODES)
    assert names(inventory, "n1") == ["rack-r1", "everywhere"]
    assert names(inventory, "n2") == ["local-2", "everywhere"]
    devices = allocator([item], [claim("x", exactly(count=2))], nodes=NODES)
    devices.take(pod("x", "x"), "n2", "g")
    assert held(devices) == {"x": ["gpu=local-2", "gpu=everywhere"]}


def test_a_slice_with_no_kind_of_node_selection_is_skipped() -> None:
    assert names(Inventory([node_slice(None, gpu("future"), pool="p")], {"n1": {}}), "n1") == []


def test_devices_muster_does_not_allocate_say_why() -> None:
    shared = gpu("shared")
    shared["allowMultipleAllocations"] = True
    waits = gpu("waits")
    waits["bindingConditions"] = ["ready"]
    inventory = Inventory([node_slice("n1", gpu("plain"), shared, waits)], {"n1": {}})
    refusals = {device.id[2]: device.refusal for device in inventory.devices}
    assert refusals["plain"] is None
    assert refusals["shared"] is not None and "consumable capacity" in refusals["shared"]
    assert refusals["waits"] is not None and "binding conditions" in refusals["waits"]
