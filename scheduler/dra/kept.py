"""What allocation decodes once and keeps across sessions: the selector memo's answers, the
inventory of the slices listed, each claim as allocation reads it (and its spec's text,
which tells alike claims apart), each request's candidates, and the pods' entries.

A session's allocator is built from the cache's objects, which stay the same objects until
their watch brings a new version: the inventory is decoded again only when the slices
listed are not the very objects it was decoded from, a claim only when its object (or its
namespace's admin-access label) changed, and the very same objects give the very same
ClaimSet without a walk over them; the candidates found, the counted ones and the pods'
entries (dra/pods.py) are kept while the inventory and the classes are the same objects
and no device is reached through nodes' labels (a session's labels are its own). What each
session decides (who holds what) is never kept: it is rebuilt from the claims'
allocations, as after a restart.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.api import dra
from scheduler.dra.candidates import Found
from scheduler.dra.cel import SelectorMemo
from scheduler.dra.inventory import Device, Inventory
from scheduler.dra.pods import PodEntries
from scheduler.dra.requests import Claim, ClaimSet, ClaimSpecs, claim_from_wire, claim_set

# The candidate lists kept across sessions at most (one per request's shape and node).
_CANDIDATES_KEPT = 65_536


@dataclass(slots=True)
class KeptCandidates:
    """What is kept while the inventory and the classes are the same objects: the
    candidates found (dra/candidates.py), the counted ones by shape and node, and the pods'
    entries (dra/pods.py), whose lanes read those."""

    found: dict[tuple[object, ...], Found] = field(default_factory=dict)
    counted: dict[tuple[object, ...], dict[str, list[Device] | None]] = field(default_factory=dict)
    pods: PodEntries = field(default_factory=PodEntries)


class DeviceMemo(SelectorMemo):
    """A selector memo that also keeps the allocator's decoded inputs across sessions (the
    scheduler's cache keeps one; a session only reads its objects through it)."""

    def __init__(self) -> None:
        super().__init__()
        self._decoded_slices: tuple[dra.ResourceSlice, ...] = ()
        self._decoded_inventory: Inventory | None = None
        # By claim key: the object decoded, its namespace's admin-access label, the claim.
        self._decoded_claims: dict[str, tuple[dra.ResourceClaim, str | None, Claim]] = {}
        # What tells alike claims apart (nodefit/dynamicresources.py reads it).
        self.specs = ClaimSpecs()
        # The objects last decoded, their namespaces' labels then, and what they gave.
        self._claim_set: (
            tuple[tuple[dra.ResourceClaim, ...], dict[str, dict[str, str]] | None, ClaimSet] | None
        ) = None
        # The candidates found (dra/candidates.py) for the inventory and these classes.
        self._found_classes: tuple[dra.DeviceClass, ...] = ()
        self._kept = KeptCandidates()

    def inventory(
        self, slices: Sequence[dra.ResourceSlice], nodes: Mapping[str, Mapping[str, str]]
    ) -> Inventory:
        """The inventory of these slices, seen from these nodes."""
        known = self._decoded_inventory
        if (
            known is None
            or len(slices) != len(self._decoded_slices)
            or any(a is not b for a, b in zip(slices, self._decoded_slices, strict=True))
        ):
            known = self._decoded_inventory = Inventory(slices, {})
            self._decoded_slices = tuple(slices)
            self._kept = KeptCandidates()
        return known.for_nodes(nodes)

    def candidates(self, classes: Sequence[dra.DeviceClass]) -> KeptCandidates | None:
        """What is kept for the inventory last returned and these classes: None (keep
        nothing) when a device is reached through labels; a fresh store when the classes
        changed, or when that many candidate lists are kept already (a bound on nodes'
        combinations)."""
        known = self._decoded_inventory
        if known is None or known.reach_by_labels:
            return None
        kept = self._kept
        if (
            len(kept.found) >= _CANDIDATES_KEPT
            or len(classes) != len(self._found_classes)
            or any(a is not b for a, b in zip(classes, self._found_classes, strict=True))
        ):
            kept = self._kept = KeptCandidates()
            self._found_classes = tuple(classes)
        return kept

    def claims(
        self,
        objects: Sequence[dra.ResourceClaim],
        namespaces: Mapping[str, Mapping[str, str]] | None,
    ) -> ClaimSet:
        """The claims as allocation reads them (`claim_from_wire`); those no longer listed
        are forgotten. The same objects and namespaces' labels give the same set."""
        last = self._claim_set
        if (
            last is not None
            and last[1] == namespaces
            and len(objects) == len(last[0])
            and all(map(operator.is_, objects, last[0]))
        ):
            return last[2]
        kept: dict[str, tuple[dra.ResourceClaim, str | None, Claim]] = {}
        found: list[Claim] = []
        for obj in objects:
            labels = None if namespaces is None else namespaces.get(obj.metadata.namespace, {})
            admin = None if labels is None else labels.get(dra.ADMIN_ACCESS_LABEL, "")
            key = f"{obj.metadata.namespace}/{obj.metadata.name}"
            known = self._decoded_claims.get(key)
            if known is None or known[0] is not obj or known[1] != admin:
                known = (obj, admin, claim_from_wire(obj, labels))
            kept[key] = known
            found.append(known[2])
        self._decoded_claims = kept
        self.specs.keep_only(kept)
        decoded = claim_set(found)
        self._claim_set = (tuple(objects), _copied(namespaces), decoded)
        return decoded


def _copied(
    namespaces: Mapping[str, Mapping[str, str]] | None,
) -> dict[str, dict[str, str]] | None:
    """The namespaces' labels as they are now (the caller's mapping may change)."""
    if namespaces is None:
        return None
    return {name: dict(labels) for name, labels in namespaces.items()}
