"""The subset of Kubernetes JSON that scheduling reads, as msgspec structs.

Decoding into these skips every field not named here, so the cache never
holds whole documents (msgspec ignores unknown fields by default). Names
follow the API's camelCase through `rename="camel"`.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import msgspec

Quantity = str | int | float
ResourceList = dict[str, Quantity]
# The value of a field read only for its presence, when it is absent (an empty Raw is
# falsy; msgspec skips a Raw field's JSON without parsing it).
_ABSENT = msgspec.Raw()


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True):
    """Base of every wire struct."""


class OwnerReference(_Wire):
    """metadata.ownerReferences[]."""

    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False


class ObjectMeta(_Wire):
    """metadata."""

    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    owner_references: list[OwnerReference] = msgspec.field(default_factory=list)


class ContainerClaim(_Wire):
    """containers[].resources.claims[]: one of the pod's resourceClaims (DRA) the container
    uses, all of it or one request of it."""

    name: str = ""
    request: str | None = None


class ResourceRequirements(_Wire):
    """containers[].resources."""

    requests: ResourceList = msgspec.field(default_factory=dict)
    limits: ResourceList = msgspec.field(default_factory=dict)
    claims: list[ContainerClaim] = msgspec.field(default_factory=list)


class ContainerPort(_Wire):
    """containers[].ports[]."""

    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = msgspec.field(default="", name="hostIP")


class Container(_Wire):
    """containers[] and initContainers[]."""

    name: str = ""
    # Read for ImageLocality's score (the API requires it on every container).
    image: str = ""
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    ports: list[ContainerPort] = msgspec.field(default_factory=list)
    restart_policy: str | None = None


class Toleration(_Wire):
    """spec.tolerations[]."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class NodeSelectorRequirement(_Wire):
    """A matchExpressions or matchFields entry."""

    key: str = ""
    operator: str = ""
    values: list[str] = msgspec.field(default_factory=list)


class NodeSelectorTerm(_Wire):
    """nodeSelectorTerms[]."""

    match_expressions: list[NodeSelectorRequirement] = msgspec.field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = msgspec.field(default_factory=list)


class NodeSelector(_Wire):
    """requiredDuringSchedulingIgnoredDuringExecution."""

    node_selector_terms: list[NodeSelectorTerm] = msgspec.field(default_factory=list)


class PreferredSchedulingTerm(_Wire):
    """preferredDuringSchedulingIgnoredDuringExecution[]."""

    weight: int = 0
    preference: NodeSelectorTerm = msgspec.field(default_factory=NodeSelectorTerm)


class NodeAffinity(_Wire):
    """spec.affinity.nodeAffinity."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = (
        msgspec.field(default_factory=list)
    )


class LabelSelectorRequirement(_Wire):
    """A labelSelector.matchExpressions entry."""

    key: str = ""
    operator: str = ""
    values: list[str] = msgspec.field(default_factory=list)


class LabelSelector(_Wire):
    """A metav1.LabelSelector (pod affinity terms, topology spread constraints)."""

    match_labels: dict[str, str] = msgspec.field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = msgspec.field(default_factory=list)


class PodAffinityTerm(_Wire):
    """A required pod (anti-)affinity term, or the term of a weighted one."""

    topology_key: str = ""
    label_selector: LabelSelector | None = None
    namespaces: list[str] = msgspec.field(default_factory=list)
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = msgspec.field(default_factory=list)
    mismatch_label_keys: list[str] = msgspec.field(default_factory=list)


class WeightedPodAffinityTerm(_Wire):
    """preferredDuringSchedulingIgnoredDuringExecution[] of pod (anti-)affinity."""

    weight: int = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(_Wire):
    """spec.affinity.podAffinity and spec.affinity.podAntiAffinity (same shape)."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = msgspec.field(
        default_factory=list
    )
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = (
        msgspec.field(default_factory=list)
    )


class Affinity(_Wire):
    """spec.affinity."""

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(_Wire):
    """spec.topologySpreadConstraints[]."""

    max_skew: int = 0
    topology_key: str = ""
    # The API requires it; DoNotSchedule is what an omitted value would most safely mean.
    when_unsatisfiable: str = "DoNotSchedule"
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = msgspec.field(default_factory=list)


class ClaimSource(_Wire):
    """volumes[].persistentVolumeClaim."""

    claim_name: str = ""
    read_only: bool = False


class Volume(_Wire):
    """spec.volumes[]: only whether it uses a claim (the other sources are not read)."""

    name: str = ""
    persistent_volume_claim: ClaimSource | None = None
    # A generic ephemeral volume: its claim is <pod name>-<volume name>; the template is
    # not read.
    ephemeral: msgspec.Raw = _ABSENT


class PodResourceClaim(_Wire):
    """spec.resourceClaims[] (DRA)."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class SchedulingGate(_Wire):
    """spec.schedulingGates[]."""

    name: str = ""


class PodSchedulingGroup(_Wire):
    """spec.schedulingGroup: the native PodGroup (podgroups.scheduling.k8s.io, in the pod's
    namespace) the pod belongs to (api/native.py)."""

    pod_group_name: str | None = None


class PodSpec(_Wire):
    """Pod spec."""

    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    node_selector: dict[str, str] = msgspec.field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = msgspec.field(default_factory=list)
    containers: list[Container] = msgspec.field(default_factory=list)
    init_containers: list[Container] = msgspec.field(default_factory=list)
    overhead: ResourceList = msgspec.field(default_factory=dict)
    scheduling_gates: list[SchedulingGate] = msgspec.field(default_factory=list)
    restart_policy: str = "Always"
    topology_spread_constraints: list[TopologySpreadConstraint] = msgspec.field(
        default_factory=list
    )
    volumes: list[Volume] = msgspec.field(default_factory=list)
    resource_claims: list[PodResourceClaim] = msgspec.field(default_factory=list)
    # Pod-level resources (PodLevelResources): their requests size the pod (pod_request).
    resources: ResourceRequirements | None = None
    scheduling_group: PodSchedulingGroup | None = None
    # Read for its presence only (api/pod_fields.py says what muster does instead).
    eviction_responders: msgspec.Raw = _ABSENT


class _FullPodSpec(PodSpec, forbid_unknown_fields=True):
    """A pod spec that names every PodSpec field muster knows (api/pod_fields.py), so
    decoding fails on a newer field. The fields scheduling does not read are skipped as
    Raw (not parsed), or decoded as the scalars they are where that is cheaper (a bool or
    a small int allocates nothing)."""

    active_deadline_seconds: int | None = None
    automount_service_account_token: bool | None = None
    dns_config: msgspec.Raw = _ABSENT
    dns_policy: str | None = None
    enable_service_links: bool | None = None
    ephemeral_containers: msgspec.Raw = _ABSENT
    host_aliases: msgspec.Raw = _ABSENT
    host_ipc: bool | None = msgspec.field(default=None, name="hostIPC")
    host_network: bool | None = None
    host_pid: bool | None = msgspec.field(default=None, name="hostPID")
    host_users: bool | None = None
    hostname: str | None = None
    hostname_override: str | None = None
    image_pull_secrets: msgspec.Raw = _ABSENT
    os: msgspec.Raw = _ABSENT
    readiness_gates: msgspec.Raw = _ABSENT
    runtime_class_name: str | None = None
    security_context: msgspec.Raw = _ABSENT
    service_account: str | None = None
    service_account_name: str | None = None
    set_hostname_as_fqdn: msgspec.Raw = msgspec.field(default=_ABSENT, name="setHostnameAsFQDN")
    share_process_namespace: bool | None = None
    subdomain: str | None = None
    termination_grace_period_seconds: int | None = None


# The JSON names of every PodSpec field muster knows (api/pod_fields.py lists the same).
_FULL_SPEC_NAMES = frozenset(_FullPodSpec.__struct_encode_fields__)


class Condition(_Wire):
    """A status condition (pods, nodes, PodGroups)."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class PodResourceClaimStatus(_Wire):
    """A pod's status.resourceClaimStatuses[]: the claim the resourceclaim controller made
    for one of the pod's claims from a template (none: the pod needs no claim there)."""

    name: str = ""
    resource_claim_name: str | None = None


class PodStatus(_Wire):
    """Pod status."""

    phase: str = "Pending"
    conditions: list[Condition] = msgspec.field(default_factory=list)
    # When the kubelet took the pod in: a victim's runtime counts from here.
    start_time: str | None = None
    # The claims made from the pod's ResourceClaimTemplates (api/resource_claims.py).
    resource_claim_statuses: list[PodResourceClaimStatus] = msgspec.field(default_factory=list)


class Pod(_Wire):
    """A Pod as scheduling reads it."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)
    # Spec fields outside api/pod_fields.py's list, found by decode_pod; never read from
    # JSON (the API server has no such key), hence the name no object can carry.
    unknown_spec_fields: tuple[str, ...] = msgspec.field(default=(), name="$unknownSpecFields")


class _FullPod(Pod):
    """A Pod decoded through _FullPodSpec."""

    spec: _FullPodSpec = msgspec.field(default_factory=_FullPodSpec)


class _SpecKeys(msgspec.Struct):
    """Only the names of a pod's spec fields (the slow path of decode_pod)."""

    spec: dict[str, msgspec.Raw] = msgspec.field(default_factory=dict)


class Taint(_Wire):
    """spec.taints[]."""

    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSpec(_Wire):
    """Node spec."""

    unschedulable: bool = False
    taints: list[Taint] = msgspec.field(default_factory=list)


class ContainerImage(_Wire):
    """A node's status.images[]: the names an image is known by and its size."""

    names: list[str] = msgspec.field(default_factory=list)
    size_bytes: int = 0


class NodeStatus(_Wire):
    """Node status."""

    allocatable: ResourceList = msgspec.field(default_factory=dict)
    capacity: ResourceList = msgspec.field(default_factory=dict)
    conditions: list[Condition] = msgspec.field(default_factory=list)
    # The images the kubelet reports (at most --node-status-max-images, 50 by default),
    # for ImageLocality; NodeInfo keeps them compactly (api/node.py NodeImages).
    images: list[ContainerImage] = msgspec.field(default_factory=list)


class Node(_Wire):
    """A Node as scheduling reads it."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class PodGroupSpec(_Wire):
    """PodGroup spec (scheduling.volcano.sh/v1beta1)."""

    min_member: int = 0
    min_task_member: dict[str, int] = msgspec.field(default_factory=dict)
    queue: str = ""
    priority_class_name: str = ""
    min_resources: ResourceList | None = None
    # Kept as written and read with the PodGroup's key, so that a bad value is refused
    # naming the field (api/network_topology.py, api/subgroups.py).
    network_topology: dict[str, Any] | None = None
    sub_group_policy: list[Any] | None = None


class PodGroupStatus(_Wire):
    """PodGroup status."""

    phase: str = ""
    conditions: list[Condition] = msgspec.field(default_factory=list)
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class Namespace(_Wire):
    """A Namespace as the cache reads it: its name and labels (pod affinity terms'
    namespaceSelector)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class PodGroup(_Wire):
    """A PodGroup."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)


class Guarantee(_Wire):
    """Queue spec.guarantee."""

    resource: ResourceList = msgspec.field(default_factory=dict)


class QueueSpec(_Wire):
    """Queue spec (scheduling.volcano.sh/v1beta1)."""

    weight: int = 1
    capability: ResourceList = msgspec.field(default_factory=dict)
    reclaimable: bool | None = None
    guarantee: Guarantee = msgspec.field(default_factory=Guarantee)
    deserved: ResourceList = msgspec.field(default_factory=dict)
    parent: str = ""
    priority: int = 0
    # Decoded only to say they are not honoured (see queue.QUEUE_NOT_HONOURED): the
    # strategy's value, the others' presence; their contents are not read.
    dequeue_strategy: str = ""
    queue_type: str = msgspec.field(default="", name="type")
    affinity: dict[str, Any] | None = None
    extend_clusters: list[Any] | None = None


class QueueStatus(_Wire):
    """Queue status."""

    state: str = ""
    allocated: ResourceList = msgspec.field(default_factory=dict)


class Queue(_Wire):
    """A Queue (cluster-scoped)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: QueueSpec = msgspec.field(default_factory=QueueSpec)
    status: QueueStatus = msgspec.field(default_factory=QueueStatus)


class PriorityClass(_Wire):
    """A PriorityClass (scheduling.k8s.io/v1)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"


class TypedObjectReference(_Wire):
    """A claim's dataSource / a PV's claimRef: only what binding compares."""

    namespace: str = ""
    name: str = ""
    uid: str = ""


class VolumeResources(_Wire):
    """A claim's spec.resources: only the storage request is read."""

    requests: ResourceList = msgspec.field(default_factory=dict)


class PersistentVolumeClaimSpec(_Wire):
    """What VolumeBinding reads of a claim's spec."""

    access_modes: list[str] = msgspec.field(default_factory=list)
    selector: LabelSelector | None = None
    resources: VolumeResources = msgspec.field(default_factory=VolumeResources)
    volume_name: str = ""
    storage_class_name: str | None = None
    volume_mode: str = "Filesystem"


class PersistentVolumeClaimStatus(_Wire):
    """A claim's status.phase."""

    phase: str = "Pending"


class PersistentVolumeClaim(_Wire):
    """A PersistentVolumeClaim (core/v1) as scheduling reads it."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(default_factory=PersistentVolumeClaimStatus)


class VolumeNodeAffinity(_Wire):
    """A PV's spec.nodeAffinity."""

    required: NodeSelector | None = None


class CSIVolumeSource(_Wire):
    """A PV's spec.csi: the driver, counted against CSINode limits."""

    driver: str = ""
    volume_handle: str = ""


class PersistentVolumeSpec(_Wire):
    """What VolumeBinding, VolumeZone and NodeVolumeLimits read of a PV's spec."""

    capacity: ResourceList = msgspec.field(default_factory=dict)
    access_modes: list[str] = msgspec.field(default_factory=list)
    claim_ref: TypedObjectReference | None = None
    storage_class_name: str = ""
    node_affinity: VolumeNodeAffinity | None = None
    volume_mode: str = "Filesystem"
    csi: CSIVolumeSource | None = None


class PersistentVolumeStatus(_Wire):
    """A PV's status.phase."""

    phase: str = ""


class PersistentVolume(_Wire):
    """A PersistentVolume (core/v1, cluster-scoped) as scheduling reads it."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = msgspec.field(default_factory=PersistentVolumeStatus)


class TopologySelectorRequirement(_Wire):
    """allowedTopologies[].matchLabelExpressions[]."""

    key: str = ""
    values: list[str] = msgspec.field(default_factory=list)


class TopologySelectorTerm(_Wire):
    """A StorageClass's allowedTopologies[]."""

    match_label_expressions: list[TopologySelectorRequirement] = msgspec.field(default_factory=list)


class StorageClass(_Wire):
    """A StorageClass (storage.k8s.io/v1) as scheduling reads it."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    provisioner: str = ""
    volume_binding_mode: str = "Immediate"
    allowed_topologies: list[TopologySelectorTerm] = msgspec.field(default_factory=list)


class VolumeNodeResources(_Wire):
    """CSINode spec.drivers[].allocatable."""

    count: int | None = None


class CSINodeDriver(_Wire):
    """CSINode spec.drivers[]."""

    name: str = ""
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(_Wire):
    """CSINode spec."""

    drivers: list[CSINodeDriver] = msgspec.field(default_factory=list)


class CSINode(_Wire):
    """A CSINode (storage.k8s.io/v1, named after its node)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)


T = TypeVar("T")

_full_pod = msgspec.json.Decoder(_FullPod)
_lenient_pod = msgspec.json.Decoder(Pod)
_spec_keys = msgspec.json.Decoder(_SpecKeys)


def decode_pod(data: bytes | msgspec.Raw) -> Pod:
    """A Pod from JSON, naming in `unknown_spec_fields` any spec field muster does not know.

    The common pod decodes once, strictly; only a pod with a field newer than muster's
    list pays a second, lenient decode and a look at its spec's keys.
    """
    try:
        return _full_pod.decode(data)
    except msgspec.ValidationError as strict_error:
        if "unknown field" not in str(strict_error):
            raise
    pod = _lenient_pod.decode(data)
    pod.unknown_spec_fields = tuple(
        sorted(key for key in _spec_keys.decode(data).spec if key not in _FULL_SPEC_NAMES)
    )
    return pod


def from_dict(value: dict[str, Any], kind: type[T]) -> T:
    """A wire struct from an already-decoded JSON document (the controller, kopf handlers,
    `muster whatif`'s manifests, tests).

    It goes through JSON, not `msgspec.convert`: a field kept as `msgspec.Raw` (read for
    its presence only: a generic ephemeral volume, `evictionResponders`) has no Python value
    to be converted from, and convert refuses every such field. A Pod decodes as the
    watch decodes it (`decode_pod`), so a spec field newer than muster's list is named,
    never an error.
    """
    data = msgspec.json.encode(value)
    if kind is Pod:
        return cast(T, decode_pod(data))
    return msgspec.json.decode(data, type=kind)


class PodDisruptionBudgetSpec(_Wire):
    """policy/v1 PodDisruptionBudget spec, as eviction planning reads it (the figures come
    from the status, which the disruption controller computes)."""

    selector: LabelSelector | None = None


class PodDisruptionBudgetStatus(_Wire):
    """policy/v1 PodDisruptionBudget status."""

    disruptions_allowed: int = 0
    observed_generation: int = 0


class PodDisruptionBudget(_Wire):
    """A PodDisruptionBudget."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)
