"""Gang state: which gangs may be placed, what their members add up to, and which pods
may be victims; each rule is defined here once (the subgroup rules of spec.subGroupPolicy
in api/subgroups.py, which these questions ask).

The gang plugin, the allocate, preempt and reclaim actions, framework/job_status.py and
framework/podgroup_conditions.py ask these questions of a JobInfo; none of them counts
members on its own.
"""

from __future__ import annotations

from collections.abc import Collection

from scheduler.api.job import JobInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.subgroups import SubGroupKey, policies_satisfied, split, whole_count
from scheduler.api.task import BOUND_STATUSES, READY_STATUSES, TaskInfo, TaskStatus
from scheduler.api.timestamps import parse_rfc3339

# Phases of an admitted gang: allocate, preempt and reclaim place only these (enqueue
# moves Pending to Inqueue).
ADMITTED_PHASES = frozenset({PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN})
# Phases of a gang that has started: a queue that is closing lets these go on.
STARTED_PHASES = frozenset({PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN})
# Phases muster writes only once a gang has been ready since it was last Pending: Running
# (minMember ready), Unknown (it ran, then lost members) and Completed. Read from the API
# server (JobInfo.observed_phase), so a new leader knows it too. A gang bound whole whose
# Running is not written yet has every member bound: it is ready, so the lag of the status
# write never makes it partly bound.
HAS_BEEN_READY_PHASES = frozenset(
    {PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN, PodGroupPhase.COMPLETED}
)
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


def subgroups_satisfied(job: JobInfo, statuses: Collection[TaskStatus]) -> bool:
    """Whether every subGroupPolicy has minSubGroups whole subgroups in `statuses`."""
    return not job.subgroup_policies or policies_satisfied(
        job.subgroup_policies, job.tasks.values(), statuses
    )


def gang_ready(job: JobInfo) -> bool:
    """Whether the job has its gang placed on room it holds now: minMember members ready,
    every role its minTaskMember, and every subGroupPolicy its minSubGroups."""
    if job.ready_count() < job.min_member:
        return False
    if job.min_task_member and not roles_satisfied(job, ready_by_role(job)):
        return False
    return subgroups_satisfied(job, READY_STATUSES)


def gang_placed(job: JobInfo) -> bool:
    """Whether the job has its gang placed counting promised room too: minMember members
    ready or pipelined, every role its minTaskMember and every subGroupPolicy its
    minSubGroups (Volcano's CheckTaskPipelined and CheckSubJobPipelined)."""
    if members_placed(job) < job.min_member:
        return False
    if job.min_task_member and not roles_satisfied(job, placed_by_role(job)):
        return False
    return subgroups_satisfied(job, PLACED_STATUSES)


def gang_shortfall(job: JobInfo) -> str:
    """What of the gang is not placed, counting promised room too: each policy's
    minSubGroups, minMember, each task's minTaskMember; "" when nothing is short."""
    short = []
    if job.subgroup_policies:
        groups, _ = split(job.subgroup_policies, job.tasks.values())
        for policy in job.subgroup_policies:
            whole = whole_count(policy, groups, PLACED_STATUSES)
            if whole < policy.min_subgroups:
                short.append(
                    f"{whole} of the {policy.min_subgroups} subgroups of {policy.size} pods "
                    f"subGroupPolicy {policy.label} needs (minSubGroups) are placed whole"
                )
    placed = members_placed(job)
    if placed < job.min_member:
        short.append(f"{placed} of the {job.min_member} pods the gang needs (minMember) are placed")
    counts = placed_by_role(job) if job.min_task_member else {}
    for role, need in sorted(job.min_task_member.items()):
        if counts.get(role, 0) < need:
            short.append(
                f"{counts.get(role, 0)} of the {need} pods task {role!r} needs "
                f"(minTaskMember) are placed"
            )
    return "; ".join(short)


def short_of_min_member(job: JobInfo) -> bool:
    """Whether fewer than minMember members are placed or promised room (a starving gang)."""
    return members_placed(job) < job.min_member


# Members that were bound: holding room under a bind, or finished there.
WERE_BOUND_STATUSES = (*BOUND_STATUSES, TaskStatus.SUCCEEDED)


def partly_bound(job: JobInfo) -> bool:
    """Whether the gang is partly bound: at least one member was bound (Binding, Bound,
    Running, or Succeeded since) and the gang has not been ready (gang_ready, Succeeded
    members counting) since it was last Pending. Binding is N separate calls: a leader
    stopped between the first and the last, or a bind refused for good, leaves such a gang,
    which allocate completes before any other or, past its time, undoes (evicts the members
    that hold room; those that finished are done).

    A gang that ran whole and then lost a member, or whose minMember was raised in place,
    is not partly bound: its PodGroup was written Running (HAS_BEEN_READY_PHASES), and it
    keeps the rules of a running gang."""
    if job.observed_phase in HAS_BEEN_READY_PHASES:
        return False
    return job.count(*WERE_BOUND_STATUSES) > 0 and not gang_ready(job)


def holds_room(job: JobInfo) -> int:
    """How many members hold room under a bind (what an undo evicts, or waits for)."""
    return job.count(*BOUND_STATUSES)


def partly_bound_since(job: JobInfo) -> float | None:
    """Since when a partly bound gang is so (epoch seconds): when its first member was
    bound (its PodScheduled condition, which the binding sets), as the API server holds it;
    None when no such member says."""
    earliest: float | None = None
    for task in job.tasks_in(*WERE_BOUND_STATUSES):
        when = parse_rfc3339(task.bound_at)
        if when is not None and (earliest is None or when < earliest):
            earliest = when
    return earliest


def started_short(job: JobInfo) -> bool:
    """Whether some members are placed (bound, running or done) but fewer than minMember.
    The partly bound ones among such gangs are completed first or undone (partly_bound);
    the others (a gang that ran whole and lost a member, or had its minMember raised in
    place) are served before any queue order."""
    ready = job.ready_count()
    return 0 < ready < job.min_member


def subgroup_spares(job: JobInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
    """Of `candidates` (members of the job), those that may be evicted without breaking a
    whole subgroup below its subGroupSize: of each whole subgroup, at most the members it
    has beyond its size (in the candidates' order); members of other subgroups and of the
    default group stay candidates (minMember is the eviction units' own rule)."""
    if not job.subgroup_policies:
        return candidates
    groups, _ = split(job.subgroup_policies, job.tasks.values())
    extra: dict[SubGroupKey, int] = {}
    group_of: dict[str, SubGroupKey] = {}
    for group in groups:
        if group.whole(READY_STATUSES):
            extra[group.key] = group.placed(READY_STATUSES) - group.policy.size
            for member in group.members:
                group_of[member.uid] = group.key
    spares = []
    for task in candidates:
        key = group_of.get(task.uid)
        if key is not None:
            if extra[key] <= 0:
                continue
            extra[key] -= 1
        spares.append(task)
    return spares
