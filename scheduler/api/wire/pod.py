"""A Pod as scheduling reads it: its spec (containers and their requests, node and pod
affinity, tolerations, spread constraints, volumes, resource claims, gates, its scheduling
group) and its status."""

from __future__ import annotations

import msgspec

from scheduler.api.wire.common import (
    ABSENT,
    Condition,
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    ObjectMeta,
    ResourceList,
    Wire,
)


class ContainerClaim(Wire):
    """containers[].resources.claims[]: one of the pod's resourceClaims (DRA) the container
    uses, all of it or one request of it."""

    name: str = ""
    request: str | None = None


class ResourceRequirements(Wire):
    """containers[].resources."""

    requests: ResourceList = msgspec.field(default_factory=dict)
    limits: ResourceList = msgspec.field(default_factory=dict)
    claims: list[ContainerClaim] = msgspec.field(default_factory=list)


class ContainerPort(Wire):
    """containers[].ports[]."""

    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = msgspec.field(default="", name="hostIP")


class Container(Wire):
    """containers[] and initContainers[]."""

    name: str = ""
    # Read for ImageLocality's score (the API requires it on every container).
    image: str = ""
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    ports: list[ContainerPort] = msgspec.field(default_factory=list)
    restart_policy: str | None = None


class Toleration(Wire):
    """spec.tolerations[]."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class PreferredSchedulingTerm(Wire):
    """preferredDuringSchedulingIgnoredDuringExecution[]."""

    weight: int = 0
    preference: NodeSelectorTerm = msgspec.field(default_factory=NodeSelectorTerm)


class NodeAffinity(Wire):
    """spec.affinity.nodeAffinity."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = (
        msgspec.field(default_factory=list)
    )


class PodAffinityTerm(Wire):
    """A required pod (anti-)affinity term, or the term of a weighted one."""

    topology_key: str = ""
    label_selector: LabelSelector | None = None
    namespaces: list[str] = msgspec.field(default_factory=list)
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = msgspec.field(default_factory=list)
    mismatch_label_keys: list[str] = msgspec.field(default_factory=list)


class WeightedPodAffinityTerm(Wire):
    """preferredDuringSchedulingIgnoredDuringExecution[] of pod (anti-)affinity."""

    weight: int = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(Wire):
    """spec.affinity.podAffinity and spec.affinity.podAntiAffinity (same shape)."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = msgspec.field(
        default_factory=list
    )
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = (
        msgspec.field(default_factory=list)
    )


class Affinity(Wire):
    """spec.affinity."""

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(Wire):
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


class ClaimSource(Wire):
    """volumes[].persistentVolumeClaim."""

    claim_name: str = ""
    read_only: bool = False


class Volume(Wire):
    """spec.volumes[]: only whether it uses a claim (the other sources are not read)."""

    name: str = ""
    persistent_volume_claim: ClaimSource | None = None
    # A generic ephemeral volume: its claim is <pod name>-<volume name>; the template is
    # not read.
    ephemeral: msgspec.Raw = ABSENT


class PodResourceClaim(Wire):
    """spec.resourceClaims[] (DRA)."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class SchedulingGate(Wire):
    """spec.schedulingGates[]."""

    name: str = ""


class PodSchedulingGroup(Wire):
    """spec.schedulingGroup: the native PodGroup (podgroups.scheduling.k8s.io, in the pod's
    namespace) the pod belongs to (api/native.py)."""

    pod_group_name: str | None = None


class PodSpec(Wire):
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
    eviction_responders: msgspec.Raw = ABSENT


class PodResourceClaimStatus(Wire):
    """A pod's status.resourceClaimStatuses[]: the claim the resourceclaim controller made
    for one of the pod's claims from a template (none: the pod needs no claim there)."""

    name: str = ""
    resource_claim_name: str | None = None


class PodStatus(Wire):
    """Pod status."""

    phase: str = "Pending"
    conditions: list[Condition] = msgspec.field(default_factory=list)
    # When the kubelet took the pod in: a victim's runtime counts from here.
    start_time: str | None = None
    # The claims made from the pod's ResourceClaimTemplates (api/resource_claims.py).
    resource_claim_statuses: list[PodResourceClaimStatus] = msgspec.field(default_factory=list)


class Pod(Wire):
    """A Pod as scheduling reads it."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)
    # Spec fields outside api/pod_fields.py's list, found by decode_pod; never read from
    # JSON (the API server has no such key), hence the name no object can carry.
    unknown_spec_fields: tuple[str, ...] = msgspec.field(default=(), name="$unknownSpecFields")
