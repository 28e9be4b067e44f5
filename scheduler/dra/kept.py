"""What allocation decodes once and keeps across sessions: the selector memo's answers, the
inventory of the slices listed, each claim as allocation reads it (and its spec as JSON,
which tells alike claims apart), and each request's candidates.

A session's allocator is built from the cache's objects, which stay the same objects until
their watch brings a new version: the inventory is decoded again only when the slices
listed are not the very objects it was decoded from, a claim only when its object (or its
namespace's admin-access label) changed; the candidates found are kept while the inventory
and the classes are the same objects and no device is reached through nodes' labels (a
session's labels are its own). What each session decides (who holds what) is
never kept: it is rebuilt from the claims' allocations, as after a restart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from scheduler.api import dra
from scheduler.dra.candidates import Found
from scheduler.dra.cel import SelectorMemo
from scheduler.dra.inventory import Inventory
from scheduler.dra.requests import Claim, claim_from_wire

_encode = msgspec.json.Encoder().encode
# The candidate lists kept across sessions at most (one per request's shape and node).
_CANDIDATES_KEPT = 65_536


class DeviceMemo(SelectorMemo):
    """A selector memo that also keeps the allocator's decoded inputs across sessions (the
    scheduler's cache keeps one; a session only reads its objects through it)."""

    def __init__(self) -> None:
        super().__init__()
        self._decoded_slices: tuple[dra.ResourceSlice, ...] = ()
        self._decoded_inventory: Inventory | None = None
        # By claim key: the object decoded, its namespace's admin-access label, the claim.
        self._decoded_claims: dict[str, tuple[dra.ResourceClaim, str | None, Claim]] = {}
        # By claim key: the object and its spec as JSON (what tells alike claims apart).
        self._specs: dict[str, tuple[dra.ResourceClaim, str]] = {}
        # The candidates found (dra/candidates.py) for the inventory and these classes.
        self._found_classes: tuple[dra.DeviceClass, ...] = ()
        self._found: dict[tuple[object, ...], Found] = {}

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
            self._found = {}
        return known.for_nodes(nodes)

    def candidates(self, classes: Sequence[dra.DeviceClass]) -> dict[tuple[object, ...], Found]:
        """Where the candidates of the inventory last returned are kept, for these classes:
        a fresh store when a device is reached through labels, or when that many candidate
        lists are kept already (a bound on nodes' combinations)."""
        known = self._decoded_inventory
        if known is None or known.reach_by_labels:
            return {}
        if (
            len(self._found) >= _CANDIDATES_KEPT
            or len(classes) != len(self._found_classes)
            or any(a is not b for a, b in zip(classes, self._found_classes, strict=True))
        ):
            self._found = {}
            self._found_classes = tuple(classes)
        return self._found

    def claims(
        self,
        objects: Sequence[dra.ResourceClaim],
        namespaces: Mapping[str, Mapping[str, str]] | None,
    ) -> list[Claim]:
        """The claims as allocation reads them (`claim_from_wire`); those no longer listed
        are forgotten."""
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
        self._specs = {key: known for key, known in self._specs.items() if key in kept}
        return found

    def spec_text(self, obj: dra.ResourceClaim) -> str:
        """The claim's spec as JSON, encoded again only when the object changed."""
        key = f"{obj.metadata.namespace}/{obj.metadata.name}"
        known = self._specs.get(key)
        if known is None or known[0] is not obj:
            known = self._specs[key] = (obj, _encode(obj.spec).decode())
        return known[1]
