"""What a session's end means for statuses: PodGroup phases and conditions, pod messages,
queue figures. Pure functions of the session's jobs and queues."""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.api import wire
from scheduler.api.errors import FieldRefused
from scheduler.api.gang_state import (
    HAS_BEEN_READY_PHASES,
    PLACED_STATUSES,
    STARTED_PHASES,
    WERE_BOUND_STATUSES,
    gang_placed,
    gang_ready,
    has_started,
    runs_as_gang,
)
from scheduler.api.job import JobInfo
from scheduler.api.native import (
    DISRUPTION_TARGET,
    NATIVE_KIND,
    PODGROUP_RESOURCE,
    SCHEDULED_CONDITION,
    V1BETA1,
    describe_group,
    native_key,
)
from scheduler.api.podgroup import NOT_HONOURED, PodGroupPhase
from scheduler.api.queue import QUEUE_NOT_HONOURED
from scheduler.api.reasons import (
    ADMITTED,
    ENQUEUED,
    EVICTION_REFUSED,
    FIELD_NOT_HONOURED,
    GANG_READY,
    GATED_MESSAGE,
    INQUEUE_TIMEOUT,
    INVALID_ANNOTATION,
    INVALID_OBJECT,
    INVALID_PODGROUP,
    NATIVE_UNSCHEDULABLE,
    PARTLY_BOUND,
    PARTLY_BOUND_COMPLETED,
    PARTLY_BOUND_UNDONE,
    POD_GATED,
    POD_UNSCHEDULABLE,
    PREEMPTION_BY_SCHEDULER,
    SCALE_UP,
    SCHEDULER_ERROR,
    SCHEDULING_GROUP_IGNORED,
    STARVING,
    gang_unschedulable,
)

# Re-exported for the status writer and scheduler/inspect, which read them from here.
from scheduler.api.reasons import NOT_HONOURED_REASON as NOT_HONOURED_REASON
from scheduler.api.reasons import NOT_HONOURED_TYPE as NOT_HONOURED_TYPE
from scheduler.api.reasons import SCHEDULED as SCHEDULED
from scheduler.api.reasons import UNSCHEDULABLE as UNSCHEDULABLE
from scheduler.api.resources import Resource
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.subgroups import summary
from scheduler.api.task import TaskStatus
from scheduler.api.timestamps import format_rfc3339
from scheduler.api.topology import member_counts
from scheduler.framework.decisions import (
    FieldNotHonoured,
    GroupCondition,
    HyperNodeStatusUpdate,
    InvalidObjectReport,
    NativeObjectReport,
    NativeStatusUpdate,
    PodGroupEvent,
    PodGroupStatusUpdate,
    PodUnschedulable,
    QueueFigures,
    QueueStatusUpdate,
    SessionResult,
)


def phase_after(job: JobInfo) -> PodGroupPhase:
    """The PodGroup phase the session's placements imply."""
    total = len(job.tasks)
    done = job.count(TaskStatus.SUCCEEDED, TaskStatus.FAILED)
    if total and done == total:
        return PodGroupPhase.COMPLETED
    if not total and job.observed_phase is PodGroupPhase.COMPLETED:
        # A finished job whose pods were cleaned up stays finished.
        return PodGroupPhase.COMPLETED
    if runs_as_gang(job):
        return PodGroupPhase.RUNNING
    if has_started(job) and job.observed_phase in STARTED_PHASES:
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


def _same_conditions(job: JobInfo, conditions: tuple[GroupCondition, ...]) -> bool:
    return tuple(_kept(c) for c in job.conditions) == conditions


def podgroup_update(
    job: JobInfo, now: float = 0.0, phase: PodGroupPhase | None = None
) -> PodGroupStatusUpdate | None:
    """The PodGroup status to write, or None when the server already holds it (`phase`:
    phase_after(job), when the caller has it)."""
    if phase is None:
        phase = phase_after(job)
    conditions = conditions_after(job, phase, now)
    if job.native:
        return _native_update(job, phase, conditions)
    running = job.count(TaskStatus.RUNNING)
    succeeded = job.count(TaskStatus.SUCCEEDED)
    failed = job.count(TaskStatus.FAILED)
    # The HyperNode its members were placed in (network-topology-aware), written once it
    # differs from the annotation; never removed, as in Volcano.
    hypernode = job.placed_hypernode
    moved = bool(hypernode) and hypernode != job.allocated_hypernode
    unchanged = (
        phase is job.observed_phase
        and (running, succeeded, failed) == (job.running, job.succeeded, job.failed)
        and _same_conditions(job, conditions)
        and not moved
    )
    if unchanged:
        return None
    return PodGroupStatusUpdate(
        job.namespace,
        job.name,
        phase,
        conditions,
        running,
        succeeded,
        failed,
        job.uid,
        hypernode if moved else "",
    )


def _native_update(
    job: JobInfo, phase: PodGroupPhase, conditions: tuple[GroupCondition, ...]
) -> PodGroupStatusUpdate | None:
    """A native PodGroup's conditions to write (it has no phase or counts), or None when the
    server holds them: muster's own conditions compared by type, those it no longer wants
    to be deleted."""
    owned = _NATIVE_OWNED | {scheduled_condition(job)}
    held = {c.type: _kept(c) for c in job.conditions if c.type in owned}
    wanted = {c.type: c for c in conditions}
    removed = tuple(sorted(set(held) - set(wanted)))
    if held == wanted:
        return None
    return NativeStatusUpdate(
        job.namespace,
        job.name,
        phase,
        conditions,
        job.count(TaskStatus.RUNNING),
        job.count(TaskStatus.SUCCEEDED),
        job.count(TaskStatus.FAILED),
        job.uid,
        version=job.native_version,
        removed=removed,
    )


def describe(job: JobInfo) -> str:
    """How messages name a job's PodGroup: "PodGroup ns/name" (Volcano's) or
    "podgroups.scheduling.k8s.io ns/name" (a native one)."""
    if job.native:
        return f"{PODGROUP_RESOURCE} {job.namespace}/{job.name}"
    return f"PodGroup {job.key}"


def pod_messages(job: JobInfo) -> list[PodUnschedulable]:
    """PodScheduled=False messages for the job's members that stay pending."""
    pending = list(job.tasks_in(TaskStatus.PENDING))
    if not pending:
        return []
    messages = []
    gang_message = ""
    if job.wait_reason:
        gang_message = gang_unschedulable(len(job.tasks), job.ready_count(), job.wait_message)
    for task in pending:
        refusal = task.refusal
        if refusal:
            messages.append(
                PodUnschedulable(
                    task.namespace, task.name, task.uid, job.key, POD_UNSCHEDULABLE, refusal
                )
            )
            continue
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
    figures: Mapping[str, QueueFigures],
) -> list[QueueStatusUpdate]:
    """Each queue's allocated resources and podgroup counts per phase after the session."""
    allocated: dict[str, Resource] = {name: Resource() for name in snapshot.queues}
    counts: dict[str, dict[str, int]] = {
        name: {phase.value.lower(): 0 for phase in PodGroupPhase} for name in snapshot.queues
    }
    settled = snapshot.settled
    for job in snapshot.jobs.values():
        if job.queue not in allocated or job.key in settled:
            continue
        allocated[job.queue].add(job.allocated)
        phase = phases.get(job.key, job.phase)
        counts[job.queue][phase.value.lower()] += 1
    # The settled jobs, summed per queue by the cache (framework/settled.py).
    for queue_name, total in snapshot.settled_totals.items():
        if queue_name not in allocated:
            continue
        allocated[queue_name].add(total.allocated)
        for phase_name, count in total.phases.items():
            counts[queue_name][phase_name] += count
    updates = []
    for name, queue in snapshot.queues.items():
        reported = figures.get(name)
        updates.append(
            QueueStatusUpdate(
                name,
                queue.state.value,
                allocated[name],
                reported.deserved if reported is not None else None,
                counts[name],
                reported.request if reported is not None else None,
                queue.capability,
                queue.observed_allocated,
            )
        )
    return updates


def close_result(
    snapshot: ClusterSnapshot, result: SessionResult, figures: Mapping[str, QueueFigures]
) -> SessionResult:
    """Fill the status parts of a session's result from its final state."""
    _say_eviction_refusals(snapshot)
    for eviction in result.evictions:
        victim = snapshot.jobs.get(eviction.job)
        if victim is not None and victim.native:
            victim.disrupted = eviction.preemptor
    phases: dict[str, PodGroupPhase] = {}
    settled = snapshot.settled
    for job in snapshot.jobs.values():
        if job.key in settled:
            continue  # reported when settled; nothing of it changed since
        result.pending += job.count(TaskStatus.PENDING)
        phase = phases[job.key] = phase_after(job)
        update = podgroup_update(job, snapshot.now, phase)
        if update is not None and not job.shadow:
            result.podgroups.append(update)
            result.events.extend(partly_bound_events(job, update))
        result.unschedulable.extend(pod_messages(job))
    result.pending += len(snapshot.orphans)
    result.pending += sum(total.pending for total in snapshot.settled_totals.values())
    for orphan in snapshot.orphans.values():
        result.unschedulable.append(
            PodUnschedulable(
                orphan.namespace,
                orphan.name,
                orphan.uid,
                orphan.job,
                POD_UNSCHEDULABLE,
                f"waiting for {describe_group(orphan.job)}, which does not exist",
            )
        )
    result.field_warnings.extend(field_warnings(snapshot, result))
    result.hypernodes.extend(hypernode_updates(snapshot))
    result.queues.extend(queue_updates(snapshot, phases, figures))
    result.invalid.extend(invalid_reports(snapshot))
    result.invalid.extend(queue_warnings(snapshot))
    result.invalid.extend(annotation_warnings(snapshot))
    return result


def invalid_reports(snapshot: ClusterSnapshot) -> list[InvalidObjectReport]:
    """A Warning event per object muster cannot use: InvalidObject, or FieldNotHonoured for
    a native PodGroup whose field muster refuses (api/native.py), at its version."""
    reports = []
    for error in snapshot.invalid:
        if error.kind != NATIVE_KIND:
            reports.append(InvalidObjectReport(error.kind, error.name, str(error)))
            continue
        namespace, _, name = error.name.partition("/")
        job = snapshot.jobs.get(native_key(namespace, name))
        reports.append(
            NativeObjectReport(
                error.kind,
                error.name,
                str(error),
                FIELD_NOT_HONOURED if isinstance(error, FieldRefused) else INVALID_OBJECT,
                job.native_version if job is not None else "",
            )
        )
    return reports


def _say_eviction_refusals(snapshot: ClusterSnapshot) -> None:
    """A gang still waiting whose evictions the Eviction API refused lately says so."""
    for key, why in snapshot.eviction_refusals.items():
        job = snapshot.jobs.get(key)
        if job is None or key in snapshot.settled or not job.pending_tasks():
            continue
        if job.wait_reason:
            job.wait_message += f" (the last evictions made for it were not sent: {why})"
        else:
            # Not tried this session (it backs off): the refusal is why it waits.
            job.wait(EVICTION_REFUSED, f"the evictions made for it were not sent: {why}")


def field_warnings(snapshot: ClusterSnapshot, result: SessionResult) -> list[FieldNotHonoured]:
    """A warning per pod this session binds whose spec muster does not fully honour: a bind
    happens once per pod, so the warning does too (never once per cycle)."""
    warnings = []
    for bind in result.binds:
        job = snapshot.jobs.get(bind.job)
        task = job.tasks.get(bind.uid) if job is not None else None
        if task is None or task.unhonoured is None or not task.unhonoured.warnings:
            continue
        message = "; ".join(task.unhonoured.warnings)
        warnings.append(FieldNotHonoured(bind.namespace, bind.name, bind.uid, message))
    return warnings


def annotation_warnings(snapshot: ClusterSnapshot) -> list[InvalidObjectReport]:
    """A warning per PodGroup or pod of ours whose Volcano labels or annotations cannot be
    read (api/annotations.py), naming the value and what muster does instead; and per pod
    that names a Volcano PodGroup and a native one, naming both and the one it joins."""
    reports: list[InvalidObjectReport] = []
    for job in snapshot.jobs.values():
        if job.key in snapshot.settled:
            continue  # reported when settled, and said once per process
        if job.native:
            reports.extend(
                NativeObjectReport(
                    NATIVE_KIND,
                    f"{job.namespace}/{job.name}",
                    problem,
                    INVALID_ANNOTATION,
                    job.native_version,
                )
                for problem in job.settings.problems
            )
        else:
            reports.extend(
                InvalidObjectReport("PodGroup", job.key, problem, INVALID_ANNOTATION)
                for problem in job.settings.problems
            )
        for task in job.tasks.values():
            reports.extend(
                InvalidObjectReport("Pod", task.key, problem, INVALID_ANNOTATION)
                for problem in task.protection.problems
            )
            if task.ignored_group:
                reports.append(
                    InvalidObjectReport(
                        "Pod",
                        task.key,
                        group_ignored(task.key, job.name, task.ignored_group),
                        SCHEDULING_GROUP_IGNORED,
                    )
                )
    return reports


def group_ignored(pod: str, annotated: str, native: str) -> str:
    """What the Warning event on a pod that names two PodGroups says."""
    return (
        f"pod {pod} names PodGroup {annotated} (annotation scheduling.k8s.io/group-name) and "
        f"{PODGROUP_RESOURCE} {native} (spec.schedulingGroup.podGroupName); muster schedules "
        f"it with PodGroup {annotated}: the annotation wins"
    )


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


def hypernode_updates(snapshot: ClusterSnapshot) -> list[HyperNodeStatusUpdate]:
    """Each HyperNode whose status.nodeCount differs from its count (Volcano's
    controller's rule, api/topology.member_counts): `kubectl get hypernodes` shows it
    without Volcano's controller, and both write the same number."""
    if not snapshot.hypernodes:
        return []
    counts = member_counts(snapshot.hypernodes, snapshot.nodes)
    return [
        HyperNodeStatusUpdate(name, count)
        for name, count in sorted(counts.items())
        if snapshot.hypernode_counts.get(name) != count
    ]
