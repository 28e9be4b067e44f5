"""reclaim: a queue below its deserved share takes back room from queues above theirs."""

from __future__ import annotations

import functools

from scheduler.actions.eviction import Unit, evict_for, starving_gangs
from scheduler.api.job import JobInfo
from scheduler.api.queue import QueueInfo
from scheduler.api.resources import Resource
from scheduler.api.task import TaskInfo
from scheduler.framework.action import Action
from scheduler.framework.session import Session


class Reclaim(Action):
    """For each starving gang of a queue that is not overused, queues in share order:
    pipeline it onto room released by evicting units of other, reclaimable queues.

    No ping-pong: a victim queue gives only what keeps it at its deserved share
    (the plugins' reclaim_allowed), and the reclaimer takes only what stays within its
    own (allocatable), so after a reclaim neither side may take back from the other."""

    name = "reclaim"

    def execute(self, session: Session) -> None:
        for job in reclaimers(session):
            queue = session.queues[job.queue]
            if session.overused(queue):
                continue
            evict_for(
                session,
                job,
                in_scope=functools.partial(_reclaimable_from, session, queue),
                allowed=session.reclaimable,
                reason=functools.partial(_reason, job),
                unit_allowed=functools.partial(_queue_can_give, session),
            )


def reclaimers(session: Session) -> list[JobInfo]:
    """Starving gangs, their queues in share order, then job order."""
    found = starving_gangs(session)

    def order(a: JobInfo, b: JobInfo) -> int:
        if a.queue != b.queue:
            return session.compare_queues(session.queues[a.queue], session.queues[b.queue])
        return session.compare_jobs(a, b)

    return sorted(found, key=functools.cmp_to_key(order))


def _reclaimable_from(session: Session, reclaimer: QueueInfo, victim: JobInfo) -> bool:
    queue = session.queues.get(victim.queue)
    return queue is not None and queue.name != reclaimer.name and queue.reclaimable


def _queue_can_give(session: Session, unit: Unit, chosen: list[Unit]) -> bool:
    taken = Resource()
    for other in chosen:
        if other.job.queue == unit.job.queue and other.job.key != unit.job.key:
            taken.add(other.request)
    taken.add(unit.request)
    return session.reclaim_allowed(session.queues[unit.job.queue], taken)


def _reason(job: JobInfo, task: TaskInfo) -> str:
    return (
        f"reclaimed by queue {job.queue!r} for {job.key} (priority {task.priority}) "
        f"to place {task.key}"
    )
