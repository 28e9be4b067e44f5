"""A PodGroup for a pod that names none, from its owners' gang rule (plan.py, groupers/).

For a pending pod of ours without `scheduling.k8s.io/group-name`: read its owners up the
controller references, choose the rule, read what the rule probes, and create the PodGroup
the plan describes; 409 AlreadyExists means another pod (or a replay, or another replica)
made it, and then a PodGroup the controller made is brought in step with the plan if the
owner was scaled. Then the pod is annotated with the group's name.

An owner the controller may not read (its kind is not in the ClusterRole's list) ends the
walk there: the group is made from the owners read below it, or as the controlling
owner's group of minMember 1 when none could be read, so its pods run rather than wait
forever; a warning and an event on the pod name the RBAC rule to add.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import msgspec

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.names import GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION
from scheduler.controller.census import PodGroupCensus
from scheduler.controller.follow import follow_patch
from scheduler.controller.metrics import ControllerMetrics
from scheduler.controller.objects import ClusterObjects, Obj, OwnerForbidden
from scheduler.controller.plan import Lineage, choose_rule, controlling_owner, plan_podgroup
from scheduler.kube.errors import StatusError, TransportError, is_retryable

log = logging.getLogger(__name__)

_FINISHED = frozenset({"Succeeded", "Failed"})
# The event reason on a pod whose owner the controller may not read.
OWNER_FORBIDDEN = "OwnerNotReadable"
# How far up the controller references the walk goes (a LeaderWorkerSet's worker: 4).
MAX_OWNERS = 8


class _HeadMeta(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    creation_timestamp: str = ""
    deletion_timestamp: str | None = None


class _HeadGroup(msgspec.Struct, rename="camel"):
    pod_group_name: str | None = None


class _HeadSpec(msgspec.Struct, rename="camel"):
    scheduler_name: str = ""
    node_name: str = ""
    # A native PodGroup (spec.schedulingGroup): its workload's controller made the group.
    scheduling_group: _HeadGroup | None = None


class _HeadStatus(msgspec.Struct):
    phase: str = ""


class PodHead(msgspec.Struct):
    """The fields of a pod that say whether it needs a PodGroup (decoded cheaply: every
    pending pod is)."""

    metadata: _HeadMeta = msgspec.field(default_factory=_HeadMeta)
    spec: _HeadSpec = msgspec.field(default_factory=_HeadSpec)
    status: _HeadStatus = msgspec.field(default_factory=_HeadStatus)


class Retry(Exception):
    """Grouping a pod failed for a passing reason: try it again later."""


def needs_podgroup(pod: PodHead, scheduler_names: frozenset[str]) -> bool:
    """A live, unbound pod of ours that names no PodGroup: neither Volcano's (annotation)
    nor a native one (spec.schedulingGroup, whose workload controller made it)."""
    meta = pod.metadata
    group = pod.spec.scheduling_group
    return (
        pod.spec.scheduler_name in scheduler_names
        and not meta.annotations.get(GROUP_NAME_ANNOTATION)
        and not (group is not None and group.pod_group_name)
        and meta.deletion_timestamp is None
        and not pod.spec.node_name
        and pod.status.phase not in _FINISHED
    )


async def read_lineage(objects: ClusterObjects, pod: Obj) -> Lineage:
    """The pod's controlling owners, nearest first, as far as they can be read."""
    namespace = str((pod.get("metadata") or {}).get("namespace", ""))
    reference = controlling_owner(pod)
    owners: list[Obj] = []
    current = reference
    while current is not None and len(owners) < MAX_OWNERS:
        try:
            owner = await objects.owner(namespace, current)
        except OwnerForbidden as error:
            return Lineage(reference, tuple(owners), error)
        if owner is None:
            break
        owners.append(owner)
        current = controlling_owner(owner)
    return Lineage(reference, tuple(owners))


async def ensure_podgroup(
    objects: ClusterObjects,
    pod: Obj,
    scheduler_names: frozenset[str],
    *,
    census: PodGroupCensus | None = None,
    on_created: Callable[[str], None] = lambda name: None,
    on_updated: Callable[[str], None] = lambda name: None,
) -> str | None:
    """Give a pod that needs one its PodGroup and annotate it; the group's name, or None.

    Safe to run any number of times for the same pod, from any replica. Raises
    InvalidObject when the pod or an owner cannot be grouped as written.
    """
    typed = wire.from_dict(pod, wire.Pod)
    if not needs_podgroup(msgspec.convert(pod, PodHead), scheduler_names):
        return None
    namespace = typed.metadata.namespace
    lineage = await read_lineage(objects, pod)
    choice = choose_rule(pod, lineage)
    if len(lineage.owners) > 1 and await kubernetes_gangs_siblings(objects, namespace, lineage):
        # Kubernetes' Job controller gangs this workload's Jobs itself (native PodGroups): a
        # group over all of it would wait for pods that join those; the pod's own Job's
        # rule groups it instead.
        choice = choose_rule(pod, Lineage(lineage.reference, lineage.owners[:1]))
    present = frozenset(
        [
            probe
            for probe in choice.grouper.probes(choice.owner)
            if await objects.exists(probe.api_version, probe.kind, probe.namespace, probe.name)
        ]
    )
    namespace_queue = ""
    if not _names_queue(pod) and not _names_queue(lineage.top):
        namespace_queue = await objects.namespace_queue(namespace)
    plan = plan_podgroup(pod, lineage, choice, present, namespace_queue)
    where = {"podgroup": f"{namespace}/{plan.name}", "pod": typed.metadata.name}
    created = False
    if census is None or not census.known(namespace, plan.name):
        created = await objects.create_podgroup(namespace, plan.manifest)
    if created:
        on_created(plan.name)
        log.info("created PodGroup: %s", plan.desired.rule, extra=where)
        if lineage.forbidden is not None:
            # Once per PodGroup, not once per pod: the first pod's event says it for its
            # siblings. The pods are annotated with the group's name, so it is never
            # remade: only workloads created after the fix get their owners' rule.
            await _say_forbidden(objects, pod, plan.name, lineage.forbidden, where)
    elif census is not None:
        current = census.managed(namespace, plan.name)
        patch = follow_patch(plan.desired, current) if current is not None else None
        if patch is not None:
            await objects.patch_podgroup(namespace, plan.name, patch)
            on_updated(plan.name)
            log.info("PodGroup follows its owner: %s", plan.desired.rule, extra=where)
    await objects.annotate_pod(namespace, typed.metadata.name, {GROUP_NAME_ANNOTATION: plan.name})
    return plan.name


async def kubernetes_gangs_siblings(
    objects: ClusterObjects, namespace: str, lineage: Lineage
) -> bool:
    """Whether a native PodGroup of the namespace is controlled by a Job that the pod's top
    owner controls: Kubernetes' Job controller (WorkloadWithJob) gangs that workload's Jobs
    itself (each Job whose pods are Indexed, parallelism = completions > 1, a gang)."""
    top = lineage.top
    top_uid = ((top or {}).get("metadata") or {}).get("uid")
    if not top_uid:
        return False
    for group in await objects.native_podgroups_in(namespace):
        reference = controlling_owner(group)
        if reference is None or reference.get("kind") != "Job":
            continue
        job = await objects.owner(namespace, reference)
        above = controlling_owner(job) if job is not None else None
        if above is not None and above.get("uid") == top_uid:
            return True
    return False


def _names_queue(obj: Obj | None) -> bool:
    annotations = ((obj or {}).get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(QUEUE_NAME_ANNOTATION))


async def _say_forbidden(
    objects: ClusterObjects,
    pod: Obj,
    name: str,
    forbidden: OwnerForbidden,
    where: dict[str, str],
) -> None:
    message = (
        f"{forbidden}. PodGroup {name} is made from the owners below it (minMember 1 when "
        "none could be read), so its pods may start one by one; once the rule is in place, "
        "new workloads get their owners' gang rule (for this one, raise the PodGroup's "
        "spec.minMember or recreate the workload)."
    )
    log.warning("%s", message, extra=where)
    await objects.warn(pod, OWNER_FORBIDDEN, message)


async def group_pod(
    objects: ClusterObjects,
    pod: Obj,
    scheduler_names: frozenset[str],
    census: PodGroupCensus | None,
    metrics: ControllerMetrics,
) -> None:
    """ensure_podgroup for the grouping loop: a passing failure is Retry, a pod or owner
    that cannot be grouped as written gets an InvalidObject event (its next change is
    tried again)."""
    try:
        await ensure_podgroup(
            objects,
            pod,
            scheduler_names,
            census=census,
            on_created=lambda _: metrics.podgroups_created.inc(),
            on_updated=lambda _: metrics.podgroups_updated.inc(),
        )
    except InvalidObject as error:
        metrics.handler_errors.labels("podgroup-for-pod").inc()
        log.warning("no PodGroup made: %s", error)
        await objects.warn(pod, "InvalidObject", f"no PodGroup made: {error}")
    except TransportError as error:
        log.warning("grouping a pod: %s; trying again", error)
        raise Retry() from error
    except StatusError as error:
        metrics.handler_errors.labels("podgroup-for-pod").inc()
        if is_retryable(error.code) or error.code == 403:
            # 403: the ClusterRole lacks a grant (the log says which); retried, as a fixed
            # role then takes effect without a restart
            log.warning("grouping a pod: %s; trying again", error)
            raise Retry() from error
        raise
