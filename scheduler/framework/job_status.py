"""What a session's end means for statuses: PodGroup phases and conditions, pod messages,
queue figures. Pure functions of the session's jobs and queues."""

from __future__ import annotations

from scheduler.api import wire
from scheduler.api.job import (
    ADMITTED,
    INQUEUE_TIMEOUT_REASON,
    NOT_HONOURED,
    JobInfo,
    PodGroupPhase,
)
from scheduler.api.queue import QUEUE_NOT_HONOURED
from scheduler.api.resources import Resource
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskStatus
from scheduler.api.timestamps import format_rfc3339
from scheduler.framework.decisions import (
    GroupCondition,
    InvalidObjectReport,
    PodGroupStatusUpdate,
    PodUnschedulable,
    QueueStatusUpdate,
    SessionResult,
)
from scheduler.framework.session import INVALID_REASON

# Condition types Volcano writes on PodGroups.
UNSCHEDULABLE = "Unschedulable"
SCHEDULED = "Scheduled"
# Reasons (CamelCase, as Kubernetes conditions spell them).
NOT_ENOUGH_RESOURCES = "NotEnoughResources"
NOT_ENOUGH_TASKS = "NotEnoughTasks"
INVALID = INVALID_REASON
GANG_READY = "GangReady"
# The Admitted condition (muster's): True while the PodGroup is admitted, since when;
# False with InqueueTimeout when it was sent back for not starting in time.
ENQUEUED = "Enqueued"
# Says which spec fields are accepted but not honoured yet, and what muster does instead.
NOT_HONOURED_TYPE = "FieldsNotHonoured"
NOT_HONOURED_REASON = "NotHonouredYet"
INQUEUE_TIMEOUT = INQUEUE_TIMEOUT_REASON
# kube-scheduler's pod condition reasons and the gated message.
POD_UNSCHEDULABLE = "Unschedulable"
POD_GATED = "SchedulingGated"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def phase_after(job: JobInfo) -> PodGroupPhase:
    """The PodGroup phase the session's placements imply."""
    total = len(job.tasks)
    done = job.count(TaskStatus.SUCCEEDED, TaskStatus.FAILED)
    if total and done == total:
        return PodGroupPhase.COMPLETED
    if not total and job.observed_phase is PodGroupPhase.COMPLETED:
        # A finished job whose pods were cleaned up stays finished.
        return PodGroupPhase.COMPLETED
    ready = job.ready_count()
    if ready and ready >= job.min_member:
        return PodGroupPhase.RUNNING
    if ready and job.observed_phase in (PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN):
        # Some members run but fewer than minMember: the gang is broken.
        return PodGroupPhase.UNKNOWN
    if job.phase in (PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN, PodGroupPhase.COMPLETED):
        # Its pods are gone (a suspended RayJob): it waits to be admitted again.
        return PodGroupPhase.PENDING
    return job.phase


def conditions_after(
    job: JobInfo, phase: PodGroupPhase, now: float = 0.0
) -> tuple[GroupCondition, ...]:
    """The Scheduled / Unschedulable conditions (and Admitted) the job should carry after
    the session; a condition keeps its lastTransitionTime while its status stays."""
    previous = {c.type: c for c in job.conditions}
    stamp = format_rfc3339(now)
    found = [
        *_gang_conditions(job, phase, previous),
        *_admitted(job, phase, previous),
        *_not_honoured(job),
    ]
    return tuple(_stamped(c, previous.get(c.type), stamp) for c in found)


def _gang_conditions(
    job: JobInfo, phase: PodGroupPhase, previous: dict[str, wire.Condition]
) -> list[GroupCondition]:
    ready = job.ready_count()
    if phase in (PodGroupPhase.RUNNING, PodGroupPhase.COMPLETED):
        scheduled = GroupCondition(
            SCHEDULED,
            "True",
            GANG_READY,
            f"{ready}/{len(job.tasks)} tasks in gang placed, minMember {job.min_member}",
        )
        unschedulable = (
            GroupCondition(UNSCHEDULABLE, "False", GANG_READY, "")
            if UNSCHEDULABLE in previous
            else None
        )
        return [c for c in (scheduled, unschedulable) if c is not None]
    if job.wait_reason:
        waiting = len(job.tasks) - ready
        message = f"{waiting}/{len(job.tasks)} tasks in gang unschedulable: {job.wait_message}"
        return [GroupCondition(UNSCHEDULABLE, "True", job.wait_reason, message)]
    # Nothing new was learnt this session: keep what the object says.
    return [_kept(c) for c in job.conditions if c.type not in (ADMITTED, NOT_HONOURED_TYPE)]


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


def _same_conditions(job: JobInfo, conditions: tuple[GroupCondition, ...]) -> bool:
    return tuple(_kept(c) for c in job.conditions) == conditions


def podgroup_update(job: JobInfo, now: float = 0.0) -> PodGroupStatusUpdate | None:
    """The PodGroup status to write, or None when the server already holds it."""
    phase = phase_after(job)
    conditions = conditions_after(job, phase, now)
    running = job.count(TaskStatus.RUNNING)
    succeeded = job.count(TaskStatus.SUCCEEDED)
    failed = job.count(TaskStatus.FAILED)
    unchanged = (
        phase is job.observed_phase
        and (running, succeeded, failed) == (job.running, job.succeeded, job.failed)
        and _same_conditions(job, conditions)
    )
    if unchanged:
        return None
    return PodGroupStatusUpdate(
        job.namespace, job.name, phase, conditions, running, succeeded, failed, job.uid
    )


def pod_messages(job: JobInfo) -> list[PodUnschedulable]:
    """PodScheduled=False messages for the job's members that stay pending."""
    pending = list(job.tasks_in(TaskStatus.PENDING))
    if not pending:
        return []
    messages = []
    gang_message = ""
    if job.wait_reason:
        waiting = len(job.tasks) - job.ready_count()
        gang_message = f"{waiting}/{len(job.tasks)} tasks in gang unschedulable: {job.wait_message}"
    for task in pending:
        if task.gated:
            messages.append(
                PodUnschedulable(
                    task.namespace, task.name, task.uid, job.key, POD_GATED, GATED_MESSAGE
                )
            )
            continue
        message = job.fit_errors.get(task.uid) or gang_message
        if message:
            messages.append(
                PodUnschedulable(
                    task.namespace, task.name, task.uid, job.key, POD_UNSCHEDULABLE, message
                )
            )
    return messages


def queue_updates(
    snapshot: ClusterSnapshot,
    phases: dict[str, PodGroupPhase],
    deserved: dict[str, Resource],
    request: dict[str, Resource],
) -> list[QueueStatusUpdate]:
    """Each queue's allocated resources and podgroup counts per phase after the session."""
    allocated: dict[str, Resource] = {name: Resource() for name in snapshot.queues}
    counts: dict[str, dict[str, int]] = {
        name: {phase.value.lower(): 0 for phase in PodGroupPhase} for name in snapshot.queues
    }
    for job in snapshot.jobs.values():
        if job.queue not in allocated:
            continue
        allocated[job.queue].add(job.allocated)
        phase = phases.get(job.key, job.phase)
        counts[job.queue][phase.value.lower()] += 1
    return [
        QueueStatusUpdate(
            name,
            queue.state.value,
            allocated[name],
            deserved.get(name),
            counts[name],
            request.get(name),
            queue.capability,
            queue.observed_allocated,
        )
        for name, queue in snapshot.queues.items()
    ]


def close_result(
    snapshot: ClusterSnapshot,
    result: SessionResult,
    deserved: dict[str, Resource],
    request: dict[str, Resource],
) -> SessionResult:
    """Fill the status parts of a session's result from its final state."""
    phases: dict[str, PodGroupPhase] = {}
    for job in snapshot.jobs.values():
        update = podgroup_update(job, snapshot.now)
        phases[job.key] = phase_after(job)
        if update is not None and not job.shadow:
            result.podgroups.append(update)
        result.unschedulable.extend(pod_messages(job))
    for orphan in snapshot.orphans.values():
        result.unschedulable.append(
            PodUnschedulable(
                orphan.namespace,
                orphan.name,
                orphan.uid,
                orphan.job,
                POD_UNSCHEDULABLE,
                f"waiting for PodGroup {orphan.job}, which does not exist",
            )
        )
    result.queues.extend(queue_updates(snapshot, phases, deserved, request))
    result.invalid.extend(
        InvalidObjectReport(error.kind, error.name, str(error)) for error in snapshot.invalid
    )
    result.invalid.extend(queue_warnings(snapshot))
    return result


def queue_warnings(snapshot: ClusterSnapshot) -> list[InvalidObjectReport]:
    """A warning per Queue field that is set but not honoured, naming what muster does."""
    return [
        InvalidObjectReport(
            "Queue",
            name,
            f"{field} is not honoured: {QUEUE_NOT_HONOURED[field]}",
            NOT_HONOURED_REASON,
        )
        for name, queue in snapshot.queues.items()
        for field in queue.unhonoured
    ]
