"""preempt: inside a queue, a starving gang of higher priority evicts lower-priority pods."""

from __future__ import annotations

import functools

from scheduler.actions.eviction import (
    EvictionArguments,
    PreemptArguments,
    evict_for,
    may_preempt,
    starving_gangs,
)
from scheduler.api.job import JobInfo
from scheduler.api.task import TaskInfo
from scheduler.framework.action import Action
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.session import Session


class Preempt(Action[PreemptArguments]):
    """For each starving gang, highest priority first: pipeline it onto room released by
    evicting lower-priority pods of its own queue (whole victim gangs or spare members),
    and commit the evictions only if the whole gang is then placed."""

    name = "preempt"

    def execute(self, session: Session, state: CycleState) -> None:
        preempt_all(session, state, self.arguments)


def preempt_all(session: Session, state: CycleState, args: EvictionArguments) -> None:
    """What preempt and gangpreempt do, with their arguments."""
    for job in preemptors(session):
        evict_for(
            session,
            state,
            job,
            in_scope=functools.partial(_same_queue, job),
            allowed=session.preemptable,
            reason=functools.partial(_reason, job),
            whole_gangs=args.whole_gangs,
            min_runtime=args.min_runtime,
            max_domains=args.max_domains,
        )


def preemptors(session: Session) -> list[JobInfo]:
    """Starving gangs that may preempt, in job order."""
    found = [job for job in starving_gangs(session) if may_preempt(session.snapshot, job)]
    return sorted(found, key=session.job_key)


def _same_queue(job: JobInfo, victim: JobInfo) -> bool:
    return victim.queue == job.queue


def _reason(job: JobInfo, task: TaskInfo) -> str:
    return f"preempted by {job.key} (priority {task.priority}) to place {task.key}"
