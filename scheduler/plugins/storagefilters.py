"""The predicates plugin's storage filters for pods with claims: VolumeBinding, VolumeZone,
VolumeRestrictions and NodeVolumeLimits, with Volcano's toggles, behind one facade."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec.structs
from pydantic import Field

from scheduler.api.node import NodeInfo
from scheduler.api.snapshot import StorageView
from scheduler.api.task import TaskInfo
from scheduler.framework.arguments import Arguments
from scheduler.framework.decisions import Bind
from scheduler.framework.status import OK, Status
from scheduler.plugins.nodevolumelimits import CSIVolumeLimits
from scheduler.plugins.volumebinding import VolumeBinding
from scheduler.plugins.volumerestrictions import ReadWriteOncePod
from scheduler.plugins.volumezone import volume_zone_verdict


class VolumePredicateArguments(Arguments):
    """The predicates plugin's storage toggles, in Volcano's spelling (all on by default)."""

    volume_binding_enable: bool = Field(True, alias="predicate.VolumeBindingEnable")
    volume_zone_enable: bool = Field(True, alias="predicate.VolumeZoneEnable")
    node_volume_limits_enable: bool = Field(True, alias="predicate.NodeVolumeLimitsEnable")


class StorageFilters:
    """The storage filters of one session, as the predicates plugin calls them for pods with
    claims: static VolumeBinding then VolumeZone; dynamic VolumeRestrictions
    (ReadWriteOncePod), NodeVolumeLimits (CSI), then VolumeBinding's session-taken volumes
    (kube-scheduler's order within each)."""

    def __init__(
        self,
        storage: StorageView,
        nodes: Mapping[str, NodeInfo],
        arguments: VolumePredicateArguments,
    ) -> None:
        self.storage = storage
        self.binding = VolumeBinding(storage, nodes) if arguments.volume_binding_enable else None
        self.zone = arguments.volume_zone_enable
        self.exclusive = ReadWriteOncePod(storage, nodes)
        self.limits = CSIVolumeLimits(storage) if arguments.node_volume_limits_enable else None

    def admits(self, task: TaskInfo, node: NodeInfo) -> Status:
        """Static: claims, bound volumes' node affinity and zones, where claims can bind."""
        if self.binding is not None:
            status = self.binding.admits(task, node)
            if not status.ok:
                return status
        if self.zone:
            return volume_zone_verdict(self.storage, task.placement.claims, node)
        return OK

    def fits(self, task: TaskInfo, node: NodeInfo) -> Status:
        """Dynamic: ReadWriteOncePod users, CSI volume counts, volumes other placements of
        this session took."""
        status = self.exclusive.fits(task)
        if status.ok and self.limits is not None:
            status = self.limits.fits(task, node)
        if status.ok and self.binding is not None:
            return self.binding.fits(task, node)
        return status

    def allocate(self, task: TaskInfo) -> None:
        """A pod with claims was placed."""
        self.exclusive.placed(task)
        if self.binding is not None:
            self.binding.allocate(task)

    def deallocate(self, task: TaskInfo) -> None:
        """A placement of a pod with claims was undone."""
        self.exclusive.unplaced(task)
        if self.binding is not None:
            self.binding.deallocate(task)

    def with_claim_bindings(self, binds: list[Bind]) -> list[Bind]:
        """The session's binds, each carrying its pod's PreBind (claims to provision or bind)."""
        binding = self.binding
        if binding is None or not binding.has_plans():
            return binds  # the common session: no pod with claims to bind was placed
        out = []
        for bind in binds:
            claims = binding.claim_bindings(bind.uid)
            out.append(msgspec.structs.replace(bind, claims=claims) if claims else bind)
        return out
