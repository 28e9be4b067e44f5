"""preempt: inside a queue, a starving gang of higher priority evicts lower-priority pods."""

from __future__ import annotations

import functools

from scheduler.actions.eviction import (
    GangEvictor,
    mark_waiting,
    may_preempt,
    retry_due,
    schedulable_phase,
)
from scheduler.api.job import JobInfo
from scheduler.api.task import TaskInfo
from scheduler.framework.action import Action
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


class Preempt(Action):
    """For each starving gang, highest priority first: pipeline it onto room released by
    evicting lower-priority pods of its own queue (whole victim gangs or spare members),
    and commit the evictions only if the whole gang is then placed."""

    name = "preempt"

    def execute(self, session: Session) -> None:
        for job in preemptors(session):
            statement = Statement(session)
            evictor = GangEvictor(
                session,
                statement,
                in_scope=functools.partial(_same_queue, job),
                allowed=session.preemptable,
                reason=functools.partial(_reason, job),
            )
            if evictor.place_gang(job) and evictor.evicted:
                statement.commit()
                mark_waiting(job, evictor.evicted)
                session.result.attempts[job.key] = True
            else:
                statement.discard()


def preemptors(session: Session) -> list[JobInfo]:
    """Starving, admitted, valid gangs that may preempt, in job order."""
    found = [
        job
        for job in session.jobs.values()
        if job.queue in session.queues
        and schedulable_phase(session, job)
        and job.pending_tasks()
        and session.job_starving(job)
        and job.invalid is None
        and session.job_valid(job) is None
        and may_preempt(session.snapshot, job)
        and retry_due(session, job)
    ]
    return sorted(found, key=functools.cmp_to_key(session.compare_jobs))


def _same_queue(job: JobInfo, victim: JobInfo) -> bool:
    return victim.queue == job.queue


def _reason(job: JobInfo, task: TaskInfo) -> str:
    return f"preempted by {job.key} (priority {task.priority}) to place {task.key}"
