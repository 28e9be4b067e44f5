"""QueueInfo: a queue's weight, limits and state."""

from __future__ import annotations

import enum

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.resources import Resource, limit_from_list

# spec.dequeueStrategy: under `traverse` (the default) a PodGroup that cannot be admitted
# or placed does not hold back the ones behind it; under `fifo` it does.
TRAVERSE = "traverse"
FIFO = "fifo"
# Queue spec fields muster accepts but does not honour, and what it does instead.
QUEUE_NOT_HONOURED: dict[str, str] = {
    "spec.affinity": "the queue's pods are not steered to node groups "
    "(volcano.sh/nodegroup-name); they go on any node that fits; use node affinity on "
    "the pods instead",
    "spec.extendClusters": "muster schedules in this cluster only; the queue's jobs are "
    "not dispatched to other clusters",
    "spec.type": "muster schedules every queue the same way, whatever its type",
}


class QueueState(enum.Enum):
    """Queue status.state; a queue with none counts as Open."""

    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


class QueueInfo:
    """A queue: how it shares the cluster (weight, capability, guarantee) and whether it admits."""

    __slots__ = (
        "capability",
        "dequeue_strategy",
        "deserved",
        "guarantee",
        "name",
        "observed_allocated",
        "parent",
        "priority",
        "reclaimable",
        "state",
        "uid",
        "unhonoured",
        "weight",
    )

    def __init__(
        self,
        name: str,
        *,
        uid: str = "",
        weight: int = 1,
        capability: Resource | None = None,
        guarantee: Resource | None = None,
        deserved: Resource | None = None,
        reclaimable: bool = True,
        parent: str = "",
        priority: int = 0,
        state: QueueState = QueueState.OPEN,
        dequeue_strategy: str = TRAVERSE,
    ) -> None:
        self.name = name
        self.uid = uid
        self.weight = weight
        self.capability = capability
        self.guarantee = guarantee if guarantee is not None else Resource()
        self.deserved = deserved
        self.reclaimable = reclaimable
        self.parent = parent
        self.priority = priority
        self.state = state
        self.dequeue_strategy = dequeue_strategy
        # The resource names status.allocated holds on the server: the status writer
        # clears the ones that are no longer allocated (a merge patch only adds keys).
        self.observed_allocated: frozenset[str] = frozenset()
        # Spec fields the Queue sets that muster does not honour (QUEUE_NOT_HONOURED).
        self.unhonoured: tuple[str, ...] = ()

    @classmethod
    def from_queue(cls, queue: wire.Queue) -> QueueInfo:
        """The record of a Queue; raises InvalidObject when its spec cannot be used."""
        name = queue.metadata.name
        spec = queue.spec
        if spec.weight < 1:
            raise InvalidObject("Queue", name, "spec.weight", spec.weight, "must be 1 or more")
        capability = limit_from_list(
            spec.capability, kind="Queue", name=name, field="spec.capability"
        )
        guarantee = Resource.from_list(
            spec.guarantee.resource, kind="Queue", name=name, field="spec.guarantee.resource"
        )
        if capability is not None and not guarantee.less_equal(
            capability, missing_is_infinite=True
        ):
            raise InvalidObject(
                "Queue",
                name,
                "spec.guarantee.resource",
                spec.guarantee.resource,
                f"exceeds spec.capability {spec.capability}; "
                "lower the guarantee or raise the capability",
            )
        deserved = (
            Resource.from_list(spec.deserved, kind="Queue", name=name, field="spec.deserved")
            if spec.deserved
            else None
        )
        strategy = spec.dequeue_strategy or TRAVERSE
        if strategy not in (TRAVERSE, FIFO):
            raise InvalidObject(
                "Queue", name, "spec.dequeueStrategy", strategy, 'must be "fifo" or "traverse"'
            )
        try:
            state = QueueState(queue.status.state) if queue.status.state else QueueState.OPEN
        except ValueError:
            state = QueueState.UNKNOWN
        info = QueueInfo(
            name,
            uid=queue.metadata.uid,
            weight=spec.weight,
            capability=capability,
            guarantee=guarantee,
            deserved=deserved,
            reclaimable=spec.reclaimable if spec.reclaimable is not None else True,
            parent=spec.parent,
            priority=spec.priority,
            state=state,
            dequeue_strategy=strategy,
        )
        info.observed_allocated = frozenset(queue.status.allocated)
        info.unhonoured = tuple(
            field
            for field, present in (
                ("spec.affinity", bool(spec.affinity)),
                ("spec.extendClusters", bool(spec.extend_clusters)),
                ("spec.type", bool(spec.queue_type)),
            )
            if present
        )
        return info

    @property
    def fifo(self) -> bool:
        """Whether a PodGroup that cannot be admitted or placed holds back the ones behind
        it (spec.dequeueStrategy fifo)."""
        return self.dequeue_strategy == FIFO

    @property
    def is_open(self) -> bool:
        """Whether the queue admits new PodGroups."""
        return self.state is QueueState.OPEN

    def __repr__(self) -> str:
        return f"QueueInfo({self.name}, weight={self.weight}, {self.state.value})"
