"""The PodGroup for a pod, from the rule of its owners' kind and the overrides: pure, no I/O.

- Name: `podgroup-<owner uid>`, with `-<key>` for an owner of several groups (a JobSet's
  replicatedJob under InOrder, a LeaderWorkerSet's group index, a Spark application id): a
  pure function of the owner's uid and the group's key, so a replay, a restart or a second
  replica computes the same one, and 409 AlreadyExists means done.
- minMember: the rule's (groupers/), unless `scheduling.volcano.sh/group-min-member` is on
  the pod, else on the top owner, else on the owner the group is named after.
- minResources: the requests of the first minMember members, role by role, each read from
  its pod template (the pod's own request where the rule has no template).
- queue: `scheduling.volcano.sh/queue-name` on the pod, else on the top owner, else the
  namespace's; priorityClassName: the pod's.
- An ownerReference to the owner, so the group goes with it; the rule in words, and where
  minMember came from, as annotations (`muster explain` prints the rule).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.names import (
    GROUP,
    GROUPING_RULE_ANNOTATION,
    MIN_MEMBER_FROM_ANNOTATION,
    QUEUE_NAME_ANNOTATION,
    VERSION,
)
from scheduler.api.pod_defaults import with_defaulted_requests
from scheduler.api.pod_requests import pod_request
from scheduler.api.resources import Resource
from scheduler.controller.groupers import DEFAULT, choose
from scheduler.controller.groupers.base import Grouper, Grouping, Obj, Probe, Role, describe
from scheduler.controller.objects import OwnerForbidden

# On a pod or an owner: how many pods of the group must start together.
MIN_MEMBER_ANNOTATION = "scheduling.volcano.sh/group-min-member"
# Where minMember came from (the MIN_MEMBER_FROM_ANNOTATION values).
FROM_RULE, FROM_OWNER, FROM_POD = "rule", "owner", "pod"
_NAME_PREFIX = "podgroup-"
_UNSAFE = re.compile(r"[^a-z0-9-]+")
_MAX_NAME = 253


@dataclass(frozen=True, slots=True)
class Lineage:
    """A pod's controlling owners, nearest first, as far as they could be read."""

    reference: Obj | None  # the pod's own controlling ownerReference
    owners: tuple[Obj, ...] = ()
    forbidden: OwnerForbidden | None = None

    @property
    def top(self) -> Obj | None:
        """The topmost owner read."""
        return self.owners[-1] if self.owners else None


@dataclass(frozen=True, slots=True)
class Choice:
    """The rule that groups a pod, the owner the group is named after, and its key."""

    grouper: Grouper
    owner: Obj
    key: str


@dataclass(frozen=True, slots=True)
class Desired:
    """What the controller keeps a PodGroup it made in step with (follow.py compares it)."""

    min_member: int
    min_member_from: str
    min_resources: dict[str, str] | None  # None: not computable here, left as it is
    sub_groups: list[Obj] | None
    rule: str


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """The PodGroup a pod needs: its name and namespace, its manifest, what is kept in step."""

    name: str
    namespace: str
    manifest: Obj
    desired: Desired


def controlling_owner(obj: Obj) -> Obj | None:
    """The ownerReference with controller: true, as the API server allows only one."""
    for reference in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("controller"):
            return dict(reference)
    return None


def podgroup_name(owner_uid: str, key: str) -> str:
    """`podgroup-<owner uid>`, with `-<key>` for one of an owner's several groups."""
    base = f"{_NAME_PREFIX}{owner_uid}"
    if not key:
        return base
    safe = _UNSAFE.sub("-", key.lower()).strip("-")
    if safe != key or len(base) + 1 + len(safe) > _MAX_NAME:
        # keys that are not DNS-safe (or too long) keep their identity through a digest
        digest = hashlib.sha256(key.encode()).hexdigest()[:10]
        safe = f"{safe[: _MAX_NAME - len(base) - 12]}-{digest}".strip("-")
    return f"{base}-{safe}"


def choose_rule(pod: Obj, lineage: Lineage) -> Choice:
    """Which rule groups the pod (groupers.choose), under which owner and key."""
    if not lineage.owners:
        owner = _reference_stub(lineage.reference, pod) if lineage.reference else pod
        return Choice(DEFAULT, owner, "")
    grouper, owner = choose(pod, lineage.owners)
    return Choice(grouper, owner, grouper.key_of(owner, pod))


def plan_podgroup(
    pod: Obj,
    lineage: Lineage,
    choice: Choice,
    present: frozenset[Probe],
    namespace_queue: str,
) -> GroupPlan:
    """The PodGroup for a pod; raises InvalidObject on a field the rule cannot read."""
    typed = wire.from_dict(pod, wire.Pod)
    meta = typed.metadata
    grouping = choice.grouper.grouping(choice.owner, choice.key, pod, present)
    if lineage.forbidden is not None and not lineage.owners:
        grouping = Grouping(1, grouping.roles, f"{grouping.rule}; {lineage.forbidden}")
    min_member, source, rule = _min_member(grouping, pod, lineage.top, choice.owner)
    request = pod_request(typed.spec, name=f"{meta.namespace}/{meta.name}")
    min_resources = _min_resources(grouping.roles, min_member, request, choice.owner)
    sub_groups = [sub.manifest() for sub in grouping.sub_groups]
    spec: Obj = {"minMember": min_member, "minResources": min_resources}
    queue = (
        _annotation(pod, QUEUE_NAME_ANNOTATION)
        or _annotation(lineage.top, QUEUE_NAME_ANNOTATION)
        or namespace_queue
    )
    if queue:
        spec["queue"] = queue
    if typed.spec.priority_class_name:
        spec["priorityClassName"] = typed.spec.priority_class_name
    if sub_groups:
        spec["subGroupPolicy"] = sub_groups
    name = podgroup_name(_uid(choice.owner), choice.key)
    manifest: Obj = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": meta.namespace,
            "ownerReferences": [_owner_reference(choice.owner)],
            "annotations": {GROUPING_RULE_ANNOTATION: rule, MIN_MEMBER_FROM_ANNOTATION: source},
        },
        "spec": spec,
    }
    desired = Desired(min_member, source, min_resources, sub_groups, rule)
    return GroupPlan(name, meta.namespace, manifest, desired)


def desired_for_owner(grouper: Grouper, owner: Obj, key: str, present: frozenset[Probe]) -> Desired:
    """What an owner's spec now says of its group `key`, with no pod at hand (the owner
    changed): minResources only where every role has a template."""
    grouping = grouper.grouping(owner, key, None, present)
    try:
        min_resources: dict[str, str] | None = _min_resources(
            grouping.roles, grouping.min_member, None, owner
        )
    except _NeedsPod:
        min_resources = None
    sub_groups = [sub.manifest() for sub in grouping.sub_groups]
    return Desired(grouping.min_member, FROM_RULE, min_resources, sub_groups, grouping.rule)


def min_member_annotation(obj: Obj) -> int | None:
    """The object's group-min-member annotation, or None; raises InvalidObject when unusable."""
    raw = _annotation(obj, MIN_MEMBER_ANNOTATION)
    if raw is None:
        return None
    kind, name = describe(obj)
    field = f"metadata.annotations[{MIN_MEMBER_ANNOTATION}]"
    try:
        value = int(raw)
    except ValueError:
        raise InvalidObject(kind, name, field, raw, "must be a whole number such as 4") from None
    if value < 1:
        raise InvalidObject(kind, name, field, raw, "must be 1 or more")
    return value


def _min_member(
    grouping: Grouping, pod: Obj | None, top: Obj | None, owner: Obj
) -> tuple[int, str, str]:
    """minMember, where it came from, and the rule in words with the override said."""
    candidates: list[tuple[Obj | None, str]] = [(pod, FROM_POD), (top, FROM_OWNER)]
    if owner is not top and owner is not pod:
        candidates.append((owner, FROM_OWNER))
    for obj, source in candidates:
        if obj is None:
            continue
        value = min_member_annotation(obj)
        if value is not None:
            kind, name = describe(obj)
            rule = (
                f"{grouping.rule}; overridden by {MIN_MEMBER_ANNOTATION}={value} on "
                f"{kind or 'Pod'} {name}"
            )
            return value, source, rule
    return grouping.min_member, FROM_RULE, grouping.rule


class _NeedsPod(Exception):
    """A role with no template where no pod stands for it."""


def _min_resources(
    roles: tuple[Role, ...], min_member: int, request: Resource | None, owner: Obj
) -> dict[str, str]:
    """The requests of the first min_member members, role by role."""
    total = Resource()
    left = min_member
    last: Resource | None = request
    for role in roles:
        if left <= 0:
            break
        each = _role_request(role, request, owner)
        taken = min(role.count, left)
        total.add(_times(each, taken))
        left -= taken
        last = each
    if left > 0:
        if last is None:
            raise _NeedsPod()
        total.add(_times(last, left))
    return total.to_list()


def _role_request(role: Role, request: Resource | None, owner: Obj) -> Resource:
    if role.template is None:
        if request is None:
            raise _NeedsPod()
        return request
    kind, name = describe(owner)
    # the template's pods get the requests SetDefaults_Pod writes, which they are sized by
    spec = with_defaulted_requests(role.template["spec"])
    return pod_request(wire.from_dict(spec, wire.PodSpec), name=f"{kind} {name} ({role.name})")


def _times(request: Resource, count: int) -> Resource:
    """request x count, exactly (integers, no float rounding)."""
    return Resource(
        request.cpu * count,
        request.memory * count,
        {key: value * count for key, value in request.scalars.items()},
    )


def _annotation(obj: Obj | None, key: str) -> str | None:
    if obj is None:
        return None
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
    return None if value is None else str(value)


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))


def _owner_reference(owner: Obj) -> Obj:
    meta = owner.get("metadata") or {}
    return {
        "apiVersion": str(owner.get("apiVersion") or "v1"),
        "kind": str(owner.get("kind") or "Pod"),
        "name": str(meta.get("name", "")),
        "uid": str(meta.get("uid", "")),
        "controller": True,
    }


def _reference_stub(reference: Obj, pod: Obj) -> Obj:
    """An owner known only by the pod's reference (gone, or not readable)."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    stub: dict[str, Any] = {
        "apiVersion": reference.get("apiVersion", ""),
        "kind": reference.get("kind", ""),
        "metadata": {
            "name": reference.get("name", ""),
            "namespace": namespace,
            "uid": reference.get("uid", ""),
        },
    }
    return stub
