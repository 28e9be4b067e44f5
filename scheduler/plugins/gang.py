"""gang: a job runs only when minMember of its pods (and minTaskMember per role, and
minSubGroups whole subgroups per subGroupPolicy) can run."""

from __future__ import annotations

from scheduler.api.gang_state import (
    VICTIM_STATUSES,
    gang_placed,
    gang_ready,
    short_of_min_member,
)
from scheduler.api.job import JobInfo
from scheduler.api.reasons import FIELD_NOT_HONOURED, NOT_ENOUGH_TASKS
from scheduler.api.subgroups import missing_subgroups
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.framework.answers import SortKey, Vote, Waiting
from scheduler.framework.arguments import NoArguments
from scheduler.framework.plugin import Plugin

# Members that count as the gang's pods: all but the failed.
_LIVE = tuple(status for status in TaskStatus if status is not TaskStatus.FAILED)


class GangPlugin(Plugin[NoArguments]):
    """All or nothing: placements of a job commit only when the gang is complete."""

    name = "gang"

    def job_valid(self, job: JobInfo) -> Waiting | None:
        # Counted from the job's index, not by walking its members: this runs for every
        # job of every session.
        live = len(job.tasks) - job.count(TaskStatus.FAILED)
        if live < job.min_member:
            missing = job.min_member - live
            return Waiting(
                NOT_ENOUGH_TASKS,
                f"PodGroup {job.key} has {live} pods but minMember is {job.min_member}; "
                f"waiting for {missing} more (or lower minMember)",
            )
        # A member muster refuses (a field it does not honour) is never placed: the gang
        # waits, whole, rather than run short or against the field.
        refused = [t for t in job.tasks_in(TaskStatus.PENDING) if t.gated and t.refusal]
        if refused and live - len(refused) < job.min_member:
            first = min(refused, key=lambda t: t.name)
            return Waiting(FIELD_NOT_HONOURED, f"pod {first.key}: {first.refusal}")
        per_role = job.role_counts(*_LIVE) if job.min_task_member else {}
        for role, need in sorted(job.min_task_member.items()):
            if per_role.get(role, 0) < need:
                return Waiting(
                    NOT_ENOUGH_TASKS,
                    f"PodGroup {job.key} has {per_role.get(role, 0)} pods of task {role!r} "
                    f"but minTaskMember[{role}] is {need}",
                )
        too_few = missing_subgroups(job.subgroup_policies, job.tasks.values())
        if too_few is not None:
            policy, possible = too_few
            return Waiting(
                NOT_ENOUGH_TASKS,
                f"PodGroup {job.key} has {possible} subgroups of {policy.size} pods for "
                f"subGroupPolicy {policy.label} but minSubGroups is {policy.min_subgroups}; "
                f"waiting for more pods",
            )
        return None

    def job_ready(self, job: JobInfo) -> bool:
        return gang_ready(job)

    def job_pipelined(self, job: JobInfo) -> Vote:
        # Every role needs its minTaskMember placed or promised too; else the gang's
        # placements would be kept for nothing.
        return Vote.PERMIT if gang_placed(job) else Vote.REJECT

    def job_starving(self, job: JobInfo) -> bool:
        return short_of_min_member(job)

    def job_order(self, job: JobInfo) -> SortKey:
        # A gang still short of minMember goes before one that only adds extra members.
        return 1 if gang_ready(job) else 0

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
