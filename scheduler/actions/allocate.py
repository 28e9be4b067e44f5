"""allocate: place gangs, queue by queue and job by job; a gang commits whole or not at all.

Partly bound gangs come first (api/gang_state.py: some members bound, the gang never ready
since it was last Pending): each is completed on the room that is left, its bound members
staying where they are, whatever its queue's share; else it is held for, and undone once it
has been partly bound for `partly-bound-timeout` (actions/partly_bound.py).

A gang is placed on the picker's best nodes (actions/placement.py); a topology gang inside
one domain (actions/topology_placement.py); a gang with spec.subGroupPolicy one subgroup at
a time, each whole or not at all (actions/subgroup_placement.py). The gang commits when
minMember, minTaskMember and every policy's minSubGroups are placed."""

from __future__ import annotations

from collections.abc import Collection

from scheduler.actions.allocate_arguments import AllocateArguments
from scheduler.actions.backoff import retry_due
from scheduler.actions.partly_bound import decide_completion, partly_bound_gangs
from scheduler.actions.placement import keep_placements, place_tasks
from scheduler.actions.subgroup_placement import allocate_by_subgroup
from scheduler.actions.topology_placement import allocate_in_domain
from scheduler.api.gang_state import (
    WERE_BOUND_STATUSES,
    gang_placed,
    gang_shortfall,
    may_place,
    started_short,
)
from scheduler.api.job import JobInfo
from scheduler.api.queue import QueueInfo
from scheduler.api.reasons import (
    BEHIND_QUEUE_HEAD,
    NOT_ENOUGH_RESOURCES,
    QUEUE_SHARE_EXCEEDED,
    behind_queue_head,
    queue_share_held,
)
from scheduler.framework.action import Action
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.node_picker import NodePicker
from scheduler.framework.ordering import KeyHeap, OrderedHeap
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


class Allocate(Action[AllocateArguments]):
    """For the queue with the smallest share, its first job: place its pending tasks on the
    best nodes; commit when the gang is ready, keep pipelined placements when the gang can
    start once releasing pods go, else discard everything of the job.

    Partly bound gangs go first (completed, held for, or undone: actions/partly_bound.py),
    then gangs an autoscaler provisioned nodes for. Jobs nominated by the previous session
    (preempt or reclaim released room for them) go next, before any queue order, so nobody
    else takes that room while it is freed.
    A job that failed before waits out its backoff (actions/backoff.py); a failed job
    never stops the jobs behind it, which are popped in turn."""

    name = "allocate"

    def execute(self, session: Session, state: CycleState) -> None:
        args = self.arguments
        picker = NodePicker(
            session,
            state,
            percentage=args.percentage_of_nodes_to_score,
            minimum=args.min_feasible_nodes_to_find,
        )
        holds = state.holds
        holds.on_freed.append(picker.freed)
        served = self._complete_partly_bound(session, state, picker)
        # Gangs an autoscaler provisioned nodes for go next, the oldest first: placed whole
        # if they fit (once admitted), else the room they would take is held against every
        # other gang.
        provisioned = state.scale_up.provisioned()
        actions = session.config.actions
        for key, request in provisioned.items():
            job = session.jobs[key]
            if key in served or job.queue not in session.queues or not job.pending_tasks():
                continue
            if session.job_valid(job) is not None:
                continue
            if may_place(job, actions):
                self._allocate_job(session, state, picker, session.queues[job.queue], job)
            if not gang_placed(job):
                holds.hold_provisioned(job, request.since)
        served |= provisioned.keys()
        starving = holds.holders(served)
        by_queue, nominated, starved = self._jobs_by_queue(session, starving, served)
        for job in sorted(nominated, key=session.job_key):
            self._allocate_job(session, state, picker, session.queues[job.queue], job)
        # Starving gangs next, the longest starving first: each is placed whole if it
        # fits, else holds room (framework/holds.py) that the gangs after it cannot take.
        for job in sorted(starved, key=lambda j: (starving[j.key], j.key)):
            self._allocate_job(session, state, picker, session.queues[job.queue], job)
            if not gang_placed(job):
                holds.hold_for(job, starving[job.key])
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
            self._allocate_job(session, state, picker, queue, job)
            if queue.fifo and session.result.attempts.get(job.key) is False:
                # Nothing of the head of a fifo queue could be placed: the rest wait.
                while jobs:
                    jobs.pop().wait(BEHIND_QUEUE_HEAD, behind_queue_head(queue.name, job.key))
            if jobs:
                queues.push(queue)

    def _complete_partly_bound(
        self, session: Session, state: CycleState, picker: NodePicker
    ) -> set[str]:
        """Serve the partly bound gangs, the longest partly bound first: each is completed
        on the room that is left (its bound members stay where they are), whatever its phase
        or its queue's share, since it holds room already; then actions/partly_bound.py says
        whether it is completed, held for, or undone. Returns their keys."""
        found = partly_bound_gangs(session)
        timeout = self.arguments.partly_bound_timeout
        for since, job in found:
            bound = job.count(*WERE_BOUND_STATUSES)
            queue = session.queues.get(job.queue)
            if queue is not None and job.pending_tasks() and session.job_valid(job) is None:
                self._allocate_job(session, state, picker, queue, job)
            decide_completion(session, state, job, since, timeout, bound)
        return {job.key for _, job in found}

    @staticmethod
    def _hold_back(jobs: KeyHeap[JobInfo], queue: QueueInfo) -> None:
        # The queue has its deserved share: say so on every job it leaves waiting.
        while jobs:
            jobs.pop().wait(QUEUE_SHARE_EXCEEDED, queue_share_held(queue.name))

    @staticmethod
    def _jobs_by_queue(
        session: Session, starving: dict[str, float], served: Collection[str]
    ) -> tuple[dict[str, KeyHeap[JobInfo]], list[JobInfo], list[JobInfo]]:
        """The jobs to try, by queue; the nominated ones; the starving ones (those in
        `served` were tried already)."""
        actions = session.config.actions
        by_queue: dict[str, list[JobInfo]] = {}
        nominated: list[JobInfo] = []
        starved: list[JobInfo] = []
        has_failures = bool(session.snapshot.failures)
        for job in session.active_jobs.values():
            if not may_place(job, actions) or job.key in served:
                continue
            if not job.pending_tasks():
                if len(job.tasks) < job.min_member:
                    # Its pods are not all there yet (none, before KubeRay or Kubeflow
                    # create them): say so, as Volcano's session open does for every job.
                    session.job_valid(job)
                continue
            if session.job_valid(job) is not None:
                continue
            if job.queue not in session.queues:
                continue
            if job.key in session.snapshot.nominated or started_short(job):
                # Room made for it, or part of it placed but not partly bound (it ran whole
                # and lost a member, or its minMember was raised): served before any queue
                # order, so nobody takes what it needs.
                nominated.append(job)
                continue
            if job.key in starving:
                # Tried every session, whatever its backoff: it holds room meanwhile.
                starved.append(job)
                continue
            if has_failures and not retry_due(session, job):
                continue
            by_queue.setdefault(job.queue, []).append(job)
        ordered = {name: KeyHeap(session.job_key, jobs) for name, jobs in by_queue.items()}
        return ordered, nominated, starved

    @staticmethod
    def _allocate_job(
        session: Session, state: CycleState, picker: NodePicker, queue: QueueInfo, job: JobInfo
    ) -> None:
        holds = state.holds
        if not holds.holds:
            _allocate(session, state, picker, queue, job)
            return
        with holds.lifted_for(job):
            _allocate(session, state, picker, queue, job)
        if job.wait_reason == NOT_ENOUGH_RESOURCES and job.starving is None:
            # "Insufficient cpu" on nodes that show free cpu would puzzle: say who holds it.
            holders = holds.holders_named(job)
            if holders:
                job.wait_message += f" ({holders})"


def _allocate(
    session: Session, state: CycleState, picker: NodePicker, queue: QueueInfo, job: JobInfo
) -> None:
    """Place the job whole (or pipelined onto room being released), or nothing of it."""
    if job.subgroup_policies:
        allocate_by_subgroup(session, state, picker, queue, job)
        return
    placement = state.topology_for(job, session.nodes)
    # A soft gang whose domains all refuse it falls through to the plain placement.
    if (
        placement is not None
        and (placement.spec.hard or placement.view.prefer)
        and allocate_in_domain(session, state, picker, queue, job, *placement)
    ):
        return
    statement = Statement(session)
    tasks = session.sorted_tasks(job.pending_tasks())
    place_tasks(session, state, picker, queue, job, tasks, statement)
    if keep_placements(session, state, job, [statement]):
        return
    session.record_attempt(job, placed=False)
    # Said before the discard: what of the gang (minMember, which task) is short.
    short = gang_shortfall(job)
    placed = picker.discard(statement)
    if not job.wait_reason:
        job.wait(
            NOT_ENOUGH_RESOURCES,
            short or f"only {placed} of the {job.min_member} pods the gang needs could be placed",
        )
