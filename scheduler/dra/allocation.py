"""A claim's devices as muster chose them (an Allocation: the picks and the node they pin it
to), the devices an allocation on the API server holds, where one may be used, and the first
free devices a counted claim takes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from scheduler.api import dra, wire
from scheduler.api.matching import selector_matches, wire_term
from scheduler.dra.inventory import Device, DeviceId
from scheduler.dra.requests import Claim
from scheduler.dra.search import Pick


class Allocation:
    """The devices muster chose for a claim, and the node they pin it to (a node-local
    device), or None (usable wherever every device is). Not a dataclass, as Pick is not."""

    __slots__ = ("node", "picks")

    def __init__(self, picks: tuple[Pick, ...], node: str | None) -> None:
        self.picks: Final = picks
        self.node: Final = node

    def reaches(self, node: str, labels: Mapping[str, str]) -> bool:
        """Whether a pod on the node can use these devices."""
        if self.node is not None:
            return node == self.node
        return all(pick.device.reaches(node, labels) for pick in self.picks)

    @property
    def held(self) -> list[DeviceId]:
        """The devices it holds (admin access holds none)."""
        return [pick.device.id for pick in self.picks if not pick.choice.admin_access]


def first_free(claims: list[Claim], free: list[Device], node: str) -> dict[str, Allocation]:
    """The counted claims' devices: `free`, the first free candidates as many as they ask,
    request by request in kube-scheduler's order (what the matching gives slots that share
    their candidates). Each request of a counted claim has one choice, so the claim's
    choices are its requests'."""
    allocations: dict[str, Allocation] = {}
    at = 0
    for claim in claims:
        picks: list[Pick] = []
        bound = False
        for choice in claim.choices:
            for _ in range(choice.count):
                device = free[at]
                picks.append(Pick(choice, device))
                bound = bound or device.node_bound
                at += 1
        allocations[claim.key] = Allocation(tuple(picks), node if bound else None)
    return allocations


def allocation_held(allocation: dra.AllocationResult) -> list[DeviceId]:
    """The devices an allocation holds (admin access holds none)."""
    return [
        (result.driver, result.pool, result.device)
        for result in allocation.devices.results
        if not result.admin_access
    ]


def allows(selector: wire.NodeSelector | None, node: str, labels: Mapping[str, str]) -> bool:
    """Whether an allocation's node selector admits the node (no selector: every node)."""
    if selector is None:
        return True
    return selector_matches(tuple(wire_term(t) for t in selector.node_selector_terms), labels, node)
