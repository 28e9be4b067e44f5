"""Kubernetes' own gang API, scheduling.k8s.io Workloads and PodGroups, read into one record
whatever the version the API server serves (v1alpha2 in 1.36, v1beta1 from 1.37).

The two versions name the same things differently:

- the template: v1alpha2 `podGroupTemplateRef.workload.{workloadName, podGroupTemplateName}`,
  v1beta1 `workloadRef.{workloadName, templateName}`;
- disruption: v1alpha2 `disruptionMode: Pod | PodGroup`, v1beta1 `disruptionMode: {single:
  {}} | {all: {}}`;
- the scheduled condition: v1alpha2 `PodGroupScheduled`, v1beta1 `PodGroupInitiallyScheduled`;
- `gang.minCount` is immutable in v1alpha2, mutable in v1beta1, which adds
  `preemptionPolicy` and `parentCompositePodGroupName`.

One wire struct reads both (their field names do not collide, and `disruptionMode` is a
string in one and an object in the other); `read_podgroup` turns it into `NativePodGroup`,
the record the cache, the core and the tools read. The API server writes explicit nulls
(v1alpha2's `podGroupTemplateRef` and a template's `schedulingConstraints` have no
omitempty), so every field here accepts null.

A pod joins a native PodGroup through `spec.schedulingGroup.podGroupName` (same namespace);
its gang's key is `scheduling.k8s.io/<namespace>/<name>` (`native_key`), apart from a
Volcano PodGroup's `<namespace>/<name>` of the same name.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from scheduler.api import wire
from scheduler.api.names import QUEUE_NAME_ANNOTATION

GROUP = "scheduling.k8s.io"
V1ALPHA2 = "v1alpha2"
V1BETA1 = "v1beta1"
# The versions muster reads, in the order it prefers them when a server serves several.
VERSIONS = (V1BETA1, V1ALPHA2)
PODGROUPS = "podgroups"
WORKLOADS = "workloads"
# How messages, `muster explain` and the docs name the kinds (kubectl's resource.group).
PODGROUP_RESOURCE = f"{PODGROUPS}.{GROUP}"
# The kind of InvalidObject errors and events about native PodGroups (a Volcano PodGroup's
# is "PodGroup"): messages say which API a PodGroup comes from.
NATIVE_KIND = f"PodGroup.{GROUP}"

# The scheduled condition kube-scheduler writes on a PodGroup, by version.
SCHEDULED_CONDITION = {
    V1ALPHA2: "PodGroupScheduled",
    V1BETA1: "PodGroupInitiallyScheduled",
}
# Written on a PodGroup whose pods a scheduler evicts (reason PreemptionByScheduler).
DISRUPTION_TARGET = "DisruptionTarget"

# The finalizer kube-apiserver's PodGroupProtection admission puts on every PodGroup, which
# kube-controller-manager removes once no running pod names the group.
PROTECTION_FINALIZER = "scheduling.k8s.io/podgroup-protection"

_KEY_PREFIX = f"{GROUP}/"


class PodGroupApi(enum.Enum):
    """Which API a gang's PodGroup comes from."""

    VOLCANO = "scheduling.volcano.sh"
    NATIVE = GROUP


def native_key(namespace: str, name: str) -> str:
    """The gang key of native PodGroup namespace/name."""
    return f"{_KEY_PREFIX}{namespace}/{name}"


def describe_group(key: str) -> str:
    """How messages name the PodGroup of a gang key when no record of it is at hand (a pod
    waiting for a PodGroup that does not exist): "PodGroup ns/name" for Volcano's,
    "podgroups.scheduling.k8s.io ns/name" for a native one. The prefix cannot be mistaken:
    a Volcano key starts with a namespace, a DNS label, which has no dots."""
    if key.startswith(_KEY_PREFIX):
        return f"{PODGROUP_RESOURCE} {key.removeprefix(_KEY_PREFIX)}"
    return f"PodGroup {key}"


class QueueSource(enum.IntEnum):
    """Where a native PodGroup's queue came from, strongest first (`native_queue`): a weaker
    source is replaced when a stronger one appears (a pod naming a queue joins the gang)."""

    PODGROUP = 0
    WORKLOAD = 1
    PODS = 2
    NAMESPACE = 3
    DEFAULT = 4


def queue_named(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str:
    """The queue an object names: its `scheduling.volcano.sh/queue-name` annotation, else
    its label of that key, else ""."""
    return annotations.get(QUEUE_NAME_ANNOTATION) or labels.get(QUEUE_NAME_ANNOTATION, "")


def native_queue(
    group: NativePodGroup,
    workload: NativeWorkload | None,
    pod_queues: Iterable[str],
    namespace_queue: str,
    default_queue: str,
) -> tuple[str, QueueSource]:
    """A native PodGroup's queue, first found: the PodGroup's own (label or annotation,
    which muster controller writes from the pods' top owner when nothing else names one),
    its Workload's, its pods' annotation, its namespace's annotation, the default."""
    own = queue_named(group.labels, group.annotations)
    if own:
        return own, QueueSource.PODGROUP
    if workload is not None and workload.queue:
        return workload.queue, QueueSource.WORKLOAD
    from_pods = sorted({queue for queue in pod_queues if queue})
    if from_pods:
        # Pods naming two queues is a mistake: the first by name, the same on every replica.
        return from_pods[0], QueueSource.PODS
    if namespace_queue:
        return namespace_queue, QueueSource.NAMESPACE
    return default_queue, QueueSource.DEFAULT


# Fields muster refuses by name on a native PodGroup: the gang is not placed, and its
# scheduled condition says which field and what to do. A PodGroup's resourceClaims are
# alpha in 1.36 (DRAWorkloadResourceClaims, off by default: a server without the gate drops
# the field); honouring them means reserving each claim for the PodGroup, which only such a
# server accepts, so muster refuses them until the gate is beta.
REFUSED_FIELDS: dict[str, str] = {
    "spec.resourceClaims": "muster does not allocate PodGroup resource claims (DRA, alpha "
    "DRAWorkloadResourceClaims in 1.36) yet, so the gang is not placed rather than placed "
    "without its devices; give each pod the claims instead (spec.resourceClaims of the "
    "pods: a claim several pods name is allocated once, for the gang), or schedule this "
    "workload with kube-scheduler for now",
    "spec.parentCompositePodGroupName": "muster does not schedule CompositePodGroups "
    "(scheduling.k8s.io/v1alpha3) yet, so the gang is not placed rather than placed without "
    "its parent's constraints; schedule this workload with kube-scheduler for now",
}


@dataclass(frozen=True, slots=True)
class NativePodGroup:
    """A scheduling.k8s.io PodGroup as muster reads it, whatever its version."""

    namespace: str
    name: str
    uid: str = ""
    # The version it was read at (its status is written back at the same one).
    version: str = V1ALPHA2
    generation: int = 0
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    creation_timestamp: str = ""
    # The Workload and template it was made from ("" for a standalone PodGroup).
    workload: str = ""
    template: str = ""
    # schedulingPolicy: `gang` with minCount, else `basic` (each pod alone).
    gang: bool = False
    min_count: int = 1
    # disruptionMode PodGroup (v1alpha2) or `all` (v1beta1): evicted whole or not at all.
    disruption_whole: bool = False
    # spec.priority as Priority admission set it (None: not set).
    priority: int | None = None
    priority_class_name: str = ""
    # v1beta1's preemptionPolicy ("" when not set).
    preemption_policy: str = ""
    # schedulingConstraints.topology[].key: node labels whose one domain holds every pod.
    topology_keys: tuple[str, ...] = ()
    # The refused fields present (REFUSED_FIELDS), with their values as read.
    refused: tuple[tuple[str, Any], ...] = ()
    conditions: tuple[wire.Condition, ...] = ()

    @property
    def key(self) -> str:
        """Its gang key (`native_key`)."""
        return native_key(self.namespace, self.name)

    @property
    def scheduled_condition(self) -> str:
        """The scheduled condition type of its version."""
        return SCHEDULED_CONDITION.get(self.version, SCHEDULED_CONDITION[V1BETA1])


@dataclass(frozen=True, slots=True)
class NativeWorkload:
    """A scheduling.k8s.io Workload as muster reads it: the queue it names."""

    namespace: str
    name: str
    queue: str = ""

    @property
    def key(self) -> str:
        """namespace/name."""
        return f"{self.namespace}/{self.name}"


# Wire structs ------------------------------------------------------------------------------


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True):
    """Base of the native API's wire structs."""


class _WorkloadTemplate(_Wire):
    """v1alpha2 spec.podGroupTemplateRef.workload."""

    workload_name: str | None = None
    pod_group_template_name: str | None = None


class _TemplateRef(_Wire):
    """v1alpha2 spec.podGroupTemplateRef."""

    workload: _WorkloadTemplate | None = None


class _WorkloadRef(_Wire):
    """v1beta1 spec.workloadRef."""

    workload_name: str | None = None
    template_name: str | None = None


class _Gang(_Wire):
    """spec.schedulingPolicy.gang."""

    min_count: int | None = None


class _Policy(_Wire):
    """spec.schedulingPolicy: exactly one of `basic` and `gang`."""

    basic: dict[str, Any] | None = None
    gang: _Gang | None = None


class _TopologyConstraint(_Wire):
    """spec.schedulingConstraints.topology[]."""

    key: str | None = None


class _Constraints(_Wire):
    """spec.schedulingConstraints."""

    topology: list[_TopologyConstraint] | None = None


class _DisruptionMode(_Wire):
    """v1beta1 spec.disruptionMode: `{single: {}}` or `{all: {}}`."""

    single: dict[str, Any] | None = None
    all_: dict[str, Any] | None = msgspec.field(default=None, name="all")


class _PodGroupSpec(_Wire):
    """A PodGroup's spec, the fields of both versions."""

    pod_group_template_ref: _TemplateRef | None = None
    workload_ref: _WorkloadRef | None = None
    parent_composite_pod_group_name: str | None = None
    scheduling_policy: _Policy | None = None
    scheduling_constraints: _Constraints | None = None
    # Read for their presence and names (refused: REFUSED_FIELDS).
    resource_claims: list[dict[str, Any]] | None = None
    disruption_mode: str | _DisruptionMode | None = None
    priority_class_name: str | None = None
    priority: int | None = None
    preemption_policy: str | None = None


class _PodGroupStatus(_Wire):
    """A PodGroup's status: its conditions."""

    conditions: list[wire.Condition] | None = None


class PodGroupWire(_Wire):
    """A scheduling.k8s.io PodGroup (v1alpha2 or v1beta1) on the wire."""

    metadata: wire.ObjectMeta = msgspec.field(default_factory=wire.ObjectMeta)
    spec: _PodGroupSpec | None = None
    status: _PodGroupStatus | None = None


class WorkloadWire(_Wire):
    """A scheduling.k8s.io Workload (v1alpha2 or v1beta1) on the wire."""

    metadata: wire.ObjectMeta = msgspec.field(default_factory=wire.ObjectMeta)


_podgroup = msgspec.json.Decoder(PodGroupWire)
_workload = msgspec.json.Decoder(WorkloadWire)


def decode_podgroup(data: bytes | msgspec.Raw) -> PodGroupWire:
    """A native PodGroup from JSON (either version)."""
    return _podgroup.decode(data)


def decode_workload(data: bytes | msgspec.Raw) -> WorkloadWire:
    """A native Workload from JSON (either version)."""
    return _workload.decode(data)


def read_podgroup(obj: PodGroupWire, version: str) -> NativePodGroup:
    """The record of a PodGroup read at `version`."""
    meta = obj.metadata
    spec = obj.spec or _PodGroupSpec()
    workload, template = _template(spec)
    policy = spec.scheduling_policy or _Policy()
    gang = policy.gang is not None
    min_count = 1
    if policy.gang is not None and policy.gang.min_count is not None:
        min_count = policy.gang.min_count
    constraints = spec.scheduling_constraints
    keys = tuple(
        constraint.key
        for constraint in (constraints.topology or [] if constraints is not None else [])
        if constraint.key
    )
    refused: list[tuple[str, Any]] = []
    if spec.resource_claims:
        refused.append(("spec.resourceClaims", spec.resource_claims))
    if spec.parent_composite_pod_group_name:
        refused.append(("spec.parentCompositePodGroupName", spec.parent_composite_pod_group_name))
    status = obj.status or _PodGroupStatus()
    return NativePodGroup(
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid,
        version=version,
        generation=meta.generation,
        labels=meta.labels,
        annotations=meta.annotations,
        creation_timestamp=meta.creation_timestamp or "",
        workload=workload,
        template=template,
        gang=gang,
        min_count=min_count,
        disruption_whole=_disrupted_whole(spec.disruption_mode),
        priority=spec.priority,
        priority_class_name=spec.priority_class_name or "",
        preemption_policy=spec.preemption_policy or "",
        topology_keys=keys,
        refused=tuple(refused),
        conditions=tuple(status.conditions or ()),
    )


def read_workload(obj: WorkloadWire) -> NativeWorkload:
    """The record of a Workload."""
    meta = obj.metadata
    return NativeWorkload(meta.namespace, meta.name, queue_named(meta.labels, meta.annotations))


def _template(spec: _PodGroupSpec) -> tuple[str, str]:
    """The Workload and template a PodGroup names, in either version's field."""
    if spec.workload_ref is not None:
        ref = spec.workload_ref
        return ref.workload_name or "", ref.template_name or ""
    if spec.pod_group_template_ref is not None and spec.pod_group_template_ref.workload:
        ref_v1alpha2 = spec.pod_group_template_ref.workload
        return ref_v1alpha2.workload_name or "", ref_v1alpha2.pod_group_template_name or ""
    return "", ""


def _disrupted_whole(mode: str | _DisruptionMode | None) -> bool:
    """disruptionMode PodGroup (v1alpha2) or `all` (v1beta1)."""
    if isinstance(mode, _DisruptionMode):
        return mode.all_ is not None
    return mode == "PodGroup"
