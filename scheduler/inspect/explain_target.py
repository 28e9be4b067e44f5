"""What `muster explain` is asked about: the kinds it takes (a PodGroup of Volcano's API, a
native one, whichever exists, or a pod), the namespace/name from the argument and -n, the
gang key a PodGroup kind names, and for a pod its group and where the session leaves it."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.names import GROUP, GROUP_NAME_ANNOTATION, GROUPING_RULE_ANNOTATION
from scheduler.api.native import GROUP as NATIVE_GROUP
from scheduler.api.native import PODGROUP_RESOURCE, describe_group, native_key
from scheduler.api.snapshot import shadow_key
from scheduler.api.task import TaskInfo
from scheduler.inspect.cluster import Observed, Options, Session, context_namespace
from scheduler.inspect.views import member_nodes, pod_messages

# Which PodGroups a kind names: Volcano's (its short name pg, or its resource), the native
# ones (podgroups.scheduling.k8s.io), or whichever exists by the name asked (plain
# podgroup(s), as kubectl reads it: both existing is a question to ask again, qualified).
VOLCANO_KINDS = ("pg", f"podgroups.{GROUP}", f"podgroup.{GROUP}")
NATIVE_KINDS = (PODGROUP_RESOURCE, f"podgroup.{NATIVE_GROUP}")
EITHER_KINDS = ("podgroup", "podgroups")
PODGROUP_KINDS = (*EITHER_KINDS, *VOLCANO_KINDS, *NATIVE_KINDS)
POD_KINDS = ("pod", "pods", "po")


def object_key(args: argparse.Namespace, options: Options) -> str | None:
    """namespace/name of the object asked about; None (said on stderr) when the name and
    -n disagree."""
    namespace, slash, name = args.name.rpartition("/")
    if not slash:
        return f"{args.namespace or context_namespace(options)}/{name}"
    if args.namespace and args.namespace != namespace:
        print(
            f"muster explain: {args.name} names namespace {namespace!r} but -n says "
            f"{args.namespace!r}; give one of them",
            file=sys.stderr,
        )
        return None
    return f"{namespace}/{name}"


@dataclass(frozen=True)
class PodAnswer:
    """Which group a pod of ours belongs to, and where the session leaves it."""

    group: str
    lines: list[str]
    waits: bool


def pod_answer(observed: Observed, session: Session, key: str) -> PodAnswer | str:
    """The pod's group and place; or, as a string, why it cannot be explained as ours."""
    namespace, _, name = key.partition("/")
    pod = next(
        (
            p
            for p in observed.objects.pods
            if p.metadata.namespace == namespace and p.metadata.name == name
        ),
        None,
    )
    if pod is None:
        return f"pod {key} not found"
    names = observed.world.scheduler_names
    if pod.spec.scheduler_name not in names:
        return (
            f"pod {key} is not muster's: its spec.schedulerName is "
            f"{pod.spec.scheduler_name!r} and muster serves {', '.join(sorted(names))} "
            "(pass --scheduler-name if the scheduler serves more); `kubectl describe pod` "
            "shows what its scheduler says"
        )
    try:
        task = TaskInfo.from_pod(pod)
    except InvalidObject as error:
        return f"pod {key} cannot be scheduled by muster as written: {error}"
    # the key the World files it under: its PodGroup's, else its one-pod group's
    group = task.job or shadow_key(task)
    job = session.snapshot.jobs.get(group)
    where = describe_group(group)
    if group == shadow_key(task):
        where = f"no PodGroup: it is its own one-pod group {group}"
    role = f" (role {task.role})" if task.role else ""
    lines = [f"Pod {key}: member of {where}{role}"]
    if task.ignored_group:
        lines.append(
            f"  its spec.schedulingGroup names {PODGROUP_RESOURCE} {task.ignored_group}, "
            "which muster does not use: the annotation scheduling.k8s.io/group-name wins"
        )
    if job is None:
        owner = f" muster controller makes it for the pod's owner (uid {task.owner_uid})"
        made = task.owner_uid and not _annotated(pod) and not pod.spec.scheduling_group
        lines.append(
            f"  waits: {describe_group(group)} does not exist; the scheduler places no member "
            f"of a group it cannot see.{owner if made else ''}"
        )
        return PodAnswer(group, lines, waits=True)
    placed = member_nodes(session, group).get(name)
    pending = pod_messages(session.result, group).get(name)
    waits = False
    if placed is not None:
        node, status = placed
        if status in ("Allocated", "Pipelined", "Binding"):
            lines.append(f"  this session places it on {node} ({status})")
        else:
            lines.append(f"  on node {node} ({status})")
    elif pending is not None:
        lines.append(f"  waits: {pending}")
        waits = True
    else:
        current = job.tasks.get(task.uid)
        status = current.status.value if current is not None else task.status.value
        lines.append(f"  {status}: the session does not place it")
        waits = status == "Pending"
    lines.append("")
    return PodAnswer(group, lines, waits)


def podgroup_key(kind: str, key: str, observed: Observed) -> str:
    """The gang key of the PodGroup namespace/name that `kind` names: Volcano's, the
    native one, or for a plain podgroup whichever of the two exists; raises ValueError
    (its message for the user) when both do."""
    namespace, _, name = key.partition("/")
    native = native_key(namespace, name)
    if kind in VOLCANO_KINDS:
        return key
    if kind in NATIVE_KINDS:
        return native
    volcano_exists = any(
        g.metadata.namespace == namespace and g.metadata.name == name
        for g in observed.objects.podgroups
    )
    native_exists = native in observed.world.native_podgroups
    if volcano_exists and native_exists:
        raise ValueError(
            f"both a PodGroup {key} of Volcano's API and a {PODGROUP_RESOURCE} {key} exist; "
            f"ask for one by its qualified kind: `muster explain pg {key}` or "
            f"`muster explain {PODGROUP_RESOURCE} {key}`"
        )
    return native if native_exists else key


def grouping_rule(observed: Observed, key: str) -> str | None:
    """The rule `muster controller` made the PodGroup by (its annotation), None for a
    PodGroup it did not make."""
    namespace, _, name = key.partition("/")
    for group in observed.objects.podgroups:
        if group.metadata.namespace == namespace and group.metadata.name == name:
            return group.metadata.annotations.get(GROUPING_RULE_ANNOTATION)
    return None


def _annotated(pod: wire.Pod) -> bool:
    return bool(pod.metadata.annotations.get(GROUP_NAME_ANNOTATION))
