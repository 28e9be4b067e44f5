"""gang: a job runs only when minMember of its pods (and minTaskMember per role) can run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scheduler.api.job import JobInfo
from scheduler.api.task import READY_STATUSES, TaskInfo, TaskStatus
from scheduler.framework.plugin import Plugin, Vote, Waiting

if TYPE_CHECKING:
    from scheduler.framework.session import Session

NOT_ENOUGH_TASKS = "NotEnoughTasks"
# Placed and bound: the statuses a victim may have.
VICTIM_STATUSES = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.BINDING})


def ready_by_role(job: JobInfo) -> dict[str, int]:
    """Per role, the members that count towards minTaskMember."""
    return job.role_counts(*READY_STATUSES)


def placed_by_role(job: JobInfo) -> dict[str, int]:
    """Per role, the members placed now or promised room being released."""
    return job.role_counts(*READY_STATUSES, TaskStatus.PIPELINED)


def roles_satisfied(job: JobInfo, counts: dict[str, int]) -> bool:
    """Whether every role has its minTaskMember."""
    return all(counts.get(role, 0) >= need for role, need in job.min_task_member.items())


class GangPlugin(Plugin):
    """All or nothing: placements of a job commit only when the gang is complete."""

    name = "gang"

    def __init__(self, arguments: Mapping[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.jobs: dict[str, JobInfo] = {}

    def job_valid(self, job: JobInfo) -> Waiting | None:
        live = [t for t in job.tasks.values() if t.status is not TaskStatus.FAILED]
        if len(live) < job.min_member:
            missing = job.min_member - len(live)
            return Waiting(
                NOT_ENOUGH_TASKS,
                f"PodGroup {job.key} has {len(live)} pods but minMember is {job.min_member}; "
                f"waiting for {missing} more (or lower minMember)",
            )
        per_role: dict[str, int] = {}
        for task in live:
            per_role[task.role] = per_role.get(task.role, 0) + 1
        for role, need in sorted(job.min_task_member.items()):
            if per_role.get(role, 0) < need:
                return Waiting(
                    NOT_ENOUGH_TASKS,
                    f"PodGroup {job.key} has {per_role.get(role, 0)} pods of role {role!r} "
                    f"but minTaskMember[{role}] is {need}",
                )
        return None

    def on_session_open(self, session: Session) -> None:
        self.jobs = session.jobs

    def job_ready(self, job: JobInfo) -> bool:
        return job_is_ready(job)

    def job_pipelined(self, job: JobInfo) -> Vote:
        placed = job.ready_count() + job.pipelined_count()
        if placed < job.min_member:
            return Vote.REJECT
        # Every role needs its minTaskMember placed or promised too (Volcano's
        # CheckTaskPipelined); else the gang's placements would be kept for nothing.
        if job.min_task_member and not roles_satisfied(job, placed_by_role(job)):
            return Vote.REJECT
        return Vote.PERMIT

    def job_starving(self, job: JobInfo) -> bool:
        return job.ready_count() + job.pipelined_count() < job.min_member

    def job_order(self, a: JobInfo, b: JobInfo) -> int:
        # A gang still short of minMember goes before one that only adds extra members.
        a_ready = job_is_ready(a)
        b_ready = job_is_ready(b)
        if a_ready == b_ready:
            return 0
        return 1 if a_ready else -1

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return _bound_members(candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return _bound_members(candidates)


def _bound_members(candidates: list[TaskInfo]) -> list[TaskInfo]:
    # Only pods that hold room on a node can make room. Which of them may go
    # together (a spare member, or a whole gang, never a gang cut below
    # minMember) is the preempt and reclaim actions' unit rule, in
    # actions/eviction.py, because it depends on the other victims chosen.
    return [task for task in candidates if task.status in VICTIM_STATUSES]


def job_is_ready(job: JobInfo) -> bool:
    """Whether the job already has its gang (minMember and every minTaskMember)."""
    if job.ready_count() < job.min_member:
        return False
    return not job.min_task_member or roles_satisfied(job, ready_by_role(job))
