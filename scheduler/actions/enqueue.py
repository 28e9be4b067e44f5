"""enqueue: admit Pending PodGroups (Pending -> Inqueue) when their queue and the cluster
can hold their minResources, so allocate never works on gangs that cannot start.

Admission looks at minResources alone, as Volcano's enqueue does: whether the gang's
pods exist yet (the gang plugin's validity) is allocate's business. Operators such as
Kubeflow's Training Operator create a job's pods only once its PodGroup left Pending,
so waiting for the pods here would wait forever."""

from __future__ import annotations

from scheduler.actions.enqueue_arguments import EnqueueArguments
from scheduler.api.gang_state import has_started
from scheduler.api.job import JobInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.reasons import (
    BEHIND_QUEUE_HEAD,
    CLUSTER_FULL,
    INQUEUE_TIMEOUT,
    QUEUE_NOT_OPEN,
    behind_queue_head,
)
from scheduler.api.resources import Resource
from scheduler.framework.action import Action
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.holds import Holds
from scheduler.framework.ordering import KeyHeap, OrderedHeap
from scheduler.framework.session import Session

# Volcano's overcommit plugin admits up to 1.2x the cluster's allocatable, so
# that a gang is queued while others finish; the factor is configurable.
DEFAULT_OVERCOMMIT = 1.2


class Enqueue(Action[EnqueueArguments]):
    """Moves Pending jobs to Inqueue in queue and job order while room remains.

    An Inqueue job that has not started `inqueue-timeout` seconds after its admission
    goes back to Pending and releases its reservation (so the gangs behind it can be
    admitted); it is not admitted again before as long again has passed."""

    name = "enqueue"

    def execute(self, session: Session, state: CycleState) -> None:
        args = self.arguments
        factor = args.overcommit_factor or state.overcommit_factor or DEFAULT_OVERCOMMIT
        timeout = state.inqueue_timeout = args.inqueue_timeout
        now = session.snapshot.now
        timing = timeout > 0 and now > 0
        if timing:
            self._expire_admissions(session, timeout, now)
        self._release_closed_queues(session)
        headroom, capacity = self._cluster_room(session, factor)
        pending: dict[str, list[JobInfo]] = {}
        for job in session.active_jobs.values():
            if job.phase is not PodGroupPhase.PENDING:
                continue
            if session.timed_out(job) or (timing and _backing_off(session, job, timeout)):
                continue
            if job.invalid is not None:
                # A PodGroup that cannot be read is never admitted; the session says why.
                session.job_valid(job)
                continue
            if job.queue not in session.queues:
                # Refused, with the reason the queue plugins give (QueueNotFound).
                session.job_enqueueable(job)
                continue
            pending.setdefault(job.queue, []).append(job)
        starving = state.holds.admitting = _longest_starving(state.holds, pending)
        by_queue = {name: KeyHeap(session.job_key, jobs) for name, jobs in pending.items()}
        queues = OrderedHeap(session.compare_queues, (session.queues[name] for name in by_queue))
        while queues:
            queue = queues.pop()
            jobs = by_queue[queue.name]
            job = jobs.pop()
            if self._admit(session, job, headroom, capacity, job.key in starving):
                job.phase = PodGroupPhase.INQUEUE
                session.enqueued(job)
                if not job.shadow:
                    session.record_admission(job)
            elif queue.fifo:
                # The head of a fifo queue holds back the PodGroups behind it.
                while jobs:
                    jobs.pop().wait(BEHIND_QUEUE_HEAD, behind_queue_head(queue.name, job.key))
            if jobs:
                queues.push(queue)

    @staticmethod
    def _expire_admissions(session: Session, timeout: float, now: float) -> None:
        snapshot = session.snapshot
        for job in session.active_jobs.values():
            if job.phase is not PodGroupPhase.INQUEUE or has_started(job):
                continue
            since: float | None
            if job.key in snapshot.timed_out_at:
                # Sent back before, and the PodGroup still says Inqueue: the write did not
                # land (a 429, a lost leader). Send it back again rather than forget it.
                since = now - timeout
            else:
                # What this process saw, else what the PodGroup's Admitted condition says
                # (after a restart the reservation's age carries on, it does not start again).
                since = snapshot.admitted_at.get(job.key, job.admitted_since)
            if since is None:
                # Inqueue with no known admission (its Admitted condition never written, or
                # admitted by another scheduler): the timeout runs from now, never not at all.
                session.record_admission(job)
                continue
            if now - since < timeout or job.key in snapshot.nominated:
                continue
            job.phase = PodGroupPhase.PENDING
            session.dequeued(job)
            session.record_inqueue_timeout(job)
            job.wait(
                INQUEUE_TIMEOUT,
                f"the gang could not start within {timeout:g}s of being admitted; "
                "it returned to Pending and released its reservation of minResources",
            )

    @staticmethod
    def _release_closed_queues(session: Session) -> None:
        """An admitted gang that has not started in a queue that is no longer Open goes
        back to Pending: it cannot start there, so its reservation goes to the gangs
        behind it. (Volcano keeps it Inqueue, holding the room, until the queue reopens.)"""
        for job in session.active_jobs.values():
            queue = session.queues.get(job.queue)
            if job.phase is not PodGroupPhase.INQUEUE or queue is None or queue.is_open:
                continue
            if has_started(job):
                continue
            job.phase = PodGroupPhase.PENDING
            session.dequeued(job)
            job.wait(
                QUEUE_NOT_OPEN,
                f"queue {queue.name!r} is {queue.state.value}: the admitted gang cannot start "
                "there, so it returned to Pending and released its reservation; it is "
                "admitted again when the queue reopens, or move it to an Open queue "
                "(spec.queue)",
            )

    @staticmethod
    def _cluster_room(session: Session, factor: float) -> tuple[Resource, Resource]:
        """What admissions may still reserve (allocatable x factor, less what is used and
        reserved), and the cluster's allocatable x factor."""
        total = session.snapshot.allocatable(session.node_list)
        used = Resource()
        for node in session.node_list:
            used.add(node.used)
        capacity = total.multiply(factor)
        headroom = capacity.clone().sub(used)
        for job in session.active_jobs.values():
            reserved = job.reservation()
            if reserved is not None:
                headroom.sub(reserved)
        for settled in session.snapshot.settled_totals.values():
            headroom.sub(settled.inqueue)
        return headroom, capacity

    @staticmethod
    def _admit(
        session: Session, job: JobInfo, headroom: Resource, capacity: Resource, starving: bool
    ) -> bool:
        need = job.admission_need()
        if need is not None and not need.less_equal(headroom):
            why = _why_not_admitted(need, headroom, capacity, starving)
            if why:
                job.wait(CLUSTER_FULL, why)
                return False
        if not session.job_enqueueable(job):
            return False
        if need is not None:
            headroom.sub(need)
        return True


def _why_not_admitted(
    need: Resource, headroom: Resource, capacity: Resource, starving: bool
) -> str:
    """Why a gang whose need exceeds the headroom is not admitted ("": it is). One of the
    gangs starving longest is admitted if the cluster could ever hold it: waiting for free
    room would starve it for good under a stream of smaller gangs; once admitted, allocate
    holds room for it (framework/holds.py)."""
    if not starving:
        short = ", ".join(need.insufficient(headroom))
        return (
            f"the cluster cannot hold minResources now (short of {short}); "
            "it is admitted when running jobs release resources"
        )
    if not need.less_equal(capacity):
        short = ", ".join(need.insufficient(capacity))
        return (
            f"the cluster can never hold minResources (short of {short}, even empty); "
            "lower minResources or add nodes"
        )
    return ""


def _longest_starving(holds: Holds, pending: dict[str, list[JobInfo]]) -> frozenset[str]:
    """The Pending gangs starving longest, as many as may hold room at once: they are
    admitted whatever the cluster has free now (if it could ever hold them)."""
    found = []
    for jobs in pending.values():
        for job in jobs:
            since = holds.starving_since(job)
            if since is not None:
                found.append((since, job.key))
    found.sort()
    return frozenset(key for _, key in found[: holds.policy.holding_gangs])


def _backing_off(session: Session, job: JobInfo, timeout: float) -> bool:
    """Whether a job sent back for not starting in time waits before it is admitted again."""
    since = session.snapshot.timed_out_at.get(job.key, job.timed_out_since)
    return since is not None and session.snapshot.now - since < timeout
