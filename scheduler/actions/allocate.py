"""allocate: place gangs, queue by queue and job by job; a gang commits whole or not at all."""

from __future__ import annotations

import functools

from pydantic import Field

from scheduler.actions.eviction import Backoff, retry_due
from scheduler.api.gang_state import may_place
from scheduler.api.job import JobInfo
from scheduler.api.queue import QueueInfo
from scheduler.api.reasons import (
    NOT_ENOUGH_RESOURCES,
    QUEUE_SHARE_EXCEEDED,
    queue_share_held,
    queue_share_would_exceed,
)
from scheduler.framework.action import Action
from scheduler.framework.arguments import Count
from scheduler.framework.node_picker import NodePicker
from scheduler.framework.ordering import OrderedHeap
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


class AllocateArguments(Backoff):
    """allocate's arguments: kube-scheduler's node sampling, and the retry backoff."""

    percentage_of_nodes_to_score: Count = Field(0, alias="percentageOfNodesToScore", ge=0, le=100)
    min_feasible_nodes_to_find: Count = Field(100, alias="minFeasibleNodesToFind", ge=1)


class Allocate(Action[AllocateArguments]):
    """For the queue with the smallest share, its first job: place its pending tasks on the
    best nodes; commit when the gang is ready, keep pipelined placements when the gang can
    start once releasing pods go, else discard everything of the job.

    Jobs nominated by the previous session (preempt or reclaim released room for them)
    go first, before any queue order, so nobody else takes that room while it is freed.
    A job that failed before waits out its backoff (see eviction.retry_due); a failed job
    never stops the jobs behind it, which are popped in turn."""

    name = "allocate"

    def execute(self, session: Session) -> None:
        args = self.arguments
        picker = NodePicker(
            session,
            percentage=args.percentage_of_nodes_to_score,
            minimum=args.min_feasible_nodes_to_find,
        )
        by_queue, nominated = self._jobs_by_queue(session)
        for job in sorted(nominated, key=functools.cmp_to_key(session.compare_jobs)):
            self._allocate_job(session, picker, session.queues[job.queue], job)
        queues: OrderedHeap[QueueInfo] = OrderedHeap(
            session.compare_queues, (session.queues[name] for name in by_queue)
        )
        while queues:
            queue = queues.pop()
            jobs = by_queue[queue.name]
            if session.overused(queue):
                self._hold_back(jobs, queue)
                continue
            job = jobs.pop()
            self._allocate_job(session, picker, queue, job)
            if jobs:
                queues.push(queue)

    @staticmethod
    def _hold_back(jobs: OrderedHeap[JobInfo], queue: QueueInfo) -> None:
        # The queue has its deserved share: say so on every job it leaves waiting.
        while jobs:
            jobs.pop().wait(QUEUE_SHARE_EXCEEDED, queue_share_held(queue.name))

    @staticmethod
    def _jobs_by_queue(
        session: Session,
    ) -> tuple[dict[str, OrderedHeap[JobInfo]], list[JobInfo]]:
        actions = session.config.actions
        by_queue: dict[str, OrderedHeap[JobInfo]] = {}
        nominated: list[JobInfo] = []
        has_failures = bool(session.snapshot.failures)
        for job in session.jobs.values():
            if not may_place(job, actions):
                continue
            if not job.pending_tasks() or session.job_valid(job) is not None:
                continue
            if job.queue not in session.queues:
                continue
            if job.key in session.snapshot.nominated:
                nominated.append(job)
                continue
            if has_failures and not retry_due(session, job):
                continue
            by_queue.setdefault(job.queue, OrderedHeap(session.compare_jobs)).push(job)
        return by_queue, nominated

    @staticmethod
    def _allocate_job(session: Session, picker: NodePicker, queue: QueueInfo, job: JobInfo) -> None:
        statement = Statement(session)
        for task in session.sorted_tasks(job.pending_tasks()):
            node = picker.pick(task)
            if node is None:
                message = picker.failure(task)
                job.fit_errors[task.uid] = message
                job.wait(NOT_ENOUGH_RESOURCES, message)
                break
            # Checked after the pick so that a full cluster is reported as such,
            # not as the queue's share (which is capped by the cluster's size).
            if not session.allocatable(queue, task):
                picker.reconsider(task, node)
                job.wait(QUEUE_SHARE_EXCEEDED, queue_share_would_exceed(queue.name))
                break
            if task.request.fits_in(node.idle):
                statement.allocate(task, node)
            else:
                statement.pipeline(task, node)
            picker.reconsider(task, node)
        if session.job_ready(job):
            session.record_attempt(job, placed=len(statement) > 0)
            statement.commit()
            return
        if session.job_pipelined(job):
            # Room is promised on releasing resources: keep it, bind nothing yet. The
            # members placed on idle room hold it for this session and are pipelined when
            # it closes, so that none counts as running.
            session.keep_pipelined(statement)
            session.record_attempt(job, placed=True)
            return
        session.record_attempt(job, placed=False)
        placed = picker.discard(statement)
        if not job.wait_reason:
            job.wait(
                NOT_ENOUGH_RESOURCES,
                f"only {placed} of the {job.min_member} pods the gang needs could be placed",
            )
