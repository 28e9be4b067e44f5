"""Gang state: which gangs may be placed, what their members add up to, and which pods
may be victims; each rule is defined here once.

The gang plugin, the allocate, preempt and reclaim actions and framework/job_status.py
ask these questions of a JobInfo; none of them counts members on its own.
"""

from __future__ import annotations

from collections.abc import Collection

from scheduler.api.job import JobInfo, PodGroupPhase
from scheduler.api.task import BOUND_STATUSES, READY_STATUSES, TaskStatus

# Phases of an admitted gang: allocate, preempt and reclaim place only these (enqueue
# moves Pending to Inqueue).
ADMITTED_PHASES = frozenset({PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN})
# Phases of a gang that has started: a queue that is closing lets these go on.
STARTED_PHASES = frozenset({PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN})
# Pods that hold room on a node and are bound: the ones eviction can release. Allocated
# pods are the session's own placements, not yet bound.
VICTIM_STATUSES = BOUND_STATUSES
# Statuses that count towards a gang being placed: ready, or promised room being released.
PLACED_STATUSES = READY_STATUSES | {TaskStatus.PIPELINED}


def may_place(job: JobInfo, actions: Collection[str]) -> bool:
    """Whether the session may place the job's pods: it is admitted, or it is Pending and
    the config has no enqueue action (then every Pending job counts as admitted)."""
    if job.phase in ADMITTED_PHASES:
        return True
    return job.phase is PodGroupPhase.PENDING and "enqueue" not in actions


def members_placed(job: JobInfo) -> int:
    """Members placed now (or bound, running, done) plus those promised released room."""
    return job.ready_count() + job.pipelined_count()


def has_started(job: JobInfo) -> bool:
    """Whether any member is placed, bound, running or done: the gang has begun."""
    return job.ready_count() > 0


def runs_as_gang(job: JobInfo) -> bool:
    """Whether the PodGroup counts as Running: it has begun and minMember members are
    ready (Volcano's phase rule; minTaskMember is the placement rule, gang_ready)."""
    ready = job.ready_count()
    return ready > 0 and ready >= job.min_member


def ready_by_role(job: JobInfo) -> dict[str, int]:
    """Per role, the members that count towards minTaskMember."""
    return job.role_counts(*READY_STATUSES)


def placed_by_role(job: JobInfo) -> dict[str, int]:
    """Per role, the members placed now or promised room being released."""
    return job.role_counts(*PLACED_STATUSES)


def roles_satisfied(job: JobInfo, counts: dict[str, int]) -> bool:
    """Whether every role has its minTaskMember in `counts`."""
    return all(counts.get(role, 0) >= need for role, need in job.min_task_member.items())


def gang_ready(job: JobInfo) -> bool:
    """Whether the job has its gang placed on room it holds now: minMember members ready,
    and every role its minTaskMember."""
    if job.ready_count() < job.min_member:
        return False
    return not job.min_task_member or roles_satisfied(job, ready_by_role(job))


def gang_placed(job: JobInfo) -> bool:
    """Whether the job has its gang placed counting promised room too: minMember members
    ready or pipelined, and every role its minTaskMember (Volcano's CheckTaskPipelined)."""
    if members_placed(job) < job.min_member:
        return False
    return not job.min_task_member or roles_satisfied(job, placed_by_role(job))


def short_of_min_member(job: JobInfo) -> bool:
    """Whether fewer than minMember members are placed or promised room (a starving gang)."""
    return members_placed(job) < job.min_member


def started_short(job: JobInfo) -> bool:
    """Whether some members are bound or running but fewer than minMember: a gang a previous
    leader (or a bind that failed for good) left part-placed, to complete before any other."""
    ready = job.ready_count()
    return 0 < ready < job.min_member
