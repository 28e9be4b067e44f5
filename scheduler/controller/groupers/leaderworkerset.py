"""LeaderWorkerSet (leaderworkerset.x-k8s.io/v1): one gang per group of a leader and its workers.

LWS makes a leader StatefulSet whose pods (one per group) each own a worker StatefulSet of
`size - 1` pods; every pod carries `leaderworkerset.sigs.k8s.io/group-index` (the leader's
is set by LWS's pod webhook from its ordinal) and `.../worker-index` (0 for the leader), and
the annotation `leaderworkerset.sigs.k8s.io/size`, the group size of the revision that made
it. Each group index is a PodGroup of that size, with the leader and the workers as two
sub-groups (`spec.subGroupPolicy`).

With `startupPolicy: LeaderReady` LWS creates the workers only once the leader is Ready:
a gang of the whole size would wait for pods that cannot exist yet. The leader's group then
starts at minMember 1 and takes the whole size when the first worker is grouped (as
KAI-Scheduler and LWS's own Volcano integration do).
"""

from __future__ import annotations

from scheduler.api.errors import InvalidObject
from scheduler.controller.groupers.base import (
    GrouperBase,
    Grouping,
    Obj,
    Probe,
    Role,
    SubGroup,
    count_field,
    describe,
    label,
    nested,
    pod_template,
    required_label,
)

NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
SIZE_ANNOTATION = "leaderworkerset.sigs.k8s.io/size"
LEADER_READY = "LeaderReady"
LEADER_CREATED = "LeaderCreated"


class LeaderWorkerSetGrouper(GrouperBase):
    """One group per group index: a leader and size - 1 workers."""

    api_group = "leaderworkerset.x-k8s.io"
    kind = "LeaderWorkerSet"

    def key_of(self, owner: Obj, pod: Obj) -> str:
        """The pod's group index."""
        return required_label(
            pod, GROUP_INDEX_LABEL, "LeaderWorkerSet labels every pod with its group's index"
        )

    def keys(self, owner: Obj) -> tuple[str, ...]:
        """Every group index; none under LeaderReady, where the size depends on the pods."""
        if _policy(owner) == LEADER_READY:
            return ()
        return tuple(str(i) for i in range(count_field(owner, ("spec", "replicas"), 1)))

    def grouping(
        self, owner: Obj, key: str, pod: Obj | None, present: frozenset[Probe]
    ) -> Grouping:
        """The group's size, the leader and the workers as sub-groups."""
        size, size_source = _size(owner, pod)
        policy = _policy(owner)
        leader_alone = (
            policy == LEADER_READY
            and pod is not None
            and label(pod, WORKER_INDEX_LABEL) in (None, "0")
        )
        template = nested(owner, ("spec", "leaderWorkerTemplate"))
        workers = pod_template(nested(template, ("workerTemplate",)) if template else None)
        leader = pod_template(nested(template, ("leaderTemplate",)) if template else None)
        roles = (Role("leader", 1, leader or workers), Role("workers", size - 1, workers))
        name = describe(owner)[1]
        min_member = 1 if leader_alone else size
        rule = f"LeaderWorkerSet {name} group {key}: {size_source} = {size}"
        if leader_alone:
            rule += (
                f"; startupPolicy {LEADER_READY}: the workers are created once the leader is "
                f"ready, so minMember is 1 until they come, then {size}"
            )
        else:
            rule += f" (startupPolicy {policy}), the leader and its workers start together"
        owner_name = str((owner.get("metadata") or {}).get("name", ""))
        selector = {NAME_LABEL: owner_name, GROUP_INDEX_LABEL: key}
        sub_groups = [SubGroup("leader", 1, 1, {**selector, WORKER_INDEX_LABEL: "0"})]
        if size > 1:
            sub_groups.append(
                SubGroup("workers", size - 1, 1, selector, not_in={WORKER_INDEX_LABEL: ("0",)})
            )
        return Grouping(min_member, roles, rule, tuple(sub_groups))


def _policy(owner: Obj) -> str:
    return str(nested(owner, ("spec", "startupPolicy")) or LEADER_CREATED)


def _size(owner: Obj, pod: Obj | None) -> tuple[int, str]:
    """The group size: the pod's size annotation (its revision's), else the spec's."""
    if pod is not None:
        raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(SIZE_ANNOTATION)
        if raw is not None:
            try:
                size = int(raw)
            except ValueError:
                size = 0
            if size < 1:
                kind, name = describe(pod)
                field = f"metadata.annotations[{SIZE_ANNOTATION}]"
                raise InvalidObject(kind or "Pod", name, field, raw, "must be a whole number >= 1")
            return size, f"annotation {SIZE_ANNOTATION} on pod {name_of(pod)}"
    size = count_field(owner, ("spec", "leaderWorkerTemplate", "size"), 1)
    if size < 1:
        kind, name = describe(owner)
        raise InvalidObject(
            kind, name, "spec.leaderWorkerTemplate.size", size, "must be a whole number >= 1"
        )
    return size, "spec.leaderWorkerTemplate.size"


def name_of(obj: Obj) -> str:
    """An object's name."""
    return str((obj.get("metadata") or {}).get("name", ""))
