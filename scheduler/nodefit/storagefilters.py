"""The predicates plugin's storage filters for pods with claims: VolumeBinding, VolumeZone,
VolumeRestrictions and NodeVolumeLimits, with Volcano's toggles, behind one facade."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import msgspec.structs
from pydantic import BaseModel, ConfigDict, Field, field_validator

from scheduler.api.node import NodeInfo
from scheduler.api.snapshot import StorageView
from scheduler.api.task import TaskInfo
from scheduler.framework.arguments import Arguments, Count
from scheduler.framework.decisions import DEFAULT_CLAIMS_TIMEOUT, Bind
from scheduler.framework.status import OK, Status
from scheduler.nodefit.nodevolumelimits import CSIVolumeLimits
from scheduler.nodefit.volumebinding import VolumeBinding
from scheduler.nodefit.volumerestrictions import ReadWriteOncePod
from scheduler.nodefit.volumezone import volume_zone_verdict


class ShapePoint(BaseModel):
    """One point of volumebinding.shape: a score (0..10) at a utilization (0..100)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    utilization: int = Field(ge=0, le=100)
    score: int = Field(ge=0, le=10)


class VolumePredicateArguments(Arguments):
    """The predicates plugin's storage arguments, in Volcano's spelling: the toggles (all
    on by default), how long a bind waits for its claims to be bound, and the
    VolumeBinding score's weight and shape."""

    volume_binding_enable: bool = Field(True, alias="predicate.VolumeBindingEnable")
    volume_zone_enable: bool = Field(True, alias="predicate.VolumeZoneEnable")
    node_volume_limits_enable: bool = Field(True, alias="predicate.NodeVolumeLimitsEnable")
    bind_timeout_seconds: Count = Field(
        int(DEFAULT_CLAIMS_TIMEOUT), alias="volumebinding.bindTimeoutSeconds", ge=0
    )
    volume_binding_weight: Count = Field(1, alias="volumebinding.weight", ge=0)
    volume_binding_shape: tuple[ShapePoint, ...] = Field((), alias="volumebinding.shape")

    @field_validator("volume_binding_shape")
    @classmethod
    def _shape_rises_in_utilization(cls, shape: tuple[ShapePoint, ...]) -> tuple[ShapePoint, ...]:
        for before, after in itertools.pairwise(shape):
            if after.utilization <= before.utilization:
                raise ValueError(
                    "is invalid: the utilizations of its points must increase "
                    f"({before.utilization} then {after.utilization}), as kube-scheduler's"
                )
        return shape


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
        self.claims_timeout = float(arguments.bind_timeout_seconds)
        self.score_weight = arguments.volume_binding_weight
        self.shape = tuple((p.utilization, p.score) for p in arguments.volume_binding_shape)
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

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        """VolumeBinding's score (kube-scheduler's, with volumebinding.shape): how full the
        static volumes the pod's claims would bind on the node are, mapped through the
        shape onto 0..100, times volumebinding.weight; 0 without a shape or such volumes."""
        if self.binding is None or not self.shape or not self.score_weight:
            return 0.0
        utilization = self.binding.utilization(task, node)
        if utilization is None:
            return 0.0
        return self.score_weight * shape_score(self.shape, utilization)

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
        timeout = self.claims_timeout
        for bind in binds:
            claims = binding.claim_bindings(bind.uid)
            out.append(
                msgspec.structs.replace(bind, claims=claims, claims_timeout=timeout)
                if claims
                else bind
            )
        return out


# kube-scheduler scales a shape's scores (0..10) onto node scores (0..100).
_SHAPE_SCALE = 10.0


def shape_score(shape: tuple[tuple[int, int], ...], utilization: float) -> float:
    """kube-scheduler's buildScorerFunction: the shape's score at `utilization` (0..100),
    linear between its points, flat before the first and after the last, on 0..100."""
    first_utilization, first_score = shape[0]
    if utilization <= first_utilization:
        return first_score * _SHAPE_SCALE
    for (low, low_score), (high, high_score) in itertools.pairwise(shape):
        if utilization <= high:
            part = (utilization - low) / (high - low)
            return (low_score + (high_score - low_score) * part) * _SHAPE_SCALE
    return shape[-1][1] * _SHAPE_SCALE
