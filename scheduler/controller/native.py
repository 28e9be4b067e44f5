"""The queue of a native PodGroup (podgroups.scheduling.k8s.io), from its pods' top owner.

muster controller makes no Volcano PodGroup for a pod that names a native one: the workload's
controller (Kubernetes' Job controller with WorkloadWithJob, JobSet, LeaderWorkerSet) made
that group, and the scheduler schedules it as a gang. What such a group lacks is a queue:
the Job controller copies no label or annotation onto the Workload and PodGroup it makes.
The scheduler reads a native PodGroup's queue from its own annotation or label, its
Workload's, its pods' annotation, then its namespace's (api/native.py); one step it cannot
read is the pods' top owner, which only this process walks to. So for a pending pod of ours
that names a native PodGroup and no queue, when neither the PodGroup nor its Workload names
one and the top owner (a Job, a JobSet) does, that queue is written as the PodGroup's
`scheduling.volcano.sh/queue-name` annotation: a metadata merge patch, which the API server
allows on a PodGroup whose spec is immutable.
"""

from __future__ import annotations

import logging

import msgspec

from scheduler.api.names import GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION
from scheduler.api.native import queue_named
from scheduler.controller.census import PodGroupCensus
from scheduler.controller.metrics import ControllerMetrics
from scheduler.controller.objects import ClusterObjects, Obj
from scheduler.controller.podgroups import (
    PodHead,
    Retry,
    group_pod,
    needs_podgroup,
    read_lineage,
)
from scheduler.kube.errors import StatusError, TransportError, is_retryable

log = logging.getLogger(__name__)


def native_group(pod: PodHead) -> str:
    """The native PodGroup a pod joins ("" for none): its spec.schedulingGroup, unless its
    Volcano annotation names a PodGroup, which wins (api/task.py, named_group)."""
    if pod.metadata.annotations.get(GROUP_NAME_ANNOTATION):
        return ""
    group = pod.spec.scheduling_group
    return (group.pod_group_name or "") if group is not None else ""


def needs_native_queue(pod: PodHead, scheduler_names: frozenset[str]) -> bool:
    """A live, unbound pod of ours that joins a native PodGroup and names no queue itself."""
    return (
        pod.spec.scheduler_name in scheduler_names
        and bool(native_group(pod))
        and not pod.metadata.annotations.get(QUEUE_NAME_ANNOTATION)
        and pod.metadata.deletion_timestamp is None
        and not pod.spec.node_name
        and pod.status.phase not in ("Succeeded", "Failed")
    )


def needs_work(pod: PodHead, scheduler_names: frozenset[str]) -> bool:
    """Whether the pending-pod loop has work for a pod: a Volcano PodGroup to make
    (podgroups.py), or a native PodGroup's queue to look for."""
    return needs_podgroup(pod, scheduler_names) or needs_native_queue(pod, scheduler_names)


async def tend_pod(
    objects: ClusterObjects,
    pod: Obj,
    scheduler_names: frozenset[str],
    census: PodGroupCensus | None,
    metrics: ControllerMetrics,
) -> None:
    """The pending-pod loop's work on one pod: group_pod for a pod that names no PodGroup,
    the queue of its native PodGroup for one that names a native one (a passing failure is
    podgroups.Retry, as group_pod's)."""
    head = msgspec.convert(pod, PodHead)
    if not needs_native_queue(head, scheduler_names):
        await group_pod(objects, pod, scheduler_names, census, metrics)
        return
    try:
        await queue_native_podgroup(objects, pod, head)
    except TransportError as error:
        log.warning("queueing a native PodGroup: %s; trying again", error)
        raise Retry() from error
    except StatusError as error:
        metrics.handler_errors.labels("native-podgroup-queue").inc()
        if is_retryable(error.code) or error.code == 403:
            log.warning("queueing a native PodGroup: %s; trying again", error)
            raise Retry() from error
        raise


async def queue_native_podgroup(objects: ClusterObjects, pod: Obj, head: PodHead) -> str | None:
    """Write the pod's top owner's queue on its native PodGroup when neither the PodGroup
    nor its Workload names one; the queue written, or None. Safe to run any number of
    times, from any replica: a PodGroup that names a queue is never written again."""
    namespace, name = head.metadata.namespace, native_group(head)
    group = await objects.native_podgroup(namespace, name)
    if group is None:
        return None  # not made yet (the pod waits for it), or the API is not served
    if _names_queue(group):
        return None
    workload = _workload_of(group)
    if workload:
        found = await objects.native_workload(namespace, workload)
        if found is not None and _names_queue(found):
            return None
    top = (await read_lineage(objects, pod)).top
    queue = ((top or {}).get("metadata") or {}).get("annotations", {}).get(QUEUE_NAME_ANNOTATION)
    if not queue:
        return None
    await objects.annotate_native_podgroup(namespace, name, {QUEUE_NAME_ANNOTATION: str(queue)})
    log.info(
        "native PodGroup takes its pods' top owner's queue %s",
        queue,
        extra={"podgroup": f"{namespace}/{name}", "pod": head.metadata.name},
    )
    return str(queue)


def _names_queue(obj: Obj) -> bool:
    meta = obj.get("metadata") or {}
    return bool(queue_named(meta.get("labels") or {}, meta.get("annotations") or {}))


def _workload_of(group: Obj) -> str:
    """The Workload a native PodGroup was made from, in either version's field."""
    spec = group.get("spec") or {}
    reference = spec.get("workloadRef") or (spec.get("podGroupTemplateRef") or {}).get("workload")
    return str((reference or {}).get("workloadName") or "")
