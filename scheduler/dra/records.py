"""What the joint allocator (dra/allocator.py) records as gangs are placed: the claims a gang
took, each take as its undo reads it, and the answers kept for the take that follows them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from scheduler.api import dra
from scheduler.api.resource_claims import PodClaims
from scheduler.dra.allocation import Allocation
from scheduler.dra.fit import DeviceFit
from scheduler.dra.inventory import Device
from scheduler.dra.requests import Claim

# What a counted take re-assigns and replaces, and a counted plan's searched allocations.
NOTHING: Mapping[str, Any] = MappingProxyType({})


@dataclass(slots=True)
class Tentative:
    """A claim a gang being placed took: its devices now, and the pods that use it."""

    gang: str
    allocation: Allocation
    # The taken pods that use the claim, and their nodes.
    pods: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Take:
    """One `take`, as `give_back` undoes it."""

    pod: PodClaims
    gang: str
    # The claims this take allocated, the previous devices of those it re-assigned, and
    # the claims it added the pod to the users of.
    allocated: list[str]
    previous: Mapping[str, Allocation]
    users_added: list[str]
    # Stale allocations (see `DeviceAllocator.stale`) this take allocated again.
    replaced: Mapping[str, dra.AllocationResult]


@dataclass(slots=True)
class Plan:
    """An answer for a pod on a node, good while the allocator's state is at `version`."""

    version: int
    fit: DeviceFit
    allocations: Mapping[str, Allocation] = field(default_factory=lambda: NOTHING)
    # A counted yes (dra/allocator.py, "the quick answer"): its claims and the first free
    # candidates on the node, as many as they ask, which `take` gives them.
    counted: tuple[list[Claim], list[Device]] | None = None
