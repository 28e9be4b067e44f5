"""The storage kinds as volume binding and its filters read them: PersistentVolumeClaims,
PersistentVolumes, StorageClasses and CSINodes."""

from __future__ import annotations

import msgspec

from scheduler.api.wire.common import LabelSelector, NodeSelector, ObjectMeta, ResourceList, Wire


class TypedObjectReference(Wire):
    """A claim's dataSource / a PV's claimRef: only what binding compares."""

    namespace: str = ""
    name: str = ""
    uid: str = ""


class VolumeResources(Wire):
    """A claim's spec.resources: only the storage request is read."""

    requests: ResourceList = msgspec.field(default_factory=dict)


class PersistentVolumeClaimSpec(Wire):
    """What VolumeBinding reads of a claim's spec."""

    access_modes: list[str] = msgspec.field(default_factory=list)
    selector: LabelSelector | None = None
    resources: VolumeResources = msgspec.field(default_factory=VolumeResources)
    volume_name: str = ""
    storage_class_name: str | None = None
    volume_mode: str = "Filesystem"


class PersistentVolumeClaimStatus(Wire):
    """A claim's status.phase."""

    phase: str = "Pending"


class PersistentVolumeClaim(Wire):
    """A PersistentVolumeClaim (core/v1) as scheduling reads it."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(default_factory=PersistentVolumeClaimStatus)


class VolumeNodeAffinity(Wire):
    """A PV's spec.nodeAffinity."""

    required: NodeSelector | None = None


class CSIVolumeSource(Wire):
    """A PV's spec.csi: the driver, counted against CSINode limits."""

    driver: str = ""
    volume_handle: str = ""


class PersistentVolumeSpec(Wire):
    """What VolumeBinding, VolumeZone and NodeVolumeLimits read of a PV's spec."""

    capacity: ResourceList = msgspec.field(default_factory=dict)
    access_modes: list[str] = msgspec.field(default_factory=list)
    claim_ref: TypedObjectReference | None = None
    storage_class_name: str = ""
    node_affinity: VolumeNodeAffinity | None = None
    volume_mode: str = "Filesystem"
    csi: CSIVolumeSource | None = None


class PersistentVolumeStatus(Wire):
    """A PV's status.phase."""

    phase: str = ""


class PersistentVolume(Wire):
    """A PersistentVolume (core/v1, cluster-scoped) as scheduling reads it."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = msgspec.field(default_factory=PersistentVolumeStatus)


class TopologySelectorRequirement(Wire):
    """allowedTopologies[].matchLabelExpressions[]."""

    key: str = ""
    values: list[str] = msgspec.field(default_factory=list)


class TopologySelectorTerm(Wire):
    """A StorageClass's allowedTopologies[]."""

    match_label_expressions: list[TopologySelectorRequirement] = msgspec.field(default_factory=list)


class StorageClass(Wire):
    """A StorageClass (storage.k8s.io/v1) as scheduling reads it."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    provisioner: str = ""
    volume_binding_mode: str = "Immediate"
    allowed_topologies: list[TopologySelectorTerm] = msgspec.field(default_factory=list)


class VolumeNodeResources(Wire):
    """CSINode spec.drivers[].allocatable."""

    count: int | None = None


class CSINodeDriver(Wire):
    """CSINode spec.drivers[]."""

    name: str = ""
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(Wire):
    """CSINode spec."""

    drivers: list[CSINodeDriver] = msgspec.field(default_factory=list)


class CSINode(Wire):
    """A CSINode (storage.k8s.io/v1, named after its node)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)
