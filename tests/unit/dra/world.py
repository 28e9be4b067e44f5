"""A World of simulated GPUs for session tests of pods with ResourceClaims, built through the
cache's handlers as the scheduler's watches build it: world_with_gpus(["n1"]), queue(...),
gang(world, "g", 4) (each member with a claim made from a template for it)."""

from __future__ import annotations

from typing import Any

import msgspec

from scheduler.api import wire
from scheduler.cache.kinds import (
    deviceclasses,
    nodes,
    podgroups,
    pods,
    priorityclasses,
    queues,
    resourceclaims,
    resourceslices,
)
from scheduler.cache.world import World
from tests.unit.dra.devices import claim, device_class, exactly, gpu, node_slice, on_node


def pod(
    name: str,
    *claims: str,
    group: str = "g",
    templated: bool = True,
    node: str = "",
    priority: int = 0,
    cpu: str = "1",
) -> wire.Pod:
    """A pod of gang `group` using claims of namespace ns: made from a template for it (as
    its status says), or `templated=False` named claims; running on `node` when given."""
    spec_claims: list[dict[str, Any]] = []
    statuses = []
    for index, claim_name in enumerate(claims):
        if templated:
            spec_claims.append({"name": f"c{index}", "resourceClaimTemplateName": "t"})
            statuses.append({"name": f"c{index}", "resourceClaimName": claim_name})
        else:
            spec_claims.append({"name": f"c{index}", "resourceClaimName": claim_name})
    body = {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"{name}-uid",
            "annotations": {"scheduling.k8s.io/group-name": group},
        },
        "spec": {
            "schedulerName": "muster",
            "priority": priority,
            "containers": [
                {
                    "name": "c",
                    "resources": {
                        "requests": {"cpu": cpu},
                        "claims": [{"name": entry["name"]} for entry in spec_claims],
                    },
                }
            ],
            "resourceClaims": spec_claims,
            "nodeName": node,
        },
        "status": {
            "phase": "Running" if node else "Pending",
            "startTime": "2026-01-01T00:00:00Z" if node else None,
            "resourceClaimStatuses": statuses,
        },
    }
    return wire.decode_pod(msgspec.json.encode(body))


def world_with_gpus(node_names: list[str], gpus: int = 2) -> World:
    world = World()
    for name in node_names:
        nodes.upsert(
            world,
            wire.from_dict(
                {
                    "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                    "status": {
                        "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                },
                wire.Node,
            ),
        )
        resourceslices.upsert(
            world, node_slice(name, *(gpu(f"gpu-{i}") for i in range(gpus)), name=f"{name}-s")
        )
    deviceclasses.upsert(world, device_class("gpu"))
    return world


def queue(world: World, name: str, **spec: Any) -> None:
    queues.upsert(world, wire.from_dict({"metadata": {"name": name}, "spec": spec}, wire.Queue))


def priority_class(world: World, name: str, value: int) -> None:
    priorityclasses.upsert(
        world, wire.from_dict({"metadata": {"name": name}, "value": value}, wire.PriorityClass)
    )


def gang(
    world: World,
    name: str,
    size: int,
    queue_name: str = "default",
    *,
    min_member: int | None = None,
    priority: str = "",
    value: int = 0,
    on: str = "",
    gpus: int = 1,
    created: str = "",
) -> None:
    """A gang of `size` pods, each with a claim of `gpus` devices made for it; running on
    node `on` (its claims allocated there, in device order) when given."""
    spec: dict[str, Any] = {
        "minMember": size if min_member is None else min_member,
        "queue": queue_name,
    }
    if priority:
        spec["priorityClassName"] = priority
    podgroups.upsert(
        world,
        wire.from_dict(
            {
                "metadata": {
                    "name": name,
                    "namespace": "ns",
                    "uid": f"pg-{name}",
                    "creationTimestamp": created or None,
                },
                "spec": spec,
                "status": {"phase": "Running" if on else "Inqueue"},
            },
            wire.PodGroup,
        ),
    )
    for index in range(size):
        member = f"{name}-{index}"
        allocated = None
        if on:
            taken = sum(
                len(c.status.allocation.devices.results)
                for c in world.resource_claims.values()
                if c.status.allocation is not None
                and c.status.allocation.devices.results[0].pool == on
            )
            allocated = [("gpu", on, f"gpu-{taken + i}") for i in range(gpus)]
        resourceclaims.upsert(
            world,
            claim(
                f"{member}-gpu",
                exactly(count=gpus),
                owner_pod=member,
                allocated=allocated,
                node_selector=on_node(on) if on else None,
                reserved_for=[f"{member}-uid"] if on else None,
            ),
        )
        pods.upsert(world, pod(member, f"{member}-gpu", group=name, node=on, priority=value))
