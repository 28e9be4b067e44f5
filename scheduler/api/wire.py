"""The subset of Kubernetes JSON that scheduling reads, as msgspec structs.

Decoding into these skips every field not named here, so the cache never
holds whole documents (msgspec ignores unknown fields by default). Names
follow the API's camelCase through `rename="camel"`.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

Quantity = str | int | float
ResourceList = dict[str, Quantity]


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True):
    """Base of every wire struct."""


class OwnerReference(_Wire):
    """metadata.ownerReferences[]."""

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


class ResourceRequirements(_Wire):
    """containers[].resources."""

    requests: ResourceList = msgspec.field(default_factory=dict)
    limits: ResourceList = msgspec.field(default_factory=dict)


class ContainerPort(_Wire):
    """containers[].ports[]."""

    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = msgspec.field(default="", name="hostIP")


class Container(_Wire):
    """containers[] and initContainers[]."""

    name: str = ""
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


class Affinity(_Wire):
    """spec.affinity (pod affinity is not read yet)."""

    node_affinity: NodeAffinity | None = None


class SchedulingGate(_Wire):
    """spec.schedulingGates[]."""

    name: str = ""


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


class Condition(_Wire):
    """A status condition (pods, nodes, PodGroups)."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class PodStatus(_Wire):
    """Pod status."""

    phase: str = "Pending"
    conditions: list[Condition] = msgspec.field(default_factory=list)


class Pod(_Wire):
    """A Pod as scheduling reads it."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


class Taint(_Wire):
    """spec.taints[]."""

    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSpec(_Wire):
    """Node spec."""

    unschedulable: bool = False
    taints: list[Taint] = msgspec.field(default_factory=list)


class NodeStatus(_Wire):
    """Node status."""

    allocatable: ResourceList = msgspec.field(default_factory=dict)
    capacity: ResourceList = msgspec.field(default_factory=dict)
    conditions: list[Condition] = msgspec.field(default_factory=list)


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
    # Decoded only to say they are not honoured yet (KubeRay writes networkTopology from
    # its volcano.sh/network-topology-* labels); their contents are not read.
    network_topology: dict[str, Any] | None = None
    sub_group_policy: list[Any] | None = None


class PodGroupStatus(_Wire):
    """PodGroup status."""

    phase: str = ""
    conditions: list[Condition] = msgspec.field(default_factory=list)
    running: int = 0
    succeeded: int = 0
    failed: int = 0


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


T = TypeVar("T")


def from_dict(value: dict[str, Any], kind: type[T]) -> T:
    """A wire struct from an already-decoded JSON document (tests, kopf handlers)."""
    return msgspec.convert(value, kind)
