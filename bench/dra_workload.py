"""GPU gangs through Dynamic Resource Allocation, for session_bench.py --dra: a cluster and a
backlog built through the cache's handlers as the scheduler's watches build them, and the
check that a session's binds carry every claim's devices.

Each node publishes its GPUs in one node-local ResourceSlice (a pool of its own, named for
the node), each GPU with a model and an index attribute; one DeviceClass selects the
driver's devices by CEL. Each pod's spec names one claim from the ResourceClaimTemplate
`one-gpu`; its ResourceClaim is the one the resourceclaim controller makes: owned by the pod
(a controller reference), annotated with the pod's claim name, asking one device of the
class, and named in the pod's status.resourceClaimStatuses. The backlog without claims is
the same gangs and pods with no resourceClaims, on the same nodes with no DRA objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from scheduler.api import dra, wire
from scheduler.cache.kinds import (
    deviceclasses,
    nodes,
    podgroups,
    pods,
    queues,
    resourceclaims,
    resourceslices,
)
from scheduler.cache.world import World
from scheduler.framework.decisions import Bind, DeviceBind

DRIVER = "gpu.example.com"
GPU_CLASS = "gpu"
TEMPLATE = "one-gpu"
# The name of the claim in the pod's spec.resourceClaims (and in its container's claims).
POD_CLAIM = "gpu"
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ZONES = 10
NAMESPACE = "bench"
_encode = msgspec.json.Encoder().encode


def gpu_world(node_count: int, gpus: int, gang_count: int, gang: int, *, claims: bool) -> World:
    """Nodes of 32 cpu / 128Gi in ZONES zones and `gang_count` pending gangs of `gang`
    1-cpu / 2Gi pods over two queues (weights 1 and 3); with `claims`, the nodes publish
    `gpus` GPUs each and every pod claims one of them."""
    world = World(frozenset({"muster"}))
    for name, weight in (("default", 1), ("team-a", 3)):
        queue = {"metadata": {"name": name}, "spec": {"weight": weight}}
        queues.upsert(world, wire.from_dict(queue, wire.Queue))
    if claims:
        deviceclasses.upsert(world, gpu_class())
    for index in range(node_count):
        name = f"node-{index:05d}"
        nodes.upsert(world, _node(name, index))
        if claims:
            resourceslices.upsert(world, node_slice(name, gpus))
    for group in range(gang_count):
        _gang(world, group, gang, claims=claims)
    return world


def gpu_class() -> dra.DeviceClass:
    """The DeviceClass of the driver's GPUs, selected by a CEL expression on the driver."""
    body = {
        "metadata": {"name": GPU_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    return msgspec.json.decode(_encode(body), type=dra.DeviceClass)


def node_slice(node: str, gpus: int) -> dra.ResourceSlice:
    """The node's GPUs, as its driver publishes them: one slice, one pool, generation 1."""
    devices = [
        {
            "name": f"gpu-{index}",
            "attributes": {"model": {"string": "h100"}, "index": {"int": index}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for index in range(gpus)
    ]
    body = {
        "metadata": {"name": f"{node}-{DRIVER}", "uid": f"uid-{node}-gpus", "resourceVersion": "1"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": devices,
        },
    }
    return msgspec.json.decode(_encode(body), type=dra.ResourceSlice)


def _node(name: str, index: int) -> wire.Node:
    room = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    body = {
        "metadata": {"name": name, "labels": {HOST: name, ZONE: f"zone-{index % ZONES}"}},
        "status": {
            "allocatable": room,
            "capacity": room,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    return wire.from_dict(body, wire.Node)


def _gang(world: World, group: int, size: int, *, claims: bool) -> None:
    name = f"pg-{group:06d}"
    created = f"2026-01-01T00:{group // 60 % 60:02d}:{group % 60:02d}Z"
    podgroup = {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"pg-uid-{group}",
            "creationTimestamp": created,
        },
        "spec": {
            "minMember": size,
            "queue": "team-a" if group % 2 else "default",
            "minResources": {"cpu": str(size), "memory": f"{2 * size}Gi"},
        },
        "status": {"phase": "Pending"},
    }
    podgroups.upsert(world, wire.from_dict(podgroup, wire.PodGroup))
    for member in range(size):
        pod = f"{name}-{member}"
        uid = f"pod-uid-{group}-{member}"
        claim = f"{pod}-{POD_CLAIM}-{group * size + member:05x}" if claims else ""
        if claims:
            resourceclaims.upsert(world, claim_for(pod, uid, claim))
        pods.upsert(world, wire.decode_pod(_encode(_pod(pod, uid, name, created, claim))))


def claim_for(pod: str, uid: str, name: str) -> dra.ResourceClaim:
    """The claim the resourceclaim controller makes from the template for the pod."""
    request = {"deviceClassName": GPU_CLASS, "allocationMode": "ExactCount", "count": 1}
    body = {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-{name}",
            "annotations": {dra.POD_CLAIM_NAME_ANNOTATION: POD_CLAIM},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod,
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}},
    }
    return msgspec.json.decode(_encode(body), type=dra.ResourceClaim)


def _pod(name: str, uid: str, group: str, created: str, claim: str) -> dict[str, Any]:
    container: dict[str, Any] = {"requests": {"cpu": "1", "memory": "2Gi"}}
    spec: dict[str, Any] = {"schedulerName": "muster", "containers": [{"name": "c"}]}
    status: dict[str, Any] = {"phase": "Pending"}
    if claim:
        container["claims"] = [{"name": POD_CLAIM}]
        spec["resourceClaims"] = [{"name": POD_CLAIM, "resourceClaimTemplateName": TEMPLATE}]
        status["resourceClaimStatuses"] = [{"name": POD_CLAIM, "resourceClaimName": claim}]
    spec["containers"][0]["resources"] = container
    return {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": uid,
            "annotations": {"scheduling.k8s.io/group-name": group},
            "creationTimestamp": created,
        },
        "spec": spec,
        "status": status,
    }


def unallocated_binds(world: World, binds: Sequence[Bind]) -> list[str]:
    """What is wrong with the binds of a session over a world built with claims: a bind
    that does not write its pod's claim, an allocation of other than one device of the
    driver on the bind's node, or a device given twice. Empty when every bind carries its
    claim's allocation."""
    wrong: list[str] = []
    given: set[tuple[str, str]] = set()
    for bind in binds:
        claims = world.tasks[bind.uid].devices
        expected = {key.split("/", 1)[1] for key in claims.claims} if claims else set()
        written = {claim.name for claim in bind.devices} if isinstance(bind, DeviceBind) else set()
        if not expected or written != expected:
            wrong.append(f"{bind.name}: claims {sorted(expected)}, written {sorted(written)}")
            continue
        for claim in bind.devices if isinstance(bind, DeviceBind) else ():
            allocation = claim.allocation
            if allocation is None or not _on_node(allocation, bind.node):
                wrong.append(f"{bind.name}: claim {claim.name} not allocated on {bind.node}")
                continue
            for result in allocation.devices.results:
                device = (result.pool, result.device)
                if device in given:
                    wrong.append(f"{bind.name}: device {device} given twice")
                given.add(device)
    return wrong


def _on_node(allocation: dra.AllocationResult, node: str) -> bool:
    results = allocation.devices.results
    selector = allocation.node_selector
    return (
        len(results) == 1
        and results[0].driver == DRIVER
        and results[0].pool == node
        and selector is not None
        and any(
            node in requirement.values
            for term in selector.node_selector_terms
            for requirement in [*term.match_fields, *term.match_expressions]
        )
    )
