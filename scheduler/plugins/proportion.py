"""proportion: queues share the cluster by weight, within capability, above guarantee.

Queues form a tree under `root` through spec.parent (a queue with no parent,
or a missing one, hangs from root). Each queue deserves a share found by
water-filling, level by level: root's amount (the cluster, within root's
capability when a `root` Queue exists) is poured into its children by weight;
a child is full when it has what its subtree requests (or its capability), and
what it does not need flows to its siblings; each child's deserved is then
poured into its own children the same way. Only leaf queues hold PodGroups. A
leaf may take more only while its allocation stays within what it deserves
and every ancestor stays within its capability; a Pending job is admitted
(Inqueue) only while its queue and every ancestor can hold its minResources.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api.gang_state import STARTED_PHASES
from scheduler.api.job import JobInfo
from scheduler.api.names import ROOT_QUEUE
from scheduler.api.queue import QueueInfo
from scheduler.api.reasons import (
    MOVE_OR_REOPEN,
    NOT_HONOURED_REASON,
    QUEUE_FULL,
    QUEUE_NOT_FOUND,
    QUEUE_NOT_LEAF,
    QUEUE_NOT_OPEN,
    queue_not_found,
    queue_not_leaf,
)
from scheduler.api.resources import UNLIMITED, Resource, describe, is_device_count, share_of
from scheduler.api.task import TaskInfo
from scheduler.framework.answers import Vote, Waiting
from scheduler.framework.arguments import NoArguments
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.decisions import QueueFigures
from scheduler.framework.holds import Holds
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session

# What a Queue that sets spec.deserved is told: proportion computes deserved itself.
DESERVED_NOT_HONOURED = (
    "spec.deserved is honoured only with the capacity plugin; proportion gives the queue "
    "a share of the cluster by spec.weight instead (within spec.capability, at least "
    "spec.guarantee); enable capacity in place of proportion to honour spec.deserved"
)


class QueueShare:
    """One queue's figures for the session."""

    __slots__ = (
        "_share",
        "allocated",
        "capability",
        "children",
        "deserved",
        "guarantee",
        "inqueue",
        "parent",
        "queue",
        "request",
    )

    def __init__(self, queue: QueueInfo) -> None:
        self.queue = queue
        self.guarantee = queue.guarantee.clone()
        self.capability = queue.capability
        self.allocated = Resource()
        self.request = Resource()
        self.inqueue = Resource()
        self.deserved = Resource()
        self._share: float | None = 0.0
        self.parent: QueueShare | None = None
        self.children: list[QueueShare] = []

    def update_share(self) -> None:
        """Forget the share: allocated or deserved moved (computed again when asked)."""
        self._share = None

    @property
    def share(self) -> float:
        """The largest allocated / deserved over the dimensions."""
        if self._share is None:
            self._share = share_of(self.allocated, self.deserved)
        return self._share

    def ancestors(self) -> list[QueueShare]:
        """Parent, grandparent, ... up to root's child (root itself when it is a queue)."""
        found = []
        parent = self.parent
        while parent is not None:
            found.append(parent)
            parent = parent.parent
        return found


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


def _fill_devices(
    siblings: list[QueueShare], amount: Resource, ceilings: dict[str, Resource]
) -> None:
    """Water-fill each DeviceClass's devices (deviceclass/<class>) by weight among the
    siblings that ask for some, on its own: the rounds above share every dimension with
    every queue short of anything, and a whole device cannot be split, so a queue asking
    for 8 of 8 devices beside queues short of cpu would deserve only the few a round's
    share rounds to. Each round gives each queue its weight's share of what is left (at
    least one device to the heaviest queue left, then by name, when shares round to none),
    never more than it asks."""
    for key, total in amount.scalars.items():
        if not is_device_count(key):
            continue
        wanting = {
            attr.queue.name: attr for attr in siblings if ceilings[attr.queue.name].get(key) > 0
        }
        given = {name: max(attr.guarantee.get(key), 0) for name, attr in wanting.items()}
        remaining = total - sum(given.values())
        unmet = {name for name in wanting if given[name] < ceilings[name].get(key)}
        while remaining > 0 and unmet:
            weight = sum(wanting[name].queue.weight for name in unmet)
            moved = 0
            for name in sorted(unmet):
                share = remaining * wanting[name].queue.weight // weight if weight else 0
                grant = min(share, ceilings[name].get(key) - given[name])
                given[name] += grant
                moved += grant
            if moved == 0:
                heaviest = min(unmet, key=lambda name: (-wanting[name].queue.weight, name))
                given[heaviest] += 1
                moved = 1
            remaining -= moved
            unmet = {name for name in unmet if given[name] < ceilings[name].get(key)}
        for attr in siblings:
            attr.deserved.set(key, given.get(attr.queue.name, 0))


class ProportionPlugin(Plugin[NoArguments]):
    """Queue shares by weight: queue order, overuse, allocatable and enqueue checks."""

    name = "proportion"
    # allocatable: allocated + request within deserved (and parents' capability), in every
    # dimension the request names; placements only add to allocated.
    allocatable_adds_up = True

    def __init__(self, arguments: NoArguments | Mapping[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.shares: dict[str, QueueShare] = {}
        self.total = Resource()
        self.jobs: dict[str, JobInfo] = {}
        # The session's holds: which Pending gangs starve longest (admission).
        self.holds: Holds | None = None
        # Queues directly under root (whether or not a `root` Queue object exists).
        self._top: list[QueueShare] = []
        # _admission_capability per queue: fixed for the session (the cluster's size and
        # the queues' guarantees and capabilities), asked once per Pending job.
        self._capabilities: dict[str, Resource] = {}

    def on_session_open(self, session: Session, state: CycleState) -> None:
        self.jobs = session.jobs
        self.holds = state.holds
        self.total = session.snapshot.allocatable(session.node_list)
        for name, queue in session.queues.items():
            self.shares[name] = QueueShare(queue)
        self._link_tree()
        for job in session.active_jobs.values():
            attr = self.shares.get(job.queue)
            if attr is None or attr.children:
                continue
            pending = job.pending_request()
            reserved = job.reservation()
            for level in (attr, *attr.ancestors()):
                level.allocated.add(job.allocated)
                level.request.add(job.allocated).add(pending)
                if reserved is not None:
                    level.inqueue.add(reserved)
        # The settled jobs, summed per queue by the cache (framework/settled.py).
        for queue_name, total in session.snapshot.settled_totals.items():
            attr = self.shares.get(queue_name)
            if attr is None or attr.children:
                continue
            for level in (attr, *attr.ancestors()):
                level.allocated.add(total.allocated)
                level.request.add(total.allocated).add(total.pending_request)
                level.inqueue.add(total.inqueue)
        amount = self.total.clone()
        root = self.shares.get(ROOT_QUEUE)
        if root is not None:
            amount = amount.capped(root.capability)
            root.deserved = amount.clone()
        self._fill_deserved(self._top, amount)
        for name, attr in self.shares.items():
            attr.update_share()
            session.report_queue_figures(name, QueueFigures(attr.deserved, attr.request))
            if attr.queue.deserved is not None:
                session.warn("Queue", name, NOT_HONOURED_REASON, DESERVED_NOT_HONOURED)

    def _link_tree(self) -> None:
        """Children under their parents; a missing parent or a cycle hangs from root."""
        root = self.shares.get(ROOT_QUEUE)
        for name, attr in self.shares.items():
            if name == ROOT_QUEUE:
                continue
            parent_name = attr.queue.parent or ROOT_QUEUE
            parent = self.shares.get(parent_name)
            if parent_name == ROOT_QUEUE or parent is None or self._is_cycle(name):
                attr.parent = root
                self._top.append(attr)
                continue
            attr.parent = parent
            parent.children.append(attr)
        if root is not None:
            root.children = list(self._top)

    def _is_cycle(self, name: str) -> bool:
        seen = {name}
        current = self.shares[name].queue.parent
        while current and current != ROOT_QUEUE and current in self.shares:
            if current in seen:
                return True
            seen.add(current)
            current = self.shares[current].queue.parent
        return False

    @staticmethod
    def _real_capability(attr: QueueShare, amount: Resource, guarantees: Resource) -> Resource:
        # A dimension the capability does not name is unlimited (a queue capped in cpu
        # and memory still runs GPU jobs), as in Volcano.
        return amount.clone().sub(guarantees).add(attr.guarantee).capped(attr.capability)

    def _fill_deserved(self, siblings: list[QueueShare], amount: Resource) -> None:
        """Water-fill `amount` into the siblings by weight, then recurse into each."""
        guarantees = Resource()
        for attr in siblings:
            guarantees.add(attr.guarantee)
        ceilings = {
            attr.queue.name: self._real_capability(attr, amount, guarantees).minimum(attr.request)
            for attr in siblings
        }
        by_name = {attr.queue.name: attr for attr in siblings}
        remaining = amount.clone()
        unmet = set(by_name)
        while unmet:
            weight = sum(by_name[name].queue.weight for name in unmet)
            before = remaining.clone()
            for name in sorted(unmet):
                attr = by_name[name]
                old = attr.deserved.clone()
                grown = attr.deserved + before.multiply(attr.queue.weight / weight)
                attr.deserved = _clamp(grown, ceilings[name]).maximum(attr.guarantee)
                remaining.sub(attr.deserved - old)
                if attr.deserved == old or ceilings[name].less_equal(attr.deserved):
                    unmet.discard(name)
            if remaining == before or remaining.is_empty():
                break
        _fill_devices(siblings, amount, ceilings)
        for attr in siblings:
            if attr.children:
                self._fill_deserved(attr.children, attr.deserved)

    # Extension points ------------------------------------------------------
    def _queue_problem(self, job: JobInfo) -> Waiting | None:
        """Why the job's queue cannot hold it at all: missing, or not a leaf."""
        attr = self.shares.get(job.queue)
        if attr is None:
            return Waiting(QUEUE_NOT_FOUND, queue_not_found(job.queue))
        if attr.children or job.queue == ROOT_QUEUE:
            return Waiting(QUEUE_NOT_LEAF, queue_not_leaf(job.queue, _leaves(attr)))
        return None

    def job_valid(self, job: JobInfo) -> Waiting | None:
        problem = self._queue_problem(job)
        if problem is not None:
            return problem
        attr = self.shares[job.queue]
        if not attr.queue.is_open and job.phase not in STARTED_PHASES:
            # A closing queue lets its running gangs finish (and replace their pods) but
            # starts none that was only admitted.
            return Waiting(
                QUEUE_NOT_OPEN,
                f"queue {job.queue!r} is {attr.queue.state.value}: it starts no new gang; "
                f"{MOVE_OR_REOPEN}",
            )
        return None

    def queue_order(self, a: QueueInfo, b: QueueInfo) -> int:
        # spec.priority first (higher is served first), then the smaller share, as in Volcano.
        if a.priority != b.priority:
            return b.priority - a.priority
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
        request = task.request
        if not within(request, attr.allocated, attr.deserved):
            return False
        # A loop, not all() over ancestors(): this can run for every pod placed.
        level = attr.parent
        while level is not None:
            capability = level.capability
            if capability is not None and not within(request, level.allocated, capability):
                return False
            level = level.parent
        return True

    def reclaim_allowed(
        self, reclaimer: TaskInfo, queue: QueueInfo, taken: Resource, unit: Resource
    ) -> bool:
        # The victim queue must keep at least its deserved share in its dominant
        # dimension: then it is not below its share and cannot reclaim back.
        attr = self.shares.get(queue.name)
        if attr is None:
            return False
        return share_of(attr.allocated - taken - unit, attr.deserved) >= 1.0

    def job_enqueueable(self, job: JobInfo) -> Vote | Waiting:
        problem = self._queue_problem(job)
        if problem is not None:
            return problem
        attr = self.shares[job.queue]
        if not attr.queue.is_open:
            return Waiting(
                QUEUE_NOT_OPEN,
                f"queue {job.queue!r} is {attr.queue.state.value} and admits no new PodGroups; "
                f"{MOVE_OR_REOPEN}",
            )
        need = job.admission_need()
        if need is None:
            return Vote.PERMIT
        # A gang starving longest asks only whether the queue could ever hold it: waiting
        # for what runs to finish would starve it under a stream of small gangs.
        jumps = self.holds is not None and self.holds.jumps_admission(job)
        for level in (attr, *attr.ancestors()):
            capability = self._admission_capability(level)
            held = Resource() if jumps else level.allocated + level.inqueue
            if within(need, held, capability):
                continue
            where = f"queue {job.queue!r}"
            if level is not attr:
                where += f" (through its parent {level.queue.name!r})"
            return Waiting(
                QUEUE_FULL,
                f"{where} cannot hold minResources {describe(need)}: "
                f"{describe(held)} already allocated or reserved of {describe(capability)}",
            )
        return Vote.PERMIT

    def _admission_capability(self, attr: QueueShare) -> Resource:
        """What the queue may hold at most: what its parent may hold (the cluster at the
        top) less its siblings' guarantees, within its own capability."""
        known = self._capabilities.get(attr.queue.name)
        if known is None:
            known = self._capabilities[attr.queue.name] = self._compute_capability(attr)
        return known

    def _compute_capability(self, attr: QueueShare) -> Resource:
        if attr.queue.name == ROOT_QUEUE:
            return self.total.capped(attr.capability)
        parent = attr.parent
        amount = self.total if parent is None else self._admission_capability(parent)
        guarantees = Resource()
        for other in parent.children if parent is not None else self._top:
            guarantees.add(other.guarantee)
        return self._real_capability(attr, amount, guarantees)

    def on_enqueue(self, job: JobInfo) -> None:
        attr = self.shares.get(job.queue)
        need = job.admission_need()
        if attr is not None and need is not None:
            for level in (attr, *attr.ancestors()):
                level.inqueue.add(need)

    def on_dequeue(self, job: JobInfo) -> None:
        attr = self.shares.get(job.queue)
        need = job.admission_need()
        if attr is not None and need is not None:
            for level in (attr, *attr.ancestors()):
                level.inqueue.sub(need)

    def on_allocate(self, task: TaskInfo) -> None:
        attr = self._attr_of(task)
        if attr is not None:
            attr.allocated.add(task.request)
            attr.update_share()
            parent = attr.parent
            while parent is not None:
                parent.allocated.add(task.request)
                parent = parent.parent

    def on_deallocate(self, task: TaskInfo) -> None:
        attr = self._attr_of(task)
        if attr is not None:
            attr.allocated.sub(task.request)
            attr.update_share()
            parent = attr.parent
            while parent is not None:
                parent.allocated.sub(task.request)
                parent = parent.parent

    def _attr_of(self, task: TaskInfo) -> QueueShare | None:
        job = self.jobs.get(task.job)
        return self.shares.get(job.queue) if job is not None else None


def _leaves(attr: QueueShare) -> list[str]:
    if not attr.children:
        return [attr.queue.name]
    return [name for child in attr.children for name in _leaves(child)]
