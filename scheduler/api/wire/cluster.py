"""The cluster's places as scheduling reads them: Nodes (taints, allocatable, conditions,
images) and Namespaces (their labels)."""

from __future__ import annotations

import msgspec

from scheduler.api.wire.common import Condition, ObjectMeta, ResourceList, Wire


class Taint(Wire):
    """spec.taints[]."""

    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSpec(Wire):
    """Node spec."""

    unschedulable: bool = False
    taints: list[Taint] = msgspec.field(default_factory=list)


class ContainerImage(Wire):
    """A node's status.images[]: the names an image is known by and its size."""

    names: list[str] = msgspec.field(default_factory=list)
    size_bytes: int = 0


class NodeStatus(Wire):
    """Node status."""

    allocatable: ResourceList = msgspec.field(default_factory=dict)
    capacity: ResourceList = msgspec.field(default_factory=dict)
    conditions: list[Condition] = msgspec.field(default_factory=list)
    # The images the kubelet reports (at most --node-status-max-images, 50 by default),
    # for ImageLocality; NodeInfo keeps them compactly (api/node.py NodeImages).
    images: list[ContainerImage] = msgspec.field(default_factory=list)


class Node(Wire):
    """A Node as scheduling reads it."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class Namespace(Wire):
    """A Namespace as the cache reads it: its name and labels (pod affinity terms'
    namespaceSelector)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
