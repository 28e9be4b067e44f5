"""What a session's end means for statuses: PodGroup phases and the status to write (their
conditions: framework/podgroup_conditions.py), pod messages, queue figures, HyperNodes'
node counts, and the warnings about objects (framework/object_warnings.py) gathered into
the session's result. Pure functions of the session's jobs and queues."""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.api.gang_state import STARTED_PHASES, has_started, runs_as_gang
from scheduler.api.job import JobInfo
from scheduler.api.native import PODGROUP_RESOURCE, describe_group
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.reasons import (
    EVICTION_REFUSED,
    GATED_MESSAGE,
    POD_GATED,
    POD_UNSCHEDULABLE,
    gang_unschedulable,
)
from scheduler.api.resources import Resource
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskStatus
from scheduler.api.topology import member_counts
from scheduler.framework.decisions import (
    GroupCondition,
    HyperNodeStatusUpdate,
    NativeStatusUpdate,
    PodGroupStatusUpdate,
    PodUnschedulable,
    QueueFigures,
    QueueStatusUpdate,
    SessionResult,
)
from scheduler.framework.object_warnings import (
    annotation_warnings,
    field_warnings,
    invalid_reports,
    queue_warnings,
)
from scheduler.framework.podgroup_conditions import (
    conditions_after,
    native_conditions_removed,
    partly_bound_events,
    same_conditions,
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
        and same_conditions(job, conditions)
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
    removed = native_conditions_removed(job, conditions)
    if removed is None:
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
