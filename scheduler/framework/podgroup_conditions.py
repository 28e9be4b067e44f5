"""A PodGroup's conditions after a session: Scheduled / Unschedulable (a native PodGroup's
version's scheduled condition and DisruptionTarget), Admitted, NotHonoured, Starving,
ScaleUp and PartlyBound, each keeping its lastTransitionTime while its status stays; and
the events a PartlyBound change is said with. Pure functions of the session's jobs."""

from __future__ import annotations

from scheduler.api import wire
from scheduler.api.gang_state import (
    HAS_BEEN_READY_PHASES,
    PLACED_STATUSES,
    WERE_BOUND_STATUSES,
    gang_placed,
    gang_ready,
)
from scheduler.api.job import JobInfo
from scheduler.api.native import (
    DISRUPTION_TARGET,
    SCHEDULED_CONDITION,
    V1BETA1,
    describe_group,
)
from scheduler.api.podgroup import NOT_HONOURED, PodGroupPhase
from scheduler.api.reasons import (
    ADMITTED,
    ENQUEUED,
    GANG_READY,
    INQUEUE_TIMEOUT,
    INVALID_PODGROUP,
    NATIVE_UNSCHEDULABLE,
    NOT_HONOURED_REASON,
    NOT_HONOURED_TYPE,
    PARTLY_BOUND,
    PARTLY_BOUND_COMPLETED,
    PARTLY_BOUND_UNDONE,
    PREEMPTION_BY_SCHEDULER,
    SCALE_UP,
    SCHEDULED,
    SCHEDULER_ERROR,
    STARVING,
    UNSCHEDULABLE,
    gang_unschedulable,
)
from scheduler.api.subgroups import summary
from scheduler.api.task import TaskStatus
from scheduler.api.timestamps import format_rfc3339
from scheduler.framework.decisions import GroupCondition, PodGroupEvent, PodGroupStatusUpdate


def conditions_after(
    job: JobInfo, phase: PodGroupPhase, now: float = 0.0
) -> tuple[GroupCondition, ...]:
    """The Scheduled / Unschedulable conditions (and Admitted) the job should carry after
    the session; a condition keeps its lastTransitionTime while its status stays."""
    previous = {c.type: c for c in job.conditions}
    stamp = format_rfc3339(now)
    gang = (
        [*_native_scheduled(job, phase, previous), *_disruption(job, phase, previous)]
        if job.native
        else _gang_conditions(job, phase, previous)
    )
    found = [
        *gang,
        *_admitted(job, phase, previous),
        *_not_honoured(job),
        *_starving(job),
        *_scale_up(job),
        *_partly_bound(job, previous),
    ]
    return tuple(_stamped(c, previous.get(c.type), stamp) for c in found)


def scheduled_condition(job: JobInfo) -> str:
    """The scheduled condition type kube-scheduler writes on a native PodGroup of the job's
    version (PodGroupScheduled, PodGroupInitiallyScheduled)."""
    return SCHEDULED_CONDITION.get(job.native_version, SCHEDULED_CONDITION[V1BETA1])


def _native_scheduled(
    job: JobInfo, phase: PodGroupPhase, previous: dict[str, wire.Condition]
) -> list[GroupCondition]:
    """A native PodGroup's scheduled condition, as kube-scheduler writes it: True (reason
    Scheduled) once the gang is placed, never set back; while it waits, False with reason
    Unschedulable (SchedulerError for a spec that cannot be used) and muster's words."""
    kind = scheduled_condition(job)
    kept = previous.get(kind)
    if kept is not None and kept.status == "True":
        return [_kept(kept)]
    if phase in (PodGroupPhase.RUNNING, PodGroupPhase.COMPLETED):
        message = (
            f"{job.ready_count()}/{len(job.tasks)} tasks in gang placed, minMember {job.min_member}"
        )
        return [GroupCondition(kind, "True", SCHEDULED, message)]
    if job.wait_reason:
        reason = SCHEDULER_ERROR if job.wait_reason == INVALID_PODGROUP else NATIVE_UNSCHEDULABLE
        message = gang_unschedulable(len(job.tasks), job.ready_count(), job.wait_message)
        return [GroupCondition(kind, "False", reason, message)]
    # Nothing new was learnt this session: keep what the object says.
    return [_kept(kept)] if kept is not None else []


def _disruption(
    job: JobInfo, phase: PodGroupPhase, previous: dict[str, wire.Condition]
) -> list[GroupCondition]:
    """A native PodGroup's DisruptionTarget: True (PreemptionByScheduler) from the session
    that evicts its pods until the gang runs whole again."""
    if job.disrupted:
        message = f"muster: preempting to accommodate {describe_group(job.disrupted)}"
        return [GroupCondition(DISRUPTION_TARGET, "True", PREEMPTION_BY_SCHEDULER, message)]
    kept = previous.get(DISRUPTION_TARGET)
    if kept is None or kept.reason != PREEMPTION_BY_SCHEDULER:
        return []
    if phase is PodGroupPhase.RUNNING and not job.count(TaskStatus.RELEASING):
        return []
    return [_kept(kept)]


# The condition types muster writes on a native PodGroup, besides the version's scheduled
# one: those absent from a session's set are deleted from the object (its strategic merge
# patch keeps what it does not name), others' conditions are left alone.
_NATIVE_OWNED = frozenset({ADMITTED, NOT_HONOURED_TYPE, STARVING, SCALE_UP, DISRUPTION_TARGET})


def _gang_conditions(
    job: JobInfo, phase: PodGroupPhase, previous: dict[str, wire.Condition]
) -> list[GroupCondition]:
    ready = job.ready_count()
    subgroups = (
        f"; {summary(job.subgroup_policies, job.tasks.values(), PLACED_STATUSES)}"
        if job.subgroup_policies
        else ""
    )
    if phase in (PodGroupPhase.RUNNING, PodGroupPhase.COMPLETED):
        scheduled = GroupCondition(
            SCHEDULED,
            "True",
            GANG_READY,
            f"{ready}/{len(job.tasks)} tasks in gang placed, minMember {job.min_member}"
            + subgroups,
        )
        unschedulable = (
            GroupCondition(UNSCHEDULABLE, "False", GANG_READY, "")
            if UNSCHEDULABLE in previous
            else None
        )
        return [c for c in (scheduled, unschedulable) if c is not None]
    if job.wait_reason:
        message = gang_unschedulable(len(job.tasks), ready, job.wait_message) + subgroups
        return [GroupCondition(UNSCHEDULABLE, "True", job.wait_reason, message)]
    # Nothing new was learnt this session: keep what the object says.
    return [_kept(c) for c in job.conditions if c.type not in _DECIDED_EACH_SESSION]


# Conditions every session decides afresh, rather than keeping what the object says.
_DECIDED_EACH_SESSION = frozenset({ADMITTED, NOT_HONOURED_TYPE, STARVING, SCALE_UP, PARTLY_BOUND})
# The type of event each PartlyBound reason is said with: a partly bound gang completed or
# undone is news; one held for, or being undone, is a warning.
_PARTLY_BOUND_EVENTS = {PARTLY_BOUND_COMPLETED: "Normal", PARTLY_BOUND_UNDONE: "Normal"}
# The PartlyBound reasons that end it: its condition turns False.
_PARTLY_BOUND_OVER = frozenset({PARTLY_BOUND_COMPLETED, PARTLY_BOUND_UNDONE})


def _partly_bound(job: JobInfo, previous: dict[str, wire.Condition]) -> list[GroupCondition]:
    """The PartlyBound condition: what allocate did this session about a partly bound gang;
    or, once it is no longer partly bound, how that ended; else as the object says."""
    verdict = job.completion
    if verdict is not None:
        status = "False" if verdict.reason in _PARTLY_BOUND_OVER else "True"
        return [GroupCondition(PARTLY_BOUND, status, verdict.reason, verdict.message)]
    kept = previous.get(PARTLY_BOUND)
    if kept is None:
        return []
    if kept.status != "True":
        return [_kept(kept)]
    if gang_ready(job) or job.observed_phase in HAS_BEEN_READY_PHASES:
        return [
            GroupCondition(
                PARTLY_BOUND,
                "False",
                PARTLY_BOUND_COMPLETED,
                "the gang is complete: every member it needs is placed",
            )
        ]
    if not job.count(*WERE_BOUND_STATUSES):
        return [
            GroupCondition(
                PARTLY_BOUND,
                "False",
                PARTLY_BOUND_UNDONE,
                "no member is bound any more (its bound members were evicted, or deleted): "
                "the gang is pending whole, and is placed whole once it fits",
            )
        ]
    return [_kept(kept)]


def partly_bound_events(job: JobInfo, update: PodGroupStatusUpdate) -> list[PodGroupEvent]:
    """An event on the PodGroup when its PartlyBound condition changes status or reason
    (the status writer records events for the other conditions)."""
    new = next((c for c in update.conditions if c.type == PARTLY_BOUND), None)
    if new is None:
        return []
    old = next((c for c in job.conditions if c.type == PARTLY_BOUND), None)
    if old is not None and (old.status, old.reason) == (new.status, new.reason):
        return []
    kind = _PARTLY_BOUND_EVENTS.get(new.reason, "Warning")
    return [PodGroupEvent(job.namespace, job.name, job.uid, kind, new.reason, new.message)]


def _starving(job: JobInfo) -> list[GroupCondition]:
    starving = job.starving
    if starving is None or gang_placed(job):
        return []  # placed in the session that found it starving: it starves no more
    # Since when it starves, not since this session: the time is part of the answer.
    since = format_rfc3339(starving.since)
    return [GroupCondition(STARVING, "True", starving.reason, starving.message, since)]


def _scale_up(job: JobInfo) -> list[GroupCondition]:
    verdict = job.scale_up
    if verdict is None:
        return []
    return [GroupCondition(SCALE_UP, verdict.status, verdict.reason, verdict.message)]


def _not_honoured(job: JobInfo) -> list[GroupCondition]:
    if not job.unhonoured:
        return []
    parts = [f"{field} is not honoured yet: {NOT_HONOURED[field]}" for field in job.unhonoured]
    return [GroupCondition(NOT_HONOURED_TYPE, "True", NOT_HONOURED_REASON, "; ".join(parts))]


def _admitted(
    job: JobInfo, phase: PodGroupPhase, previous: dict[str, wire.Condition]
) -> list[GroupCondition]:
    kept = previous.get(ADMITTED)
    if phase in (PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN):
        if kept is not None and kept.status == "True":
            return [_kept(kept)]
        if job.observed_phase is PodGroupPhase.PENDING:
            # Admitted by this session: record since when, on the object itself.
            return [
                GroupCondition(
                    ADMITTED, "True", ENQUEUED, "the queue and the cluster can hold minResources"
                )
            ]
        # Admitted before muster recorded admissions: nothing is known of when.
        return []
    if phase is PodGroupPhase.PENDING and job.wait_reason == INQUEUE_TIMEOUT:
        return [GroupCondition(ADMITTED, "False", INQUEUE_TIMEOUT, job.wait_message)]
    if kept is None or (phase is PodGroupPhase.PENDING and kept.status == "True"):
        return []
    return [_kept(kept)]


def _kept(condition: wire.Condition) -> GroupCondition:
    return GroupCondition(
        condition.type,
        condition.status,
        condition.reason,
        condition.message,
        condition.last_transition_time or "",
    )


def _stamped(
    condition: GroupCondition, previous: wire.Condition | None, stamp: str
) -> GroupCondition:
    if condition.last_transition_time:
        return condition
    if previous is not None and previous.status == condition.status:
        since = previous.last_transition_time or stamp
    else:
        since = stamp
    return GroupCondition(
        condition.type, condition.status, condition.reason, condition.message, since
    )


def same_conditions(job: JobInfo, conditions: tuple[GroupCondition, ...]) -> bool:
    """Whether the PodGroup holds exactly these conditions already."""
    return tuple(_kept(c) for c in job.conditions) == conditions


def native_conditions_removed(
    job: JobInfo, conditions: tuple[GroupCondition, ...]
) -> tuple[str, ...] | None:
    """The types of muster's own conditions a native PodGroup holds and no longer wants
    (to be deleted), or None when it holds exactly those wanted: muster's own conditions
    compared by type, others' left alone."""
    owned = _NATIVE_OWNED | {scheduled_condition(job)}
    held = {c.type: _kept(c) for c in job.conditions if c.type in owned}
    wanted = {c.type: c for c in conditions}
    if held == wanted:
        return None
    return tuple(sorted(set(held) - set(wanted)))
