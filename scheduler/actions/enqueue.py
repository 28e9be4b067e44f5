"""enqueue: admit Pending PodGroups (Pending -> Inqueue) when their queue and the cluster
can hold their minResources, so allocate never works on gangs that cannot start."""

from __future__ import annotations

from scheduler.api.job import JobInfo, PodGroupPhase
from scheduler.api.resources import Resource
from scheduler.framework.action import Action
from scheduler.framework.ordering import OrderedHeap
from scheduler.framework.session import Session

CLUSTER_FULL = "ClusterCapacityExceeded"
INQUEUE_TIMEOUT = "InqueueTimeout"
# Seconds an admitted gang may wait to start before it gives its reservation back.
DEFAULT_INQUEUE_TIMEOUT = 300.0
# Volcano's overcommit plugin admits up to 1.2x the cluster's allocatable, so
# that a gang is queued while others finish; the factor is configurable.
DEFAULT_OVERCOMMIT = 1.2


class Enqueue(Action):
    """Moves Pending jobs to Inqueue in queue and job order while room remains.

    An Inqueue job that has not started `inqueue-timeout` seconds after its admission
    goes back to Pending and releases its reservation (so the gangs behind it can be
    admitted); it is not admitted again before as long again has passed."""

    name = "enqueue"

    def execute(self, session: Session) -> None:
        factor = float(self.arguments.get("overcommit-factor", DEFAULT_OVERCOMMIT))
        timeout = float(self.arguments.get("inqueue-timeout", DEFAULT_INQUEUE_TIMEOUT))
        now = session.snapshot.now
        timing = timeout > 0 and now > 0
        if timing:
            self._expire_admissions(session, timeout, now)
        headroom = self._cluster_headroom(session, factor)
        by_queue: dict[str, OrderedHeap[JobInfo]] = {}
        for job in session.jobs.values():
            if job.phase is not PodGroupPhase.PENDING:
                continue
            if job.key in session.result.dequeued or (
                timing and now - session.snapshot.timed_out_at.get(job.key, -timeout) < timeout
            ):
                continue
            if session.job_valid(job) is not None:
                continue
            heap = by_queue.setdefault(job.queue, OrderedHeap(session.compare_jobs))
            heap.push(job)
        queues = OrderedHeap(
            session.compare_queues,
            (session.queues[name] for name in by_queue if name in session.queues),
        )
        while queues:
            queue = queues.pop()
            jobs = by_queue[queue.name]
            job = jobs.pop()
            if self._admit(session, job, headroom):
                job.phase = PodGroupPhase.INQUEUE
                session.enqueued(job)
                if not job.shadow:
                    session.result.admitted.append(job.key)
            if jobs:
                queues.push(queue)

    @staticmethod
    def _expire_admissions(session: Session, timeout: float, now: float) -> None:
        snapshot = session.snapshot
        for job in session.jobs.values():
            if job.phase is not PodGroupPhase.INQUEUE or job.ready_count():
                continue
            since = snapshot.admitted_at.get(job.key)
            if since is None or now - since < timeout or job.key in snapshot.nominated:
                continue
            job.phase = PodGroupPhase.PENDING
            session.dequeued(job)
            session.result.dequeued.append(job.key)
            job.wait(
                INQUEUE_TIMEOUT,
                f"the gang could not start within {timeout:g}s of being admitted; "
                "it returned to Pending and released its reservation of minResources",
            )

    @staticmethod
    def _cluster_headroom(session: Session, factor: float) -> Resource:
        total = Resource()
        used = Resource()
        for node in session.node_list:
            total.add(node.allocatable)
            used.add(node.used)
        headroom = total.multiply(factor).sub(used)
        for job in session.jobs.values():
            if job.phase is PodGroupPhase.INQUEUE and job.min_resources is not None:
                headroom.sub(job.min_resources)
        return headroom

    @staticmethod
    def _admit(session: Session, job: JobInfo, headroom: Resource) -> bool:
        need = job.min_resources
        if need is not None and not need.less_equal(headroom):
            short = ", ".join(need.insufficient(headroom))
            job.wait(
                CLUSTER_FULL,
                f"the cluster cannot hold minResources now (short of {short}); "
                "it is admitted when running jobs release resources",
            )
            return False
        if not session.job_enqueueable(job):
            return False
        if need is not None:
            headroom.sub(need)
        return True
