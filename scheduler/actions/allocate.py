"""allocate: place gangs, queue by queue and job by job; a gang commits whole or not at all."""

from __future__ import annotations

import enum
from collections.abc import Mapping

from scheduler.actions.allocate_arguments import AllocateArguments
from scheduler.actions.eviction import retry_due
from scheduler.api.gang_state import gang_placed, may_place, started_short
from scheduler.api.job import JobInfo, NetworkTopology
from scheduler.api.node import NodeInfo
from scheduler.api.queue import QueueInfo
from scheduler.api.reasons import (
    NO_TOPOLOGY_DOMAIN_FITS,
    NOT_ENOUGH_RESOURCES,
    QUEUE_SHARE_EXCEEDED,
    queue_share_held,
    queue_share_would_exceed,
)
from scheduler.api.task import TaskInfo
from scheduler.api.topology import (
    SessionTopology,
    gang_request,
    no_room_message,
    ordered_candidates,
    placed_nodes,
)
from scheduler.framework.action import Action
from scheduler.framework.node_picker import NodePicker
from scheduler.framework.ordering import KeyHeap, OrderedHeap
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


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
        holds = session.holds
        holds.on_freed.append(picker.freed)
        # Gangs an autoscaler provisioned nodes for go first, the oldest first: placed whole
        # if they fit (once admitted), else the room they would take is held against every
        # other gang.
        provisioned = session.scale_up.provisioned()
        actions = session.config.actions
        for key, request in provisioned.items():
            job = session.jobs[key]
            if job.queue not in session.queues or not job.pending_tasks():
                continue
            if session.job_valid(job) is not None:
                continue
            if may_place(job, actions):
                self._allocate_job(session, picker, session.queues[job.queue], job)
            if not gang_placed(job):
                holds.hold_provisioned(job, request.since)
        starving = holds.holders()
        by_queue, nominated, starved = self._jobs_by_queue(session, starving, provisioned)
        for job in sorted(nominated, key=session.job_key):
            self._allocate_job(session, picker, session.queues[job.queue], job)
        # Starving gangs next, the longest starving first: each is placed whole if it
        # fits, else holds room (framework/holds.py) that the gangs after it cannot take.
        for job in sorted(starved, key=lambda j: (starving[j.key], j.key)):
            self._allocate_job(session, picker, session.queues[job.queue], job)
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
            self._allocate_job(session, picker, queue, job)
            if jobs:
                queues.push(queue)

    @staticmethod
    def _hold_back(jobs: KeyHeap[JobInfo], queue: QueueInfo) -> None:
        # The queue has its deserved share: say so on every job it leaves waiting.
        while jobs:
            jobs.pop().wait(QUEUE_SHARE_EXCEEDED, queue_share_held(queue.name))

    @staticmethod
    def _jobs_by_queue(
        session: Session, starving: dict[str, float], served: Mapping[str, object]
    ) -> tuple[dict[str, KeyHeap[JobInfo]], list[JobInfo], list[JobInfo]]:
        """The jobs to try, by queue; the nominated ones; the starving ones (those in
        `served` were tried already)."""
        actions = session.config.actions
        by_queue: dict[str, list[JobInfo]] = {}
        nominated: list[JobInfo] = []
        starved: list[JobInfo] = []
        has_failures = bool(session.snapshot.failures)
        for job in session.jobs.values():
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
                # Room made for it, or part of it bound (its leader died, or its minMember
                # was raised): served before any queue order, so nobody takes what it needs.
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
    def _allocate_job(session: Session, picker: NodePicker, queue: QueueInfo, job: JobInfo) -> None:
        holds = session.holds
        if not holds.holds:
            _allocate(session, picker, queue, job)
            return
        with holds.lifted_for(job):
            _allocate(session, picker, queue, job)
        if job.wait_reason == NOT_ENOUGH_RESOURCES and job.starving is None:
            # "Insufficient cpu" on nodes that show free cpu would puzzle: say who holds it.
            holders = holds.holders_named(job)
            if holders:
                job.wait_message += f" ({holders})"


def _allocate(session: Session, picker: NodePicker, queue: QueueInfo, job: JobInfo) -> None:
    """Place the job whole (or pipelined onto room being released), or nothing of it."""
    view = session.topology
    spec = job.network_topology
    # A soft gang whose domains all refuse it falls through to the plain placement.
    if (
        view is not None
        and spec is not None
        and (spec.hard or view.prefer)
        and _allocate_in_domain(session, picker, queue, job, view, spec)
    ):
        return
    statement = Statement(session)
    _place(session, picker, queue, job, session.sorted_tasks(job.pending_tasks()), statement)
    if _keep(session, job, statement):
        return
    session.record_attempt(job, placed=False)
    placed = picker.discard(statement)
    if not job.wait_reason:
        job.wait(
            NOT_ENOUGH_RESOURCES,
            f"only {placed} of the {job.min_member} pods the gang needs could be placed",
        )


class _Outcome(enum.Enum):
    """How placing a list of tasks ended."""

    PLACED = "placed"
    NO_NODE = "no node"
    QUEUE_FULL = "queue full"


def _place(
    session: Session,
    picker: NodePicker,
    queue: QueueInfo,
    job: JobInfo,
    tasks: list[TaskInfo],
    statement: Statement,
    *,
    explain: bool = True,
) -> _Outcome:
    """Place the tasks in order on the picker's best nodes until one finds none or the
    queue refuses it; `explain` records why on the job (a domain attempt does not: the
    next domain may hold the gang)."""
    # Asked once for the lot when the queue's answer adds up; else once per task. Capacity
    # an autoscaler provisioned for the gang exists for it alone: its queue's share of the
    # cluster, which that capacity swelled, does not hold it back.
    queue_takes_all = job.key in session.scale_up.provisioned() or session.allocatable_all(
        queue, tasks
    )
    for task in tasks:
        node = picker.pick(task)
        if node is None:
            if explain:
                message = picker.failure(task)
                job.fit_errors[task.uid] = message
                job.wait(NOT_ENOUGH_RESOURCES, message)
            return _Outcome.NO_NODE
        # Checked after the pick so that a full cluster is reported as such,
        # not as the queue's share (which is capped by the cluster's size).
        if not queue_takes_all and not session.allocatable(queue, task):
            picker.reconsider(task, node)
            job.wait(QUEUE_SHARE_EXCEEDED, queue_share_would_exceed(queue.name))
            return _Outcome.QUEUE_FULL
        if picker.picked_now:
            statement.allocate(task, node)
        else:
            statement.pipeline(task, node)
        picker.reconsider(task, node)
    return _Outcome.PLACED


def _keep(session: Session, job: JobInfo, statement: Statement) -> bool:
    """Commit the job's placements when its gang is ready, or keep them pipelined when it
    can start once releasing pods go; False when neither (the caller discards)."""
    if session.job_ready(job):
        session.record_attempt(job, placed=len(statement) > 0)
        statement.commit()
        return True
    if session.job_pipelined(job):
        # Room is promised on releasing resources: keep it, bind nothing yet. The
        # members placed on idle room hold it for this session and are pipelined when
        # it closes, so that none counts as running.
        session.keep_pipelined(statement)
        session.record_attempt(job, placed=True)
        return True
    return False


def _allocate_in_domain(
    session: Session,
    picker: NodePicker,
    queue: QueueInfo,
    job: JobInfo,
    view: SessionTopology,
    spec: NetworkTopology,
) -> bool:
    """Place a topology gang inside one domain, trying the admissible domains in order
    (lowest tier, then tightest fit); True when it is settled (placed, or waits as hard
    mode says), False when a soft gang falls back to being placed anywhere.

    A gang with members already placed (a later member, a scale-up) tries only the
    domains that hold all of them; a fresh gang tries those whose free room holds all its
    pending pods, so the search is linear in domains and never tries a hopeless one."""
    tasks = session.sorted_tasks(job.pending_tasks())
    if not tasks:
        return True
    limit = view.limit(spec) if spec.hard else view.topology.highest_tier
    placed = placed_nodes(job)
    if placed:
        joining = True
        first = tasks[0].request
        candidates = [
            domain
            for domain in view.topology.containing(placed, limit)
            if first.fits_in(view.idle(domain)[1])
        ]
    else:
        joining = False
        candidates = ordered_candidates(view.topology.domains(limit), view, gang_request(tasks))
    for domain in candidates:
        statement = Statement(session)
        inner = picker.within(domain.name, view.node_list(domain))
        outcome = _place(session, inner, queue, job, tasks, statement, explain=False)
        whole = outcome is _Outcome.PLACED or (joining and len(statement) > 0)
        if whole and _keep(session, job, statement):
            return True
        inner.discard(statement)
        if outcome is _Outcome.QUEUE_FULL:
            # The queue's share refuses the gang wherever it goes: it waits, as any gang.
            session.record_attempt(job, placed=False)
            return True
    if not spec.hard:
        return False
    session.record_attempt(job, placed=False)
    job.wait(NO_TOPOLOGY_DOMAIN_FITS, _why_no_domain(session, view, limit, tasks, placed))
    return True


def _why_no_domain(
    session: Session,
    view: SessionTopology,
    limit: int,
    tasks: list[TaskInfo],
    placed: set[str],
) -> str:
    def admits(task: TaskInfo, node: NodeInfo) -> bool:
        return session.admits(task, node).ok

    topology = view.topology
    if not placed:
        return no_room_message(topology, limit, tasks, session.nodes, admits)
    holding = topology.containing(placed, limit)
    what = topology.describe_tiers(limit)
    if not holding:
        return (
            f"the gang's placed pods are not all inside one {what}, so its {len(tasks)} "
            f"other pods cannot join them (hard mode); they wait"
        )
    names = ", ".join(domain.name for domain in holding)
    return (
        f"no {what} holding the gang's placed pods ({names}) has room for its "
        f"{len(tasks)} other pods"
    )
