"""drf: dominant resource fairness between jobs: the job with the smallest share goes first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api.job import JobInfo
from scheduler.api.resources import Resource
from scheduler.api.task import TaskInfo
from scheduler.framework.answers import SortKey
from scheduler.framework.arguments import NoArguments
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session


def dominant_share(allocated: Resource, total: Resource) -> float:
    """The largest fraction of the cluster the allocation takes in any one dimension."""
    share = 0.0
    if total.cpu:
        share = max(share, allocated.cpu / total.cpu)
    if total.memory:
        share = max(share, allocated.memory / total.memory)
    for key, value in allocated.scalars.items():
        capacity = total.scalars.get(key, 0)
        if capacity and value:
            share = max(share, value / capacity)
    return share


class DrfPlugin(Plugin[NoArguments]):
    """Keeps each job's dominant share current as tasks are placed and released."""

    name = "drf"

    def __init__(self, arguments: NoArguments | Mapping[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.total = Resource()
        self.allocated: dict[str, Resource] = {}
        self.shares: dict[str, float] = {}
        self.jobs: Mapping[str, JobInfo] = {}

    def on_session_open(self, session: Session, state: CycleState) -> None:
        self.jobs = session.jobs
        self.total = session.snapshot.allocatable(session.node_list)
        # The jobs the session orders: a settled one (framework/settled.py) is read on demand.
        for key, job in session.active_jobs.items():
            self.allocated[key] = job.allocated.clone()
            self.shares[key] = dominant_share(job.allocated, self.total)

    def share(self, key: str) -> float:
        """A job's dominant share, computed when first asked after a change."""
        known = self.shares.get(key)
        if known is None:
            allocated = self.allocated.get(key)
            if allocated is None:
                job = self.jobs.get(key)
                allocated = job.allocated if job is not None else None
            known = self.shares[key] = dominant_share(allocated, self.total) if allocated else 0.0
        return known

    def job_order(self, job: JobInfo) -> SortKey:
        return self.share(job.key)  # the smaller dominant share first

    def on_allocate(self, task: TaskInfo) -> None:
        self._allocated_of(task.job).add(task.request)
        # Placing a gang moves its share once per task; ordering asks far less often.
        self.shares.pop(task.job, None)

    def on_deallocate(self, task: TaskInfo) -> None:
        self._allocated_of(task.job).sub(task.request)
        self.shares.pop(task.job, None)

    def _allocated_of(self, job: str) -> Resource:
        allocated = self.allocated.get(job)
        if allocated is None:
            allocated = self.allocated[job] = Resource()
        return allocated
