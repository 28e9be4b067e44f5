"""Volcano's kinds (scheduling.volcano.sh/v1beta1) as scheduling reads them: PodGroups (a
gang's spec and the status muster writes) and Queues."""

from __future__ import annotations

from typing import Any

import msgspec

from scheduler.api.wire.common import Condition, ObjectMeta, ResourceList, Wire


class PodGroupSpec(Wire):
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


class PodGroupStatus(Wire):
    """PodGroup status."""

    phase: str = ""
    conditions: list[Condition] = msgspec.field(default_factory=list)
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class PodGroup(Wire):
    """A PodGroup."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)


class Guarantee(Wire):
    """Queue spec.guarantee."""

    resource: ResourceList = msgspec.field(default_factory=dict)


class QueueSpec(Wire):
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


class QueueStatus(Wire):
    """Queue status."""

    state: str = ""
    allocated: ResourceList = msgspec.field(default_factory=dict)


class Queue(Wire):
    """A Queue (cluster-scoped)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: QueueSpec = msgspec.field(default_factory=QueueSpec)
    status: QueueStatus = msgspec.field(default_factory=QueueStatus)
