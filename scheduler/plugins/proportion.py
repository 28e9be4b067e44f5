"""proportion: queues share the cluster by weight, within capability, above guarantee.

Each queue deserves a share found by water-filling: the cluster is poured into
the queues by weight; a queue is full when it has what it requests (or its
capability), and what it does not need flows to the others. A queue may take
more only while its allocation stays within what it deserves; a Pending job
is admitted (Inqueue) only while its queue can hold its minResources.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scheduler.api.job import JobInfo, PodGroupPhase
from scheduler.api.queue import QueueInfo
from scheduler.api.resources import UNLIMITED, Resource, share_of
from scheduler.api.task import TaskInfo
from scheduler.framework.plugin import Plugin, Vote, Waiting

if TYPE_CHECKING:
    from scheduler.framework.session import Session

QUEUE_NOT_FOUND = "QueueNotFound"
QUEUE_NOT_OPEN = "QueueNotOpen"
QUEUE_FULL = "QueueCapacityExceeded"


class QueueShare:
    """One queue's figures for the session."""

    __slots__ = (
        "allocated",
        "capability",
        "deserved",
        "guarantee",
        "inqueue",
        "queue",
        "request",
        "share",
    )

    def __init__(self, queue: QueueInfo) -> None:
        self.queue = queue
        self.guarantee = queue.guarantee.clone()
        self.capability = queue.capability
        self.allocated = Resource()
        self.request = Resource()
        self.inqueue = Resource()
        self.deserved = Resource()
        self.share = 0.0

    def update_share(self) -> None:
        """share = the largest allocated / deserved over the dimensions."""
        self.share = share_of(self.allocated, self.deserved)


def within(request: Resource, used: Resource, limit: Resource) -> bool:
    """used + request <= limit in every dimension the request names."""
    if request.cpu and used.cpu + request.cpu > limit.cpu:
        return False
    if request.memory and used.memory + request.memory > limit.memory:
        return False
    for key, value in request.scalars.items():
        if value and used.scalars.get(key, 0) + value > limit.scalars.get(key, UNLIMITED):
            return False
    return True


def _clamp(value: Resource, ceiling: Resource) -> Resource:
    return value.minimum(ceiling)


class ProportionPlugin(Plugin):
    """Queue shares by weight: queue order, overuse, allocatable and enqueue checks."""

    name = "proportion"

    def __init__(self, arguments: Mapping[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.shares: dict[str, QueueShare] = {}
        self.total = Resource()
        self.jobs: dict[str, JobInfo] = {}

    def on_session_open(self, session: Session) -> None:
        self.jobs = session.jobs
        for node in session.node_list:
            self.total.add(node.allocatable)
        for name, queue in session.queues.items():
            self.shares[name] = QueueShare(queue)
        for job in session.jobs.values():
            attr = self.shares.get(job.queue)
            if attr is None:
                continue
            attr.allocated.add(job.allocated)
            attr.request.add(job.allocated)
            for task in job.pending_tasks():
                attr.request.add(task.request)
            if job.phase is PodGroupPhase.INQUEUE and job.min_resources is not None:
                attr.inqueue.add(job.min_resources)
        self._fill_deserved()
        for name, attr in self.shares.items():
            attr.update_share()
            session.queue_deserved[name] = attr.deserved
            session.queue_request[name] = attr.request

    def _real_capability(self, attr: QueueShare, guarantees: Resource) -> Resource:
        real = self.total.clone().sub(guarantees).add(attr.guarantee)
        if attr.capability is not None:
            real = real.minimum(attr.capability)
        return real

    def _fill_deserved(self) -> None:
        guarantees = Resource()
        for attr in self.shares.values():
            guarantees.add(attr.guarantee)
        ceilings = {
            name: self._real_capability(attr, guarantees).minimum(attr.request)
            for name, attr in self.shares.items()
        }
        remaining = self.total.clone()
        unmet = set(self.shares)
        while unmet:
            weight = sum(self.shares[name].queue.weight for name in unmet)
            before = remaining.clone()
            for name in sorted(unmet):
                attr = self.shares[name]
                old = attr.deserved.clone()
                grown = attr.deserved + before.multiply(attr.queue.weight / weight)
                attr.deserved = _clamp(grown, ceilings[name]).maximum(attr.guarantee)
                remaining.sub(attr.deserved - old)
                if attr.deserved == old or ceilings[name].less_equal(attr.deserved):
                    unmet.discard(name)
            if remaining == before or remaining.is_empty():
                break

    # Extension points ------------------------------------------------------
    def job_valid(self, job: JobInfo) -> Waiting | None:
        if job.queue not in self.shares:
            return Waiting(
                QUEUE_NOT_FOUND,
                f"queue {job.queue!r} does not exist; create it or set spec.queue "
                "to an existing queue",
            )
        return None

    def queue_order(self, a: QueueInfo, b: QueueInfo) -> int:
        share_a = self.shares[a.name].share if a.name in self.shares else 0.0
        share_b = self.shares[b.name].share if b.name in self.shares else 0.0
        if share_a == share_b:
            return 0
        return -1 if share_a < share_b else 1

    def overused(self, queue: QueueInfo) -> bool:
        attr = self.shares.get(queue.name)
        return attr is not None and attr.deserved.less_equal(attr.allocated)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        attr = self.shares.get(queue.name)
        if attr is None:
            return False
        return within(task.request, attr.allocated, attr.deserved)

    def job_enqueueable(self, job: JobInfo) -> Vote:
        attr = self.shares.get(job.queue)
        if attr is None:
            return Vote.REJECT
        if not attr.queue.is_open:
            job.wait(
                QUEUE_NOT_OPEN,
                f"queue {job.queue!r} is {attr.queue.state.value} and admits no new PodGroups",
            )
            return Vote.REJECT
        if job.min_resources is None:
            return Vote.PERMIT
        guarantees = Resource()
        for other in self.shares.values():
            guarantees.add(other.guarantee)
        capability = self._real_capability(attr, guarantees)
        held = attr.allocated + attr.inqueue
        if within(job.min_resources, held, capability):
            return Vote.PERMIT
        job.wait(
            QUEUE_FULL,
            f"queue {job.queue!r} cannot hold minResources {_describe(job.min_resources)}: "
            f"{_describe(held)} already allocated or reserved of {_describe(capability)}",
        )
        return Vote.REJECT

    def on_enqueue(self, job: JobInfo) -> None:
        attr = self.shares.get(job.queue)
        if attr is not None and job.min_resources is not None:
            attr.inqueue.add(job.min_resources)

    def on_allocate(self, task: TaskInfo) -> None:
        attr = self._attr_of(task)
        if attr is not None:
            attr.allocated.add(task.request)
            attr.update_share()

    def on_deallocate(self, task: TaskInfo) -> None:
        attr = self._attr_of(task)
        if attr is not None:
            attr.allocated.sub(task.request)
            attr.update_share()

    def _attr_of(self, task: TaskInfo) -> QueueShare | None:
        job = self.jobs.get(task.job)
        return self.shares.get(job.queue) if job is not None else None


def _describe(resource: Resource) -> str:
    listed = resource.to_list()
    parts = [
        f"{key} unlimited" if resource.get(key) >= UNLIMITED else f"{key} {value}"
        for key, value in listed.items()
    ]
    return ", ".join(parts) if parts else "nothing"
