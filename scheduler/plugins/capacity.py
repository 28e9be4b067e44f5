"""capacity: each queue deserves what its spec.deserved names (Volcano's capacity plugin).

A queue may borrow idle room beyond its deserved, up to its real capability (the
cluster less the other queues' guarantees, within spec.capability); what it
borrowed is reclaimed when a queue below its deserved needs it, down to the lender's
guarantee. A dimension spec.deserved does not name is deserved as zero: the queue
may still use it while it is idle, and a pod asking only for it is always
reclaimable. A queue with no deserved at all is best effort: served after every
queue still below its deserved. spec.weight is not used.

With `enableHierarchy: true` queues form a tree under `root` through spec.parent:
only leaf queues hold PodGroups, a queue and each ancestor must stay within their
real capabilities, a child's real capability is its parent's less its siblings'
guarantees, and the argument `ancestorReclaimLevel` makes reclaim check ancestors'
deserved too. Without it, spec.parent is not read (the queue gets a warning).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator

from scheduler.api import reasons
from scheduler.api.job import JobInfo
from scheduler.api.names import ROOT_QUEUE
from scheduler.api.queue import QueueInfo
from scheduler.api.resources import CPU, MEMORY, UNLIMITED, Resource, describe
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.framework.answers import Vote, Waiting
from scheduler.framework.arguments import Arguments, Count
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.decisions import QueueFigures
from scheduler.framework.holds import Holds
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session

NAME = "capacity"


class CapacityArguments(Arguments):
    """capacity's arguments, in Volcano's spelling.

    Volcano falls back to 0 for a negative ancestorReclaimLevel; muster refuses it at
    load. DRA's queue quota (`deviceclass/<class>` devices against capability, deserved and
    guarantee) is on, as Volcano 1.15's default; false leaves devices out of capacity's
    checks. Consumable capacity is not honoured, so its switch may only be false."""

    ancestor_reclaim_level: Count = Field(0, alias="ancestorReclaimLevel", ge=0)
    dynamic_resource_allocation: bool = Field(
        True, alias="capacity.DynamicResourceAllocationEnable", strict=True
    )
    dra_consumable_capacity: bool = Field(
        False, alias="capacity.DRAConsumableCapacityEnable", strict=True
    )

    @field_validator("dra_consumable_capacity")
    @classmethod
    def _no_consumable_capacity(cls, value: bool) -> bool:
        if value:
            raise ValueError(
                "muster does not allocate consumable capacity (a request for part of a "
                "shared device), so it counts no `<dimension>.deviceclass/<class>` quota; "
                "remove the argument or set it to false"
            )
        return value


class QueueCapacity:
    """One queue's figures for the session."""

    __slots__ = (
        "allocated",
        "ancestors",
        "capability",
        "children",
        "deserved",
        "elastic",
        "guarantee",
        "inqueue",
        "name",
        "queue",
        "real_capability",
        "request",
        "share",
    )

    def __init__(self, queue: QueueInfo) -> None:
        self.queue = queue
        self.name = queue.name
        self.deserved = queue.deserved.clone() if queue.deserved is not None else Resource()
        self.guarantee = queue.guarantee.clone()
        self.capability = _capability(queue.capability)
        self.real_capability = Resource()
        self.allocated = Resource()
        self.request = Resource()
        self.inqueue = Resource()
        # What jobs hold beyond their minResources: admission does not count it.
        self.elastic = Resource()
        self.share = 0.0
        # Root first, then down to the parent (empty without hierarchy).
        self.ancestors: list[QueueCapacity] = []
        self.children: list[QueueCapacity] = []

    def levels(self) -> list[QueueCapacity]:
        """The queue, then its parent, up to root."""
        return [self, *reversed(self.ancestors)]

    def update_share(self) -> None:
        """allocated / deserved at its largest over the dimensions deserved; 1 for a
        best-effort queue (no deserved), so it goes after every queue below its share."""
        names = self.deserved.names()
        if not names:
            self.share = 1.0
            return
        self.share = max(self.allocated.get(name) / self.deserved.get(name) for name in names)

    def ancestor_at(self, depth: int) -> QueueCapacity | None:
        """The ancestor `depth` levels up (1 is the parent), or None."""
        if depth <= 0 or len(self.ancestors) < depth:
            return None
        return self.ancestors[len(self.ancestors) - depth]


class CapacityPlugin(Plugin[CapacityArguments]):
    """Queue deserved, guarantee and capability by resource: queue order, allocatable,
    enqueue, and the reclaim votes (preemptive, reclaim_allowed)."""

    name = NAME
    # allocatable: allocated + request within each level's capability in every dimension the
    # request names; placements only add to allocated.
    allocatable_adds_up = True

    def __init__(self, arguments: CapacityArguments | Mapping[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.ancestor_reclaim_level = self.arguments.ancestor_reclaim_level
        # Whether devices (deviceclass/<class>) count against the queues' figures.
        self._devices_counted = self.arguments.dynamic_resource_allocation
        self.hierarchy = False
        self.shares: dict[str, QueueCapacity] = {}
        # Queues whose spec.parent cannot be followed (hierarchy only), and why.
        self.broken: dict[str, str] = {}
        self.jobs: dict[str, JobInfo] = {}
        # The session's holds: which Pending gangs starve longest (admission).
        self.holds: Holds | None = None
        self.total = Resource()

    # Building the session's figures -------------------------------------------
    def on_session_open(self, session: Session, state: CycleState) -> None:
        self.jobs = session.jobs
        self.holds = state.holds
        self.hierarchy = hierarchy_enabled(session.config)
        self.total = session.snapshot.allocatable(session.node_list)
        for name, queue in session.queues.items():
            self.shares[name] = QueueCapacity(queue)
        if self.hierarchy:
            self._link_tree()
        self._add_jobs()
        if self.hierarchy:
            root = self.shares[ROOT_QUEUE]
            root.real_capability = _infinite(self.total).capped(root.capability)
            self._fill_tree(root, session)
        else:
            self._fill_flat()
        for name, attr in self.shares.items():
            attr.update_share()
            if name in session.queues:
                session.report_queue_figures(name, QueueFigures(attr.deserved, attr.request))
        self._warn_unused_fields(session)

    def _link_tree(self) -> None:
        """Children under their parents (root when spec.parent is empty); a queue whose
        parent is missing, or that is its own ancestor, is left out of the tree."""
        if ROOT_QUEUE not in self.shares:
            # The root Queue object may not exist (Volcano's controller creates it).
            self.shares[ROOT_QUEUE] = QueueCapacity(QueueInfo(ROOT_QUEUE))
        for name in self.shares:
            if name != ROOT_QUEUE:
                self._ancestry(name)
        for name, attr in self.shares.items():
            if name != ROOT_QUEUE and name not in self.broken:
                attr.ancestors[-1].children.append(attr)

    def _ancestry(self, name: str) -> None:
        chain: list[str] = []
        current = name
        while current != ROOT_QUEUE:
            if current in chain:
                self.broken[name] = (
                    f"queue {name!r} is its own ancestor through spec.parent "
                    f"({' -> '.join([*chain, current])}); break the cycle"
                )
                return
            chain.append(current)
            parent = self.shares[current].queue.parent or ROOT_QUEUE
            if parent not in self.shares:
                self.broken[name] = (
                    f"queue {current!r} names spec.parent {parent!r}, which does not exist; "
                    "create that queue or change spec.parent"
                )
                return
            current = parent
        # chain is the queue, its parent, ...: ancestors are root first.
        self.shares[name].ancestors = [self.shares[ROOT_QUEUE]] + [
            self.shares[ancestor] for ancestor in reversed(chain[1:])
        ]

    def _add_jobs(self) -> None:
        for job in self.jobs.values():
            attr = self.shares.get(job.queue)
            if attr is None or job.queue in self.broken or (self.hierarchy and attr.children):
                continue  # job_valid says why
            pending = Resource()
            for task in job.tasks_in(TaskStatus.PENDING):
                pending.add(task.request)
            reserved = job.reservation()
            elastic = _exceeded(job.allocated, job.min_resources or Resource())
            for level in attr.levels():
                level.allocated.add(job.allocated)
                level.request.add(job.allocated).add(pending)
                if reserved is not None:
                    level.inqueue.add(reserved)
                level.elastic.add(elastic)

    def _fill_flat(self) -> None:
        guarantees = Resource()
        for attr in self.shares.values():
            guarantees.add(attr.guarantee)
        for attr in self.shares.values():
            real = _exceeded(self.total, guarantees).add(attr.guarantee)
            attr.real_capability = real.capped(attr.capability)
            attr.deserved = attr.deserved.capped(attr.real_capability).maximum(attr.guarantee)

    def _fill_tree(self, attr: QueueCapacity, session: Session) -> None:
        """Each child's deserved (at least its guarantee) and real capability (the
        parent's less the siblings' guarantees, within its own); root deserves what its
        children do."""
        guarantees = Resource()
        deserved = Resource()
        for child in attr.children:
            child.deserved = child.deserved.maximum(child.guarantee)
            deserved.add(child.deserved)
            guarantees.add(child.guarantee)
        if attr.name == ROOT_QUEUE:
            attr.guarantee = guarantees
            attr.deserved = deserved
        elif attr.children and not deserved.less_equal(attr.deserved):
            # Volcano only logs a parent whose children deserve more than it does.
            session.warn(
                "Queue",
                attr.name,
                reasons.DESERVED_EXCEEDS_PARENT,
                f"the spec.deserved of queue {attr.name!r}'s child queues adds up to "
                f"{describe(deserved)}, more than its own {describe(attr.deserved)}: "
                "not every child can get its deserved at once; lower the children's or "
                "raise the parent's spec.deserved",
            )
        for child in attr.children:
            real = _exceeded(attr.real_capability, guarantees).add(child.guarantee)
            child.real_capability = real.capped(child.capability)
            self._fill_tree(child, session)

    def _warn_unused_fields(self, session: Session) -> None:
        for name, queue in session.queues.items():
            if queue.weight > 1:
                session.warn(
                    "Queue",
                    name,
                    reasons.NOT_HONOURED_REASON,
                    f"spec.weight={queue.weight} is not used by the capacity plugin, which "
                    "gives the queue what spec.deserved names instead; set spec.deserved",
                )
            if queue.parent and not self.hierarchy:
                session.warn(
                    "Queue",
                    name,
                    reasons.NOT_HONOURED_REASON,
                    f"spec.parent={queue.parent!r} is honoured by the capacity plugin only "
                    "with enableHierarchy: true; the queue is scheduled as a top-level queue",
                )
            if name in self.broken:
                session.warn("Queue", name, reasons.QUEUE_PARENT_INVALID, self.broken[name])

    # Queue and job questions ---------------------------------------------------
    def _queue_problem(self, job: JobInfo) -> Waiting | None:
        attr = self.shares.get(job.queue)
        if attr is None:
            return Waiting(reasons.QUEUE_NOT_FOUND, reasons.queue_not_found(job.queue))
        if job.queue in self.broken:
            return Waiting(reasons.QUEUE_PARENT_INVALID, self.broken[job.queue])
        if self.hierarchy and (attr.children or job.queue == ROOT_QUEUE):
            return Waiting(reasons.QUEUE_NOT_LEAF, reasons.queue_not_leaf(job.queue, _leaves(attr)))
        if not attr.queue.is_open:
            # Volcano's capacity places nothing in a queue that is not Open, not even
            # replacement pods of a running gang.
            return Waiting(
                reasons.QUEUE_NOT_OPEN,
                f"queue {job.queue!r} is {attr.queue.state.value}: the capacity plugin "
                f"places no pod in it; {reasons.MOVE_OR_REOPEN}",
            )
        return None

    def job_valid(self, job: JobInfo) -> Waiting | None:
        return self._queue_problem(job)

    def queue_order(self, a: QueueInfo, b: QueueInfo) -> int:
        # spec.priority first (higher first), then the smaller share, then a queue
        # with a deserved before a best-effort one, as in Volcano.
        if a.priority != b.priority:
            return b.priority - a.priority
        left, right = self.shares.get(a.name), self.shares.get(b.name)
        if left is None or right is None:
            return 0
        if self.hierarchy:
            left, right = _siblings_below_common_ancestor(left, right)
        return _compare_shares(left, right)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool | Waiting:
        attr = self.shares.get(queue.name)
        if attr is None or not queue.is_open or queue.name in self.broken:
            return False
        if self.hierarchy and attr.children:
            return False
        request = task.request if self._devices_counted else task.request.without_devices()
        for level in attr.levels():
            over = _exceeding(level.allocated + request, level.real_capability, request)
            if over:
                return Waiting(
                    reasons.QUEUE_FULL,
                    f"{_where(attr, level)} cannot take {task.key} ({describe(task.request)}):"
                    f" {', '.join(over)} would exceed what it may hold, "
                    f"{describe(level.real_capability)}, with "
                    f"{describe(level.allocated)} allocated",
                )
        return True

    def job_enqueueable(self, job: JobInfo) -> Vote | Waiting:
        problem = self._queue_problem(job)
        if problem is not None:
            return problem
        need = job.admission_need()
        if need is None:
            return Vote.PERMIT
        if not self._devices_counted:
            need = need.without_devices()
        attr = self.shares[job.queue]
        # A gang starving longest asks only whether the queue could ever hold it.
        jumps = self.holds is not None and self.holds.jumps_admission(job)
        for level in attr.levels():
            held = Resource() if jumps else level.allocated + level.inqueue - level.elastic
            over = _exceeding(need + held, level.real_capability, need)
            if over:
                return Waiting(
                    reasons.QUEUE_FULL,
                    f"{_where(attr, level)} cannot hold minResources {describe(need)}: "
                    f"insufficient {', '.join(over)} ({describe(held)} already allocated or "
                    f"reserved of {describe(level.real_capability)})",
                )
        return Vote.PERMIT

    def preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        # The reclaimer's queue may take room back only within its real capability and
        # while, in some dimension the tasks ask for, it stays within its deserved.
        attr = self.shares.get(queue.name)
        if attr is None or not queue.is_open or queue.name in self.broken:
            return False
        request = Resource()
        for task in tasks:
            request.add(task.request)
        future = attr.allocated + request
        if _exceeding(future, attr.real_capability, request):
            return False
        if _partly_within(future, attr.deserved, request):
            return True
        if not self.hierarchy:
            return False
        for depth in range(1, self.ancestor_reclaim_level + 1):
            ancestor = attr.ancestor_at(depth)
            if ancestor is None or ancestor.name == ROOT_QUEUE:
                continue
            if _partly_within(ancestor.allocated + request, ancestor.deserved, request):
                return True
        return False

    def _diverging_ancestors(
        self, reclaimer: QueueCapacity, victim: QueueCapacity
    ) -> list[QueueCapacity]:
        """The victim's ancestors up to ancestorReclaimLevel levels up, but root and
        those the reclaimer has at the same depth."""
        found = []
        for depth in range(1, self.ancestor_reclaim_level + 1):
            ancestor = victim.ancestor_at(depth)
            if ancestor is None or ancestor.name == ROOT_QUEUE:
                continue
            theirs = reclaimer.ancestor_at(depth)
            if theirs is None or theirs.name != ancestor.name:
                found.append(ancestor)
        return found

    def _share_ancestor(self, a: QueueCapacity, b: QueueCapacity) -> bool:
        """Whether the two queues have a common non-root ancestor within the level."""
        mine = {
            ancestor.name
            for depth in range(1, self.ancestor_reclaim_level + 1)
            if (ancestor := a.ancestor_at(depth)) is not None
        }
        theirs = {
            ancestor.name
            for depth in range(1, self.ancestor_reclaim_level + 1)
            if (ancestor := b.ancestor_at(depth)) is not None
        }
        return bool((mine & theirs) - {ROOT_QUEUE})

    def reclaim_allowed(
        self, reclaimer: TaskInfo, queue: QueueInfo, taken: Resource, unit: Resource
    ) -> bool:
        # Volcano's capacity victim rules, added up over what this eviction already takes
        # from the queue: the victim uses a dimension the reclaimer asks for; the queue
        # keeps its guarantee; it gives only while it holds more than it deserves in a
        # dimension the victim uses (or the victim uses nothing the queue deserves: it
        # only borrowed); with hierarchy and ancestorReclaimLevel, the same holds for the
        # ancestors where the two queues' branches diverge.
        attr = self.shares.get(queue.name)
        owner = self.jobs.get(reclaimer.job)
        mine = self.shares.get(owner.queue) if owner is not None else None
        if attr is None or mine is None or not (unit.names() & reclaimer.request.names()):
            return False
        before = attr.allocated - taken
        if not attr.guarantee.less_equal(before - unit):
            return False
        check_ancestors = self.hierarchy and self.ancestor_reclaim_level > 0
        if not _has_relevant(unit, attr.deserved):
            # No contention under a shared ancestor when neither leaf deserves what is
            # asked: Volcano leaves such a victim alone.
            if (
                check_ancestors
                and self._share_ancestor(mine, attr)
                and not _has_relevant(reclaimer.request, mine.deserved)
            ):
                return False
        elif not _greater_partly(before, attr.deserved, unit):
            return False
        if not check_ancestors:
            return True
        for ancestor in self._diverging_ancestors(mine, attr):
            if _has_relevant(unit, ancestor.deserved) and not _greater_partly(
                ancestor.allocated - taken, ancestor.deserved, unit
            ):
                return False
        return True

    # Events ----------------------------------------------------------------------
    def on_enqueue(self, job: JobInfo) -> None:
        attr = self.shares.get(job.queue)
        need = job.admission_need()
        if attr is not None and need is not None:
            for level in attr.levels():
                level.inqueue.add(need)

    def on_dequeue(self, job: JobInfo) -> None:
        attr = self.shares.get(job.queue)
        need = job.admission_need()
        if attr is not None and need is not None:
            for level in attr.levels():
                level.inqueue.sub(need)

    def on_allocate(self, task: TaskInfo) -> None:
        attr = self._attr_of(task)
        if attr is not None:
            for level in attr.levels():
                level.allocated.add(task.request)
                level.update_share()

    def on_deallocate(self, task: TaskInfo) -> None:
        attr = self._attr_of(task)
        if attr is not None:
            for level in attr.levels():
                level.allocated.sub(task.request)
                level.update_share()

    def _attr_of(self, task: TaskInfo) -> QueueCapacity | None:
        job = self.jobs.get(task.job)
        if job is None or job.queue in self.broken:
            return None
        return self.shares.get(job.queue)


def hierarchy_enabled(config: SchedulerConfig) -> bool:
    """Whether the config sets `enableHierarchy: true` on capacity (Volcano: unset is off)."""
    for tier in config.tiers:
        for option in tier.plugins:
            if option.name == NAME:
                return option.enable_hierarchy is True
    return False


# Volcano's resource comparisons ---------------------------------------------------
def _capability(limit: Resource | None) -> Resource | None:
    # Volcano reads a cpu or memory capability of 0 as not set.
    if limit is None:
        return None
    capped = limit.clone()
    if capped.cpu <= 0:
        capped.cpu = UNLIMITED
    if capped.memory <= 0:
        capped.memory = UNLIMITED
    return capped


def _infinite(total: Resource) -> Resource:
    return Resource(UNLIMITED, UNLIMITED, dict.fromkeys(total.scalars, UNLIMITED))


def _exceeded(left: Resource, right: Resource) -> Resource:
    """What of `left` exceeds `right`, per dimension of left, never below zero."""
    return Resource(
        max(left.cpu - right.cpu, 0),
        max(left.memory - right.memory, 0),
        {key: max(value - right.scalars.get(key, 0), 0) for key, value in left.scalars.items()},
    )


def _exceeding(future: Resource, limit: Resource, request: Resource) -> list[str]:
    """The dimensions the request asks for in which `future` is above `limit` (an
    extended resource the limit does not hold counts as zero)."""
    return sorted(name for name in request.names() if future.get(name) > limit.get(name))


def _partly_within(future: Resource, deserved: Resource, request: Resource) -> bool:
    """Whether `future` stays within `deserved` in some dimension the request asks for."""
    return any(future.get(name) <= deserved.get(name) for name in request.names())


def _relevant(deserved: Resource, request: Resource) -> list[str]:
    # cpu and memory count when deserved; an extended resource when named (even as 0).
    names = []
    for name in request.names():
        if name in (CPU, MEMORY):
            if deserved.get(name) > 0:
                names.append(name)
        elif name in deserved.scalars:
            names.append(name)
    return names


def _greater_partly(allocated: Resource, deserved: Resource, request: Resource) -> bool:
    """Whether `allocated` is above `deserved` in a dimension the request uses and the
    deserved names."""
    return any(allocated.get(name) > deserved.get(name) for name in _relevant(deserved, request))


def _has_relevant(request: Resource, deserved: Resource) -> bool:
    """Whether the request asks for a dimension the deserved holds."""
    return bool(request.names() & deserved.names())


def _compare_shares(left: QueueCapacity, right: QueueCapacity) -> int:
    if left.share != right.share:
        return -1 if left.share < right.share else 1
    left_deserves = not left.deserved.is_empty()
    if left_deserves == (not right.deserved.is_empty()):
        return 0
    return -1 if left_deserves else 1


def _siblings_below_common_ancestor(
    left: QueueCapacity, right: QueueCapacity
) -> tuple[QueueCapacity, QueueCapacity]:
    """The two queues' ancestors (or themselves) just below their deepest common one."""
    level = 0
    for index in range(min(len(left.ancestors), len(right.ancestors))):
        if left.ancestors[index] is not right.ancestors[index]:
            break
        level = index
    return _below(left, level), _below(right, level)


def _below(attr: QueueCapacity, level: int) -> QueueCapacity:
    return attr.ancestors[level + 1] if level + 1 < len(attr.ancestors) else attr


def _where(attr: QueueCapacity, level: QueueCapacity) -> str:
    where = f"queue {attr.name!r}"
    if level is not attr:
        where += f" (through its ancestor {level.name!r})"
    return where


def _leaves(attr: QueueCapacity) -> list[str]:
    if not attr.children:
        return [attr.name]
    return [name for child in attr.children for name in _leaves(child)]
