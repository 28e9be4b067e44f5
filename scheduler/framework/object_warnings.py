"""The Warning events a session's end raises about objects muster cannot use or does not
fully honour: an invalid object (InvalidObject, or FieldNotHonoured on a native PodGroup),
a bound pod's fields not honoured, unreadable Volcano labels and annotations, a pod naming
two PodGroups, a Queue's fields not honoured. Pure functions of the session's snapshot."""

from __future__ import annotations

from scheduler.api.errors import FieldRefused
from scheduler.api.native import NATIVE_KIND, PODGROUP_RESOURCE, native_key
from scheduler.api.queue import QUEUE_NOT_HONOURED
from scheduler.api.reasons import (
    FIELD_NOT_HONOURED,
    INVALID_ANNOTATION,
    INVALID_OBJECT,
    NOT_HONOURED_REASON,
    SCHEDULING_GROUP_IGNORED,
)
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.framework.decisions import (
    FieldNotHonoured,
    InvalidObjectReport,
    NativeObjectReport,
    SessionResult,
)


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
