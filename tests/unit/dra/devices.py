"""Builders for DRA objects as the API server serves them: gpu("gpu-0", model="a100"),
node_slice("n1", ...), device_class("gpu"), claim("x", exactly("gpu")), pod("x", "x")."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import msgspec

from scheduler.api import dra
from scheduler.dra import DeviceAllocator, PodClaims, SelectorMemo

DRIVER = "gpu.example.com"
Obj = dict[str, Any]
_slices = itertools.count()


def _decode(body: Obj, kind: type[Any]) -> Any:
    return msgspec.json.decode(msgspec.json.encode(body), type=kind)


def gpu(
    name: str,
    *,
    capacity: Mapping[str, str] | None = None,
    taints: list[Obj] | None = None,
    consumes: list[Obj] | None = None,
    qualified: Mapping[str, Any] | None = None,
    **attributes: Any,
) -> Obj:
    """A device: unqualified attributes (the driver's domain) as keywords, qualified
    ones ("domain/name") in `qualified`; values typed as the API types them (str, int,
    bool; a version via version("1.2.3"))."""
    device: Obj = {"name": name, "attributes": attribute_map({**attributes, **(qualified or {})})}
    if capacity:
        device["capacity"] = {key: {"value": value} for key, value in capacity.items()}
    if taints:
        device["taints"] = taints
    if consumes:
        device["consumesCounters"] = consumes
    return device


def attribute_map(attributes: Mapping[str, Any]) -> Obj:
    """Attributes as a slice carries them ({"model": {"string": "a100"}})."""
    return {key: _attribute(value) for key, value in attributes.items()}


def _attribute(value: Any) -> Obj:
    if isinstance(value, dict):
        return value
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": value}


def version(text: str) -> Obj:
    """A version attribute."""
    return {"version": text}


def node_slice(
    node: str | None,
    *devices: Obj,
    pool: str | None = None,
    generation: int = 1,
    count: int = 1,
    driver: str = DRIVER,
    name: str | None = None,
    counters: list[Obj] | None = None,
    **placement: Any,
) -> dra.ResourceSlice:
    """A slice of one pool: node-local when `node` is given, else as `placement` says
    (allNodes=True, nodeSelector={...}, perDeviceNodeSelection=True)."""
    spec: Obj = {
        "driver": driver,
        "pool": {
            "name": pool or node or "shared",
            "generation": generation,
            "resourceSliceCount": count,
        },
        **placement,
    }
    if node is not None:
        spec["nodeName"] = node
    if devices:
        spec["devices"] = list(devices)
    if counters:
        spec["sharedCounters"] = counters
    body = {
        "metadata": {
            "name": name or f"slice-{next(_slices)}",
            "uid": f"uid-{name}",
            "resourceVersion": "1",
        },
        "spec": spec,
    }
    decoded: dra.ResourceSlice = _decode(body, dra.ResourceSlice)
    return decoded


def device_class(name: str, *selectors: str, config: list[Obj] | None = None) -> dra.DeviceClass:
    """A DeviceClass: its selectors (default: the test driver's devices)."""
    texts = selectors or (f'device.driver == "{DRIVER}"',)
    spec: Obj = {"selectors": [{"cel": {"expression": text}} for text in texts]}
    if config:
        spec["config"] = config
    decoded: dra.DeviceClass = _decode({"metadata": {"name": name}, "spec": spec}, dra.DeviceClass)
    return decoded


def exactly(
    device_class: str = "gpu",
    *selectors: str,
    name: str = "gpu",
    count: int | None = None,
    all_devices: bool = False,
    admin_access: bool | None = None,
    tolerations: list[Obj] | None = None,
    capacity: Mapping[str, str] | None = None,
) -> Obj:
    """A request with `exactly`."""
    request: Obj = {"deviceClassName": device_class}
    if selectors:
        request["selectors"] = [{"cel": {"expression": text}} for text in selectors]
    if all_devices:
        request["allocationMode"] = "All"
    if count is not None:
        request["count"] = count
    if admin_access is not None:
        request["adminAccess"] = admin_access
    if tolerations:
        request["tolerations"] = tolerations
    if capacity:
        request["capacity"] = {"requests": dict(capacity)}
    return {"name": name, "exactly": request}


def first_available(name: str, *subs: Obj) -> Obj:
    """A request with sub-requests, tried in order (each made with `sub`)."""
    return {"name": name, "firstAvailable": list(subs)}


def sub(name: str, device_class: str = "gpu", *selectors: str, count: int | None = None) -> Obj:
    """A firstAvailable sub-request."""
    body: Obj = {"name": name, "deviceClassName": device_class}
    if selectors:
        body["selectors"] = [{"cel": {"expression": text}} for text in selectors]
    if count is not None:
        body["count"] = count
    return body


def claim(
    name: str,
    *requests: Obj,
    namespace: str = "ns",
    constraints: list[Obj] | None = None,
    config: list[Obj] | None = None,
    allocated: list[tuple[str, str, str]] | None = None,
    node_selector: Obj | None = None,
    reserved_for: list[str] | None = None,
    owner_pod: str | None = None,
    deleting: bool = False,
) -> dra.ResourceClaim:
    """A claim (default: one request for one device of class "gpu"); `allocated` gives
    its status.allocation as (request, pool, device) results of the test driver."""
    metadata: Obj = {"name": name, "namespace": namespace, "uid": f"{name}-uid"}
    if owner_pod is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": owner_pod,
                "uid": f"{owner_pod}-uid",
                "controller": True,
            }
        ]
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    devices: Obj = {"requests": list(requests) or [exactly()]}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    status: Obj = {}
    if allocated is not None:
        allocation: Obj = {
            "devices": {
                "results": [
                    {"request": r, "driver": DRIVER, "pool": p, "device": d}
                    for r, p, d in allocated
                ]
            }
        }
        if node_selector is not None:
            allocation["nodeSelector"] = node_selector
        status["allocation"] = allocation
    if reserved_for:
        status["reservedFor"] = [
            {"resource": "pods", "name": uid.removesuffix("-uid"), "uid": uid}
            for uid in reserved_for
        ]
    body = {"metadata": metadata, "spec": {"devices": devices}, "status": status}
    decoded: dra.ResourceClaim = _decode(body, dra.ResourceClaim)
    return decoded


def on_node(node: str) -> Obj:
    """An allocation's node selector for one node."""
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        ]
    }


def pod(name: str, *claims: str, namespace: str = "ns") -> PodClaims:
    """A pod using the named claims of its namespace."""
    return PodClaims(
        namespace, name, f"{name}-uid", tuple(f"{namespace}/{claim}" for claim in claims)
    )


def allocator(
    slices: list[dra.ResourceSlice],
    claims: list[dra.ResourceClaim],
    *,
    classes: list[dra.DeviceClass] | None = None,
    nodes: Mapping[str, Mapping[str, str]] | None = None,
    **options: Any,
) -> DeviceAllocator:
    """An allocator over these objects (default: class "gpu", the slices' nodes)."""
    if nodes is None:
        names = {item.spec.node_name for item in slices if item.spec.node_name}
        nodes = {name: {} for name in sorted(names) or ["n1"]}
    return DeviceAllocator(
        classes if classes is not None else [device_class("gpu")],
        slices,
        claims,
        nodes,
        memo=options.pop("memo", None) or SelectorMemo(),
        **options,
    )


def devices_of(result: dra.AllocationResult) -> list[str]:
    """The devices of an AllocationResult, as request=device."""
    return [f"{r.request}={r.device}" for r in result.devices.results]


def held(allocator_: DeviceAllocator, gang: str = "g") -> dict[str, list[str]]:
    """What the gang's claims hold now, by claim name (what commit would write); no device
    may be given to two claims."""
    results = allocator_.tentative_results(gang)
    given = [
        (r.driver, r.pool, r.device)
        for result in results.values()
        for r in result.devices.results
        if not r.admin_access
    ]
    assert len(given) == len(set(given)), f"a device given twice: {given}"
    return {key.split("/", 1)[1]: devices_of(result) for key, result in sorted(results.items())}
