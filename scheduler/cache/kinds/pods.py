"""Pods: the tasks of gangs, and what takes room on nodes.

A pod is kept if it names one of muster's scheduler names or already sits on a node (any
scheduler's pod there uses its room); muster's pods also count for whose their PodGroup is
(cache/ownership.py). A pod seen before whose spec did not move (a kubelet's status report)
has its record restated rather than read again.

What a pod event invalidates: any event about a pod unsettles its own gang. The common one,
a bind's echo or a pod starting, moves the record in place and asks at most for a status
session (a bind answered asks for none: Binding and Bound count alike). Any other change asks
for a session; a pod that leaves its node (or stops holding room there) also unsettles every
gang and brings the gangs that failed back at once. An event that would undo a bind or an
eviction in flight (the server not caught up yet) keeps the assumption.
"""

from __future__ import annotations

from collections.abc import Collection

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.native import QueueSource
from scheduler.api.snapshot import shadow_key
from scheduler.api.task import (
    BOUND_STATUSES,
    TERMINAL_STATUSES,
    TaskInfo,
    TaskStatus,
    named_group,
    pod_digest,
)
from scheduler.cache.kinds.base import Handler
from scheduler.cache.world import World


def keeps(world: World, pod: wire.Pod) -> bool:
    """Pods that name one of our schedulers, or sit on a node (they use its room)."""
    return pod.spec.scheduler_name in world.scheduler_names or bool(pod.spec.node_name)


def upsert(world: World, pod: wire.Pod) -> None:
    """A pod was added or changed."""
    uid = pod.metadata.uid
    key = ("Pod", f"{pod.metadata.namespace}/{pod.metadata.name}")
    ours = pod.spec.scheduler_name in world.scheduler_names
    owners = world.owners
    if not keeps(world, pod):
        owners.set_membership(uid, _named_group(pod), ours=False)
        _forget(world, uid)
        return
    old = world.tasks.get(uid)
    # A pod seen before: if only its status moved (a kubelet's report), its record is
    # restated rather than read again.
    digest = pod_digest(pod) if old is not None else 0
    if old is not None and old.digest == digest:
        task = old.restated(pod)
    else:
        try:
            task = TaskInfo.from_pod(pod)
        except InvalidObject as error:
            world.invalid[key] = error
            owners.set_membership(uid, _named_group(pod), ours=ours)
            _forget(world, uid)
            return
        task.digest = digest
        world.invalid.pop(key, None)
    if task.devices is not None:
        # The devices its claims count for its queue (deviceclass/<class>).
        task.set_request(world.counted_request(task))
    # Before the task is indexed: muster's first pod of a PodGroup makes it a job to join.
    owners.set_membership(uid, task.job if ours else _named_group(pod), ours=ours)
    settled = world.settled
    if old is not None:
        settled.touch(old.job)
    releasing = world.releasing
    if old is not None and uid not in releasing and _same_placement(old, task):
        # The common event (our bind's echo, Bound -> Running): move it in place. It
        # changes what statuses say (running counts), not what a session can place;
        # our bind's echo changes neither, and asks for no session.
        if not _same_but_bound(old, task):
            world.status_generation += 1
        # Read only when the pod is a victim candidate (minimum runtimes, cooldowns), and
        # when its gang is partly bound (since when: api/gang_state.py).
        old.started = task.started
        old.bound_at = task.bound_at
        # Our own annotation coming back (framework/scaleup.py): no session needed.
        old.scale_up_request = task.scale_up_request
        if old.status is not task.status:
            world.live.set_task_status(old, task.status)
        return
    world.generation += 1
    if old is not None and _assumed_still_pending(old, task):
        # Our bind is in flight and the server has not caught up: keep the assumption.
        task.status = old.status
        task.node_name = old.node_name
    if old is not None and _holds_room(old) and not _holds_room(task):
        world.room_freed()
    if uid in releasing:
        if task.status in (TaskStatus.RUNNING, TaskStatus.BOUND):
            # Our eviction is in flight: the pod's room is already going.
            task.status = TaskStatus.RELEASING
        else:
            del releasing[uid]
    world.remove_task(uid)
    world.add_task(task)
    settled.touch(task.job)
    _recount_shared(world, old, task)
    if task.queue_annotation or (old is not None and old.queue_annotation):
        # A native PodGroup's queue may come from its pods' annotation (api/native.py).
        world.requeue((task.job,), QueueSource.PODS)


def delete(world: World, uid: str) -> None:
    """A pod is gone."""
    world.owners.set_membership(uid, "", ours=False)
    _forget(world, uid)


def _forget(world: World, uid: str) -> None:
    """No task for this pod any more (gone, or neither ours nor on a node)."""
    world.generation += 1
    task = world.tasks.get(uid)
    if task is not None:
        world.settled.touch(task.job)
        if _holds_room(task):
            world.room_freed()
    world.releasing.pop(uid, None)
    world.remove_task(uid)
    _recount_shared(world, task, None)
    if task is not None and task.queue_annotation:
        world.requeue((task.job,), QueueSource.PODS)


def _recount_shared(world: World, old: TaskInfo | None, new: TaskInfo | None) -> None:
    """A claim no template made counts in the first of its pods: when its pods change, the
    one it counts in may too."""
    keys: set[str] = set()
    for task in (old, new):
        if task is not None and task.devices is not None:
            keys.update(key for key in task.devices.claims if key not in task.devices.from_template)
    for key in sorted(keys):
        world.recount(key)


def _uid(pod: wire.Pod) -> str:
    return pod.metadata.uid


def _named_group(pod: wire.Pod) -> str:
    """The gang key of the PodGroup a pod names (its annotation, else its
    spec.schedulingGroup), or ""."""
    return named_group(pod.metadata, pod.spec)[0]


def _assumed_still_pending(old: TaskInfo, new: TaskInfo) -> bool:
    return (
        old.status is TaskStatus.BINDING and not new.node_name and new.status is TaskStatus.PENDING
    )


def _same_placement(old: TaskInfo, new: TaskInfo) -> bool:
    # Between bound statuses a pod keeps its room on its node: a change among them moves
    # no accounting that a session reads except the status itself.
    if not _alike(old.status, new.status, BOUND_STATUSES):
        return False
    return (
        old.node_name == new.node_name
        and old.job == (new.job or shadow_key(new))
        and old.request == new.request
        and old.placement == new.placement
        and old.images == new.images
        and old.gated == new.gated
        and old.unhonoured == new.unhonoured
        and old.priority == new.priority
        and old.queue_annotation == new.queue_annotation
        and old.protection == new.protection
        and old.devices == new.devices
    )


# Placed and not started: PodGroup and Queue statuses count these two alike (ready,
# allocated; neither running nor done).
_BOUND_NOT_STARTED = frozenset({TaskStatus.BINDING, TaskStatus.BOUND})


def _same_but_bound(old: TaskInfo, new: TaskInfo) -> bool:
    """Whether `new` (of the same placement) differs from `old` at most by a bind answered:
    the same status, or Binding and Bound; nothing else a session reads changed."""
    if not _alike(old.status, new.status, _BOUND_NOT_STARTED):
        return False
    # What _same_placement leaves out: other pods' affinity reads the labels, gangs'
    # minTaskMember the role.
    return (
        old.labels == new.labels
        and old.role == new.role
        and old.topology == new.topology
        and old.scheduler_name == new.scheduler_name
        and old.preemption_policy == new.preemption_policy
        and old.owner_uid == new.owner_uid
        and old.creation_timestamp == new.creation_timestamp
    )


def _alike(old: TaskStatus, new: TaskStatus, among: Collection[TaskStatus]) -> bool:
    """The same status, or two that `among` holds both of."""
    return old is new or (old in among and new in among)


def _holds_room(task: TaskInfo) -> bool:
    return bool(task.node_name) and task.status not in TERMINAL_STATUSES


# Pods are keyed by uid: a pod recreated under the same name is another pod. The decoder names
# spec fields newer than muster's list (api/pod_fields.py).
HANDLER = Handler("pod", "/api/v1/pods", wire.Pod, _uid, upsert, delete, decode=wire.decode_pod)
