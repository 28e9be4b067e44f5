"""NodeInfo: a node's allocatable resources and what the pods on it use."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

from scheduler.api import wire
from scheduler.api.placement import HostPort
from scheduler.api.quantity import int_value
from scheduler.api.resources import PODS, Resource
from scheduler.api.task import TaskInfo, TaskStatus

DEFAULT_MAX_PODS = 110


@dataclass(frozen=True, slots=True)
class Taint:
    """spec.taints[]."""

    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        # kube-scheduler prints an untolerated taint as {key: value}.
        return f"{{{self.key}: {self.value}}}"


class NodeImages:
    """The images a node holds (status.images), one entry per name, kept compactly.

    kube-scheduler keys images by each name the kubelet reports, as reported (the pod's
    side is normalised, see task.normalized_image_name). Names are interned, so nodes
    that hold the same image share its strings, and sizes are packed 8 bytes each: with
    the kubelet's 50 images of two names a node costs about 1.8 KB more, and a node
    that reports none costs nothing (NodeInfo.images is None).
    """

    __slots__ = ("names", "sizes")

    def __init__(self, names: tuple[str, ...], sizes: array[int]) -> None:
        self.names = names
        self.sizes = sizes

    @classmethod
    def from_wire(cls, images: Iterable[wire.ContainerImage]) -> NodeImages | None:
        """The node's images, or None when it reports none; a name listed twice keeps its
        first size, as kube-scheduler's per-node image summary does."""
        sizes: dict[str, int] = {}
        for image in images:
            for name in image.names:
                if name not in sizes:
                    sizes[sys.intern(name)] = image.size_bytes
        if not sizes:
            return None
        return NodeImages(tuple(sizes), array("q", sizes.values()))

    def size_of(self, name: str) -> int:
        """The size of the image the node knows by `name` (which it must hold)."""
        return self.sizes[self.names.index(name)]


class NodeInfo:
    """A node and its accounting.

    `used` counts every pod placed on the node that is not terminal, pods being
    deleted included (they still hold their resources); `releasing` is the
    part of `used` that is going away; `pipelined` is what the session has
    promised out of `releasing`. `idle = allocatable - used`, but for the devices pods'
    claims count for their queues (`deviceclass/<class>`): `used` counts them, for the
    cluster's headroom (actions/enqueue.py); no node has them, so the node's room (`idle`,
    `releasing`, `pipelined`, from each pod's `node_request`) leaves them out.
    """

    __slots__ = (
        "allocatable",
        "idle",
        "images",
        "labels",
        "max_pods",
        "name",
        "pipelined",
        "pipelined_pods",
        "pod_count",
        "ready",
        "releasing",
        "releasing_pods",
        "taints",
        "tasks",
        "unschedulable",
        "used",
        "used_ports",
        "version",
    )

    def __init__(
        self,
        name: str,
        allocatable: Resource,
        *,
        max_pods: int = DEFAULT_MAX_PODS,
        labels: dict[str, str] | None = None,
        taints: tuple[Taint, ...] = (),
        unschedulable: bool = False,
        ready: bool = True,
        images: NodeImages | None = None,
    ) -> None:
        self.name = name
        self.allocatable = allocatable
        self.max_pods = max_pods
        self.labels = labels if labels is not None else {}
        self.taints = taints
        self.unschedulable = unschedulable
        self.ready = ready
        # Read only by ImageLocality's per-session index, never per placement.
        self.images = images
        self.used = Resource()
        self.idle = allocatable.clone()
        self.releasing = Resource()
        self.pipelined = Resource()
        self.pod_count = 0
        # Of pod_count, the pods going away; and the pods promised their room (not counted).
        self.releasing_pods = 0
        self.pipelined_pods = 0
        self.tasks: dict[str, TaskInfo] = {}
        # A tuple, replaced on the rare pod with host ports: an empty list per node would
        # cost 56 bytes on each of thousands of nodes, and clones share the tuple.
        self.used_ports: tuple[HostPort, ...] = ()
        # Bumped on every change of accounting; lets callers cache per-node results.
        self.version = 0

    @classmethod
    def from_node(cls, node: wire.Node) -> NodeInfo:
        """The record of a node; raises InvalidObject on a malformed quantity."""
        name = node.metadata.name
        allocatable = node.status.allocatable or node.status.capacity
        resources = Resource.from_list(
            allocatable, kind="Node", name=name, field="status.allocatable"
        )
        max_pods = int_value(allocatable[PODS]) if PODS in allocatable else DEFAULT_MAX_PODS
        ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)
        return NodeInfo(
            name,
            resources,
            max_pods=max_pods,
            labels=dict(node.metadata.labels),
            taints=tuple(Taint(t.key, t.value, t.effect) for t in node.spec.taints),
            unschedulable=node.spec.unschedulable,
            ready=ready,
            images=NodeImages.from_wire(node.status.images),
        )

    def future_idle(self) -> Resource:
        """What will be free once releasing pods go, less what is already promised."""
        return self.idle.clone().add(self.releasing).sub(self.pipelined)

    def future_pod_count(self) -> int:
        """Pods the node holds once releasing pods go and pipelined ones arrive."""
        return self.pod_count - self.releasing_pods + self.pipelined_pods

    def add_task(self, task: TaskInfo) -> None:
        """Account for a task placed here (its status decides which figures move)."""
        request = task.node_request  # the node's room: no device counts (see the class)
        status = task.status
        if status is TaskStatus.PIPELINED:
            self.pipelined.add(request)
            self.pipelined_pods += 1
        else:
            if status is TaskStatus.RELEASING:
                self.releasing.add(request)
                self.releasing_pods += 1
            used = self.used
            idle = self.idle
            if request.scalars:
                idle.sub(request)
            else:
                # Inline for the common request (every placement a session makes).
                idle.cpu -= request.cpu
                idle.memory -= request.memory
            counted = task.request
            if counted.scalars:
                used.add(counted)
            else:
                used.cpu += counted.cpu
                used.memory += counted.memory
            self.pod_count += 1
            if task.placement.host_ports:
                self.used_ports = (*self.used_ports, *task.placement.host_ports)
        self.tasks[task.uid] = task
        self.version += 1

    def remove_task(self, task: TaskInfo) -> None:
        """Undo add_task. The node holds the task object itself, so callers remove a
        task before changing its status, and add it again after."""
        stored = self.tasks.pop(task.uid, None)
        if stored is None:
            return
        request = stored.node_request
        status = stored.status
        if status is TaskStatus.PIPELINED:
            self.pipelined.sub(request)
            self.pipelined_pods -= 1
        else:
            if status is TaskStatus.RELEASING:
                self.releasing.sub(request)
                self.releasing_pods -= 1
            self.used.sub(stored.request)
            self.idle.add(request)
            self.pod_count -= 1
            if stored.placement.host_ports:
                self.used_ports = _without(self.used_ports, stored.placement.host_ports)
        self.version += 1

    def hold(self, amount: Resource, pods: int) -> None:
        """Take room out of what the session may place here (held for a starving gang):
        it reads as used by every filter, but no pod has it."""
        self.idle.sub(amount)
        self.pod_count += pods
        self.version += 1

    def release_hold(self, amount: Resource, pods: int) -> None:
        """Give back what `hold` took."""
        self.idle.add(amount)
        self.pod_count -= pods
        self.version += 1

    def clone(self) -> NodeInfo:
        """An independent copy: accounting and task statuses can change without touching self."""
        # Through the constructor (the compiled core builds native objects only this way).
        twin = NodeInfo(
            self.name,
            self.allocatable,
            max_pods=self.max_pods,
            labels=self.labels,
            taints=self.taints,
            unschedulable=self.unschedulable,
            ready=self.ready,
            images=self.images,
        )
        twin.used = self.used.clone()
        twin.idle = self.idle.clone()
        twin.releasing = self.releasing.clone()
        twin.pipelined = self.pipelined.clone()
        twin.pod_count = self.pod_count
        twin.releasing_pods = self.releasing_pods
        twin.pipelined_pods = self.pipelined_pods
        twin.tasks = dict(self.tasks)
        twin.used_ports = self.used_ports
        twin.version = self.version
        return twin

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, idle={self.idle!r}, pods={self.pod_count})"


def _without(ports: tuple[HostPort, ...], leaving: tuple[HostPort, ...]) -> tuple[HostPort, ...]:
    """`ports` less one occurrence of each port in `leaving`: what a leaving pod had added
    (another pod may hold an equal port, which stays)."""
    left = list(ports)
    for port in leaving:
        left.remove(port)
    return tuple(left)
