"""What the joint allocator (dra/allocator.py) records as gangs are placed: the claims a gang
took, each take as its undo reads it, and the answers kept for the take that follows them.

Plain classes, not dataclasses: some are made for every pod placed, and a dataclass's
__init__ runs interpreted even in the compiled core (scheduler/build.py)."""

from __future__ import annotations

from collections.abc import Mapping
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


class Tentative:
    """A claim a gang being placed took: its devices now, and the pods that use it (their
    keys, with their nodes)."""

    __slots__ = ("allocation", "gang", "pods")

    def __init__(
        self, gang: str, allocation: Allocation, pods: dict[str, str] | None = None
    ) -> None:
        self.gang = gang
        self.allocation = allocation
        self.pods: dict[str, str] = pods if pods is not None else {}


class Take:
    """One `take`, as `give_back` undoes it: the claims it allocated, the previous devices
    of those it re-assigned, the claims it added the pod to the users of, and the stale
    allocations (`DeviceAllocator.stale`) it allocated again."""

    __slots__ = ("allocated", "gang", "pod", "previous", "replaced", "users_added")

    def __init__(
        self,
        pod: PodClaims,
        gang: str,
        allocated: list[str],
        previous: Mapping[str, Allocation],
        users_added: list[str],
        replaced: Mapping[str, dra.AllocationResult],
    ) -> None:
        self.pod = pod
        self.gang = gang
        self.allocated = allocated
        self.previous = previous
        self.users_added = users_added
        self.replaced = replaced


class Plan:
    """An answer for a pod on a node, good while the allocator's state is at `version`: the
    fit, the allocations a search found, or a counted yes (dra/allocator.py, "the quick
    answer": its claims and the first free candidates on the node, as many as they ask,
    which `take` gives them)."""

    __slots__ = ("allocations", "counted", "fit", "version")

    def __init__(
        self,
        version: int,
        fit: DeviceFit,
        allocations: Mapping[str, Allocation] = NOTHING,
        counted: tuple[list[Claim], list[Device]] | None = None,
    ) -> None:
        self.version = version
        self.fit = fit
        self.allocations = allocations
        self.counted = counted
