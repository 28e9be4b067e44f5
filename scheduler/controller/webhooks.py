"""Admission rules: what a PodGroup, Queue or pod must be to be admitted, and the one default.

Each rule is a plain function over the object and the controller's views of
queues and PodGroups; it raises `Refusal` with a message that names the
object, the field and the value, and says how to fix it. `operator` serves
them through kopf's webhook server.

Decisions:
- networkTopology and subGroupPolicy: read as the scheduler reads them (api/), so
  highestTierAllowed with highestTierName is refused, as Volcano's webhook does.
- minTaskMember: every role named, every count 0 or more, and together no
  more than minMember when minMember is above 0 (a gang cannot need more
  pods per role than in all). minMember 0 is how KubeRay releases a finished
  RayJob's gang, so the roles are not held against it then.
- The queue must exist and be Open when a PodGroup is created or moved to
  another queue; other updates (KubeRay scaling or finishing a gang in a
  Closing queue) are not refused for the queue's state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.api import wire
from scheduler.api.errors import InvalidObject, MusterError
from scheduler.api.names import DEFAULT_QUEUE, QUEUE_NAME_ANNOTATION, ROOT_QUEUE
from scheduler.api.network_topology import NetworkTopology
from scheduler.api.queue import QueueInfo
from scheduler.api.resources import Resource
from scheduler.api.subgroups import read_policies
from scheduler.controller.objects import Obj
from scheduler.controller.queues import STATE_ANNOTATION, PodGroupView, QueueView


class Refusal(MusterError):
    """An object the admission webhook refuses; the message is what the user reads."""


def _name(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def _refuse(kind: str, obj: Obj, field: str, value: object, problem: str) -> Refusal:
    return Refusal(f"{kind} {_name(obj)}: {field}={value!r}: {problem}")


# PodGroup -------------------------------------------------------------------


def validate_podgroup(
    podgroup: Obj,
    old: Obj | None,
    queues: Mapping[str, QueueView],
    default_queue: str = DEFAULT_QUEUE,
) -> None:
    """A PodGroup's spec is usable and its queue admits it (on create or queue change)."""
    spec: dict[str, Any] = podgroup.get("spec") or {}
    min_member = spec.get("minMember", 0)
    if not isinstance(min_member, int) or isinstance(min_member, bool) or min_member < 0:
        raise _refuse(
            "PodGroup",
            podgroup,
            "spec.minMember",
            min_member,
            "must be a whole number, 0 or more: the pods that must start together",
        )
    try:
        Resource.from_list(
            spec.get("minResources"),
            kind="PodGroup",
            name=_name(podgroup),
            field="spec.minResources",
        )
    except InvalidObject as error:
        raise Refusal(f"{error}; write a quantity such as 500m, 2 or 4Gi") from None
    _validate_task_members(podgroup, spec.get("minTaskMember") or {}, min_member)
    try:
        # The scheduler's own readings: a spec the webhook admits is one it can use (and,
        # as Volcano's webhook, highestTierAllowed with highestTierName is refused).
        if spec.get("networkTopology") is not None:
            NetworkTopology.read(_name(podgroup), spec["networkTopology"])
        if spec.get("subGroupPolicy") is not None:
            read_policies(_name(podgroup), spec["subGroupPolicy"])
    except InvalidObject as error:
        raise Refusal(str(error)) from None
    queue = str(spec.get("queue") or default_queue)
    old_queue = str(((old or {}).get("spec") or {}).get("queue") or default_queue)
    if old is not None and old_queue == queue:
        return
    found = queues.get(queue)
    if found is None:
        raise _refuse(
            "PodGroup",
            podgroup,
            "spec.queue",
            queue,
            f"queue {queue!r} does not exist; create it or name an existing queue",
        )
    if not found.admits:
        raise _refuse(
            "PodGroup",
            podgroup,
            "spec.queue",
            queue,
            f"queue {queue!r} is {found.state}; open it (muster queue open {queue}) "
            "or name an Open queue",
        )


def _validate_task_members(podgroup: Obj, members: Any, min_member: int) -> None:
    field = "spec.minTaskMember"
    if not isinstance(members, dict):
        raise _refuse("PodGroup", podgroup, field, members, "must map role names to counts")
    for role, count in members.items():
        if not role:
            raise _refuse(
                "PodGroup",
                podgroup,
                field,
                members,
                "a role name is empty; use the pods' volcano.sh/task-spec values",
            )
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise _refuse(
                "PodGroup", podgroup, f"{field}[{role}]", count, "must be a whole number, 0 or more"
            )
    needed = sum(members.values())
    if min_member > 0 and needed > min_member:
        raise _refuse(
            "PodGroup",
            podgroup,
            field,
            members,
            f"the roles need {needed} pods together but minMember is {min_member}; "
            f"raise minMember to {needed} or lower minTaskMember",
        )


def default_podgroup_queue(podgroup: Obj, namespace_queue: str, default_queue: str) -> str | None:
    """The queue to fill in from the namespace's annotation, or None to leave the spec alone.

    The CRD defaults `spec.queue` to the default queue before mutating admission runs,
    so, as in Volcano's PodGroup webhook, the default queue counts as unset: a
    PodGroup that names it (or none) goes to the namespace's queue when there is one.
    """
    queue = (podgroup.get("spec") or {}).get("queue") or ""
    if queue not in ("", default_queue) or not namespace_queue or namespace_queue == queue:
        return None
    return namespace_queue


# Queue ----------------------------------------------------------------------


def validate_queue(queue: Obj, queues: Mapping[str, QueueView]) -> None:
    """A Queue's weight, limits, state request and place in the hierarchy are sound."""
    try:
        QueueInfo.from_queue(wire.from_dict(queue, wire.Queue))
    except InvalidObject as error:
        raise Refusal(str(error)) from None
    except Exception as error:  # a field of the wrong type
        raise Refusal(f"Queue {_name(queue)}: {error}") from None
    name = str((queue.get("metadata") or {}).get("name", ""))
    requested = ((queue.get("metadata") or {}).get("annotations") or {}).get(STATE_ANNOTATION)
    if requested is not None and requested.lower() not in ("open", "closed"):
        raise _refuse(
            "Queue",
            queue,
            f"metadata.annotations[{STATE_ANNOTATION}]",
            requested,
            "must be Open or Closed (muster queue open|close NAME sets it)",
        )
    parent = str((queue.get("spec") or {}).get("parent") or "")
    if not parent:
        return
    if parent == name:
        raise _refuse("Queue", queue, "spec.parent", parent, "a queue cannot be its own parent")
    if parent != ROOT_QUEUE and parent not in queues:
        raise _refuse(
            "Queue",
            queue,
            "spec.parent",
            parent,
            f"queue {parent!r} does not exist; create the parent first or leave parent empty",
        )
    seen = {name}
    cursor = parent
    while cursor and cursor in queues:
        if cursor in seen:
            raise _refuse(
                "Queue",
                queue,
                "spec.parent",
                parent,
                f"makes a cycle through {cursor!r}; queues form a tree under root",
            )
        seen.add(cursor)
        cursor = queues[cursor].parent


def validate_queue_deletion(
    name: str,
    podgroups: Iterable[PodGroupView],
    queues: Mapping[str, QueueView],
    default_queue: str = DEFAULT_QUEUE,
) -> None:
    """The default and root queues stay while PodGroups or child queues use them."""
    if name == default_queue:
        users = sorted(f"{pg.namespace}/{pg.name}" for pg in podgroups if pg.queue == name)
        if users:
            shown = ", ".join(users[:3]) + (f" and {len(users) - 3} more" if len(users) > 3 else "")
            raise Refusal(
                f"Queue {name}: the default queue is in use by PodGroup {shown}; "
                "delete them or move them to another queue first"
            )
    if name == ROOT_QUEUE:
        children = sorted(q.name for q in queues.values() if q.parent == name)
        if children:
            raise Refusal(
                f"Queue {name}: the root queue is the parent of {', '.join(children)}; "
                "delete or re-parent them first"
            )


# Pod ------------------------------------------------------------------------


def validate_pod(
    pod: Obj, queues: Mapping[str, QueueView], scheduler_names: frozenset[str]
) -> None:
    """A pod of ours that names a queue names an Open one."""
    if (pod.get("spec") or {}).get("schedulerName") not in scheduler_names:
        return
    queue = ((pod.get("metadata") or {}).get("annotations") or {}).get(QUEUE_NAME_ANNOTATION)
    if not queue:
        return
    field = f"metadata.annotations[{QUEUE_NAME_ANNOTATION}]"
    found = queues.get(queue)
    if found is None:
        raise _refuse(
            "Pod",
            pod,
            field,
            queue,
            f"queue {queue!r} does not exist; create it or name an existing queue",
        )
    if not found.admits:
        raise _refuse(
            "Pod",
            pod,
            field,
            queue,
            f"queue {queue!r} is {found.state}; open it (muster queue open {queue}) "
            "or name an Open queue",
        )
