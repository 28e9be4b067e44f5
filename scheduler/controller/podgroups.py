"""PodGroups for pods that name none: one per controlling owner, as Volcano's controller makes.

A pod of ours without `scheduling.k8s.io/group-name` gets the PodGroup
`podgroup-<owner uid>` (or `podgroup-<pod uid>` when nothing controls it):
minMember from the owner's `scheduling.volcano.sh/group-min-member`
annotation (else 1), minResources = the pod's request x minMember, the queue
from the pod's annotation (else its namespace's), the pod's
priorityClassName, and an ownerReference so that the PodGroup goes with its
owner. Then the pod is annotated with the group's name.

The name is a function of the owner alone, so every replay, restart or
second replica computes the same one, and 409 AlreadyExists means done:
there are never two PodGroups for one owner.

An owner the controller may not read (its kind is not in the ClusterRole's list)
still gets its PodGroup, with minMember 1: its pods run, one by one, rather than
wait forever; a warning and an event on the pod name the RBAC rule to add.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.names import GROUP, GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION, VERSION
from scheduler.api.resources import Resource
from scheduler.api.task import pod_request
from scheduler.controller.objects import ClusterObjects, Obj, OwnerForbidden

log = logging.getLogger(__name__)

# On the owner (a Job, a ReplicaSet...): how many of its pods must start together.
MIN_MEMBER_ANNOTATION = "scheduling.volcano.sh/group-min-member"
_FINISHED = frozenset({"Succeeded", "Failed"})
# The event reason on a pod whose owner the controller may not read.
OWNER_FORBIDDEN = "OwnerNotReadable"

# Posts a warning event on the pod being handled: (reason, message).
Warn = Callable[[str, str], None]


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """The PodGroup a pod needs: its name and its manifest."""

    name: str
    manifest: Obj


def needs_podgroup(pod: wire.Pod, scheduler_names: frozenset[str]) -> bool:
    """A live pod of ours that names no PodGroup."""
    meta = pod.metadata
    return (
        pod.spec.scheduler_name in scheduler_names
        and not meta.annotations.get(GROUP_NAME_ANNOTATION)
        and meta.deletion_timestamp is None
        and pod.status.phase not in _FINISHED
    )


def controlling_owner(pod: Obj) -> Obj | None:
    """The ownerReference with controller: true, as the API server allows only one."""
    for reference in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("controller"):
            return dict(reference)
    return None


def podgroup_name(pod: Obj) -> str:
    """`podgroup-<uid>` of the controlling owner, or of the pod itself."""
    owner = controlling_owner(pod)
    uid = owner["uid"] if owner is not None else pod["metadata"]["uid"]
    return f"podgroup-{uid}"


def min_member_of(owner: Obj | None) -> int:
    """The owner's group-min-member annotation, or 1; raises InvalidObject when unusable."""
    if owner is None:
        return 1
    meta = owner.get("metadata") or {}
    raw = (meta.get("annotations") or {}).get(MIN_MEMBER_ANNOTATION)
    if raw is None:
        return 1
    kind = str(owner.get("kind", "owner"))
    name = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    field = f"metadata.annotations[{MIN_MEMBER_ANNOTATION}]"
    try:
        value = int(raw)
    except ValueError:
        raise InvalidObject(kind, name, field, raw, "must be a whole number such as 4") from None
    if value < 1:
        raise InvalidObject(kind, name, field, raw, "must be 1 or more")
    return value


def times(request: Resource, count: int) -> Resource:
    """request x count, exactly (integers, no float rounding)."""
    return Resource(
        request.cpu * count,
        request.memory * count,
        {key: value * count for key, value in request.scalars.items()},
    )


def plan_podgroup(pod: Obj, owner: Obj | None, namespace_queue: str) -> GroupPlan:
    """The PodGroup for a pod; raises InvalidObject when the pod or owner cannot be read."""
    typed = wire.from_dict(pod, wire.Pod)
    meta = typed.metadata
    name = podgroup_name(pod)
    min_member = min_member_of(owner)
    request = pod_request(typed.spec, name=f"{meta.namespace}/{meta.name}")
    reference = controlling_owner(pod)
    if reference is not None:
        owner_reference = {
            "apiVersion": reference.get("apiVersion", ""),
            "kind": reference.get("kind", ""),
            "name": reference.get("name", ""),
            "uid": reference["uid"],
            "controller": True,
        }
    else:
        owner_reference = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta.name,
            "uid": meta.uid,
            "controller": True,
        }
    spec: dict[str, Any] = {
        "minMember": min_member,
        "minResources": times(request, min_member).to_list(),
    }
    queue = meta.annotations.get(QUEUE_NAME_ANNOTATION) or namespace_queue
    if queue:
        spec["queue"] = queue
    if typed.spec.priority_class_name:
        spec["priorityClassName"] = typed.spec.priority_class_name
    manifest = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": meta.namespace,
            "ownerReferences": [owner_reference],
        },
        "spec": spec,
    }
    return GroupPlan(name, manifest)


async def ensure_podgroup(
    objects: ClusterObjects,
    pod: Obj,
    scheduler_names: frozenset[str],
    warn: Warn | None = None,
    on_created: Callable[[str], None] = lambda name: None,
) -> str | None:
    """Give a pod that needs one its PodGroup and annotate it; the group's name, or None.

    Safe to run any number of times for the same pod, from any replica.
    """
    typed = wire.from_dict(pod, wire.Pod)
    if not needs_podgroup(typed, scheduler_names):
        return None
    namespace = typed.metadata.namespace
    reference = controlling_owner(pod)
    owner: Obj | None = None
    forbidden: OwnerForbidden | None = None
    if reference is not None:
        try:
            owner = await objects.owner(namespace, reference)
        except OwnerForbidden as error:
            forbidden = error
    namespace_queue = ""
    if not typed.metadata.annotations.get(QUEUE_NAME_ANNOTATION):
        namespace_queue = await objects.namespace_queue(namespace)
    plan = plan_podgroup(pod, owner, namespace_queue)
    created = await objects.create_podgroup(namespace, plan.manifest)
    where = {"podgroup": f"{namespace}/{plan.name}", "pod": typed.metadata.name}
    if created:
        on_created(plan.name)
        log.info(
            "created PodGroup for %s",
            f"{reference['kind']} {reference['name']}" if reference else "a bare pod",
            extra=where,
        )
    # Once per PodGroup, not once per pod: the first pod's event says it for its siblings.
    if created and forbidden is not None:
        # The pods are annotated with the group's name, so this PodGroup is never remade:
        # only workloads created after the fix get their owner's minMember.
        message = (
            f"{forbidden}. PodGroup {plan.name} gets minMember 1, so its pods start one by"
            " one; once the rule is in place, new workloads get their owner's minMember"
            " (for this one, raise the PodGroup's spec.minMember or recreate the workload)."
        )
        log.warning("%s", message, extra=where)
        if warn is not None:
            warn(OWNER_FORBIDDEN, message)
    await objects.annotate_pod(namespace, typed.metadata.name, {GROUP_NAME_ANNOTATION: plan.name})
    return plan.name
