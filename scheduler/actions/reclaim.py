"""reclaim: a queue below its deserved share takes back room from queues above theirs."""

from __future__ import annotations

import functools

from scheduler.actions.eviction import (
    EvictionArguments,
    ReclaimArguments,
    Unit,
    evict_for,
    may_preempt,
    starving_gangs,
)
from scheduler.api.job import JobInfo
from scheduler.api.queue import QueueInfo
from scheduler.api.resources import Resource
from scheduler.api.task import TaskInfo
from scheduler.framework.action import Action
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.session import Session


class Reclaim(Action[ReclaimArguments]):
    """For each starving gang of a queue that is not overused, queues in share order:
    pipeline it onto room released by evicting units of other, reclaimable queues.

    No ping-pong: a victim queue gives only what keeps it at its deserved share
    (the plugins' reclaim_allowed), and the reclaimer takes only what stays within its
    own (allocatable, and the plugins' preemptive for each task that needs room
    released), so after a reclaim neither side may take back from the other."""

    name = "reclaim"

    def execute(self, session: Session, state: CycleState) -> None:
        reclaim_all(session, state, self.arguments)


def reclaim_all(session: Session, state: CycleState, args: EvictionArguments) -> None:
    """What reclaim and gangreclaim do, with their arguments."""
    for job in reclaimers(session):
        queue = session.queues[job.queue]
        if session.overused(queue):
            continue
        evict_for(
            session,
            state,
            job,
            in_scope=functools.partial(_reclaimable_from, session, queue),
            allowed=session.reclaimable,
            reason=functools.partial(_reason, job),
            unit_allowed=functools.partial(_queue_can_give, session),
            may_evict_for=functools.partial(_may_reclaim_for, session, queue),
            whole_gangs=args.whole_gangs,
            min_runtime=args.min_runtime,
            max_domains=args.max_domains,
        )


def reclaimers(session: Session) -> list[JobInfo]:
    """Starving gangs that may evict others (preemptionPolicy Never forbids reclaim as it
    forbids preempt, as Volcano's reclaim skips such tasks), their queues in share order,
    then job order."""
    found = [job for job in starving_gangs(session) if may_preempt(session.snapshot, job)]

    def order(a: JobInfo, b: JobInfo) -> int:
        if a.queue != b.queue:
            return session.compare_queues(session.queues[a.queue], session.queues[b.queue])
        return session.compare_jobs(a, b)

    return sorted(found, key=functools.cmp_to_key(order))


def _reclaimable_from(session: Session, reclaimer: QueueInfo, victim: JobInfo) -> bool:
    queue = session.queues.get(victim.queue)
    return queue is not None and queue.name != reclaimer.name and queue.reclaimable


def _queue_can_give(session: Session, task: TaskInfo, unit: Unit, chosen: list[Unit]) -> bool:
    taken = Resource()
    for other in chosen:
        if other.job.queue != unit.job.queue:
            continue
        # A whole gang replaces the single pods of it chosen before (see _cover).
        if unit.whole and other.job.key == unit.job.key:
            continue
        taken.add(other.request)
    return session.reclaim_allowed(task, session.queues[unit.job.queue], taken, unit.request)


def _may_reclaim_for(session: Session, queue: QueueInfo, task: TaskInfo) -> bool:
    # Volcano asks the queue plugins per task (PreemptiveFn): capacity lets a queue
    # reclaim only while the task keeps it within its deserved share in some dimension.
    return session.preemptive(queue, [task])


def _reason(job: JobInfo, task: TaskInfo) -> str:
    return (
        f"reclaimed by queue {job.queue!r} for {job.key} (priority {task.priority}) "
        f"to place {task.key}"
    )
