"""Gangs whose pods have ResourceClaims, through whole sessions: devices allocated with the
gang, written onto its binds, refused and waiting pods named, stale allocations replaced."""

from __future__ import annotations

from typing import Any

import msgspec

from scheduler.api import dra, wire
from scheduler.api.snapshot import build_snapshot
from scheduler.engine import schedule
from scheduler.framework.decisions import DeviceBind, SessionResult
from tests.unit.dra.devices import DRIVER, claim, device_class, exactly, gpu, node_slice, on_node

MODEL = f'device.attributes["{DRIVER}"].model'


def pod(name: str, *claims: str, group: str = "g", node: str = "", cpu: str = "1") -> wire.Pod:
    """A pod of gang `group` using the named claims of namespace ns (each a claim the
    resourceclaim controller made from a template for it, as its status says)."""
    body: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"{name}-uid",
            "annotations": {"scheduling.k8s.io/group-name": group},
        },
        "spec": {
            "schedulerName": "muster",
            "containers": [
                {
                    "name": "c",
                    "resources": {
                        "requests": {"cpu": cpu},
                        "claims": [{"name": f"c{i}"} for i in range(len(claims))],
                    },
                }
            ],
            "resourceClaims": [
                {"name": f"c{i}", "resourceClaimTemplateName": "t"} for i in range(len(claims))
            ],
        },
        "status": {
            "phase": "Running" if node else "Pending",
            "resourceClaimStatuses": [
                {"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)
            ],
        },
    }
    if node:
        body["spec"]["nodeName"] = node
    return wire.decode_pod(msgspec.json.encode(body))


def node(name: str, cpu: str = "8") -> wire.Node:
    return wire.from_dict(
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        wire.Node,
    )


def group(name: str, min_member: int, priority: str = "") -> wire.PodGroup:
    spec: dict[str, Any] = {"minMember": min_member, "queue": "default"}
    if priority:
        spec["priorityClassName"] = priority
    return wire.from_dict(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": f"pg-{name}"},
            "spec": spec,
            "status": {"phase": "Inqueue"},
        },
        wire.PodGroup,
    )


def owned(name: str, pod_name: str, *requests: Any, **options: Any) -> dra.ResourceClaim:
    """A claim made from a template for `pod_name`."""
    return claim(name, *requests, owner_pod=pod_name, **options)


def run(
    pods: list[wire.Pod],
    claims: list[dra.ResourceClaim],
    slices: list[dra.ResourceSlice],
    *,
    groups: list[wire.PodGroup],
    nodes: list[str],
    classes: list[dra.DeviceClass] | None = None,
) -> SessionResult:
    queue = wire.from_dict({"metadata": {"name": "default", "uid": "q"}}, wire.Queue)
    snapshot = build_snapshot(
        pods=pods,
        nodes=[node(name) for name in nodes],
        podgroups=groups,
        queues=[queue],
        device_classes=classes if classes is not None else [device_class("gpu")],
        resource_slices=slices,
        resource_claims=claims,
    )
    return schedule(snapshot)


def two_nodes_of_two_gpus() -> list[dra.ResourceSlice]:
    return [node_slice(name, gpu("gpu-0"), gpu("gpu-1")) for name in ("n1", "n2")]


def devices_bound(result: SessionResult) -> dict[str, tuple[str, list[str]]]:
    """Per pod bound: its node and the devices written into its claims."""
    found = {}
    for bind in result.binds:
        assert isinstance(bind, DeviceBind)
        written = []
        for claim_binding in bind.devices:
            assert claim_binding.allocation is not None
            results = claim_binding.allocation.devices.results
            written.extend(f"{r.pool}/{r.device}" for r in results)
        found[bind.name] = (bind.node, written)
    return found


def test_a_gang_of_four_each_with_a_claim_is_bound_with_a_device_on_its_own_node() -> None:
    pods = [pod(f"p{i}", f"p{i}-gpu") for i in range(4)]
    claims = [owned(f"p{i}-gpu", f"p{i}") for i in range(4)]
    result = run(pods, claims, two_nodes_of_two_gpus(), groups=[group("g", 4)], nodes=["n1", "n2"])
    bound = devices_bound(result)
    assert sorted(bound) == ["p0", "p1", "p2", "p3"]
    for node_name, devices in bound.values():
        assert len(devices) == 1 and devices[0].startswith(f"{node_name}/")
    given = [device for _, devices in bound.values() for device in devices]
    assert len(set(given)) == 4
    for bind in result.binds:
        assert isinstance(bind, DeviceBind)
        (written,) = bind.devices
        assert written.allocation is not None
        assert written.allocation.node_selector == msgspec.convert(
            on_node(bind.node), wire.NodeSelector
        )


def test_a_gang_that_fits_in_cpu_but_not_in_devices_waits_whole_in_kube_schedulers_words() -> None:
    pods = [pod(f"p{i}", f"p{i}-gpu") for i in range(5)]
    claims = [owned(f"p{i}-gpu", f"p{i}") for i in range(5)]
    result = run(pods, claims, two_nodes_of_two_gpus(), groups=[group("g", 5)], nodes=["n1", "n2"])
    assert result.binds == []
    messages = {m.name: m.message for m in result.unschedulable}
    assert "0/2 nodes are available: 2 cannot allocate all claims." in messages["p4"]


def test_the_issue_example_places_both_pods_where_pod_by_pod_would_strand_one() -> None:
    slices = [node_slice("n1", gpu("gpu-0", model="a100"), gpu("gpu-1", model="h100"))]
    pods = [pod("x", "x-gpu"), pod("y", "y-gpu")]
    claims = [
        owned("x-gpu", "x"),
        owned("y-gpu", "y", exactly("gpu", f'{MODEL} == "a100"')),
    ]
    result = run(pods, claims, slices, groups=[group("g", 2)], nodes=["n1"])
    assert devices_bound(result) == {
        "x": ("n1", ["n1/gpu-1"]),
        "y": ("n1", ["n1/gpu-0"]),
    }


def test_a_template_claim_not_made_yet_makes_its_pod_wait_saying_so() -> None:
    waiting = pod("p", "p-gpu")
    waiting.status.resource_claim_statuses = []
    result = run([waiting], [], two_nodes_of_two_gpus(), groups=[group("g", 1)], nodes=["n1"])
    assert result.binds == []
    (message,) = result.unschedulable
    assert message.message == 'pod "ns/p": ResourceClaim not created yet'


def test_devices_in_use_by_an_allocated_claim_are_not_given_again() -> None:
    running = pod("old", "old-gpu", group="other", node="n1")
    used = owned(
        "old-gpu",
        "old",
        allocated=[("gpu", "n1", "gpu-0"), ("gpu", "n1", "gpu-1")],
        node_selector=on_node("n1"),
        reserved_for=["old-uid"],
    )
    used.spec.devices.requests[0].exactly.count = 2  # type: ignore[union-attr]
    pods = [running, pod("p0", "p0-gpu"), pod("p1", "p1-gpu")]
    claims = [used, owned("p0-gpu", "p0"), owned("p1-gpu", "p1")]
    result = run(
        pods,
        claims,
        two_nodes_of_two_gpus(),
        groups=[group("g", 2), group("other", 1)],
        nodes=["n1", "n2"],
    )
    assert {node_name for node_name, _ in devices_bound(result).values()} == {"n2"}


def test_a_stale_allocation_of_an_unbound_pod_is_replaced_where_its_pod_lands() -> None:
    # The previous leader wrote p0's claim on n1 and died before the binding; n1 is full
    # in cpu now, so the gang goes to n2 and the bind replaces the old allocation.
    busy = pod("busy", group="other", node="n1", cpu="8")
    stale = owned(
        "p0-gpu",
        "p0",
        allocated=[("gpu", "n1", "gpu-0")],
        node_selector=on_node("n1"),
        reserved_for=["p0-uid"],
    )
    pods = [busy, pod("p0", "p0-gpu"), pod("p1", "p1-gpu")]
    claims = [stale, owned("p1-gpu", "p1")]
    result = run(
        pods,
        claims,
        two_nodes_of_two_gpus(),
        groups=[group("g", 2), group("other", 1)],
        nodes=["n1", "n2"],
    )
    bound = devices_bound(result)
    assert {node_name for node_name, _ in bound.values()} == {"n2"}
    replaced = next(
        b
        for bind in result.binds
        if isinstance(bind, DeviceBind)
        for b in bind.devices
        if b.name == "p0-gpu"
    )
    assert replaced.replaces


def test_a_stale_allocation_is_reused_where_its_pod_lands_within_reach() -> None:
    stale = owned(
        "p0-gpu",
        "p0",
        allocated=[("gpu", "n1", "gpu-1")],
        node_selector=on_node("n1"),
        reserved_for=["p0-uid"],
    )
    result = run(
        [pod("p0", "p0-gpu")],
        [stale],
        two_nodes_of_two_gpus(),
        groups=[group("g", 1)],
        nodes=["n1", "n2"],
    )
    (bind,) = result.binds
    assert isinstance(bind, DeviceBind) and bind.node == "n1"
    (written,) = bind.devices
    assert written.allocation is None and not written.replaces


def test_an_extended_resource_a_device_class_serves_is_refused_by_name_where_no_node_has_it() -> (
    None
):
    gpu_class = device_class("gpu")
    gpu_class.spec.extended_resource_name = "example.com/gpu"
    asks = wire.decode_pod(
        msgspec.json.encode(
            {
                "metadata": {
                    "name": "p",
                    "namespace": "ns",
                    "uid": "p-uid",
                    "annotations": {"scheduling.k8s.io/group-name": "g"},
                },
                "spec": {
                    "schedulerName": "muster",
                    "containers": [
                        {
                            "name": "c",
                            "resources": {
                                "requests": {"cpu": "1", "example.com/gpu": "1"},
                                "limits": {"example.com/gpu": "1"},
                            },
                        }
                    ],
                },
            }
        )
    )
    result = run([asks], [], [], groups=[group("g", 1)], nodes=["n1"], classes=[gpu_class])
    (message,) = result.unschedulable
    assert message.message == (
        "0/1 nodes are available: 1 example.com/gpu is served by DeviceClass gpu through DRA "
        "on nodes that publish none of it, which muster does not allocate yet (ask for it "
        "with a ResourceClaim)."
    )
