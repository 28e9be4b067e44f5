"""Whose a PodGroup is: muster schedules, writes status for and counts in its queues only
the PodGroups that are its own, and leaves every other one as its writer left it.

The rule, in order:

1. A PodGroup with at least one pod that names one of muster's scheduler names is muster's.
2. A PodGroup whose pods all name other schedulers is theirs (a mixed group is muster's
   by rule 1, and muster counts only its own pods in it).
3. A PodGroup with no pods yet is muster's when its `muster.dev/scheduler-name` annotation
   names one of muster's scheduler names, and theirs when it names another.
4. A PodGroup with no pods and no annotation is muster's unless muster runs with
   `--no-claim-podgroups-without-pods`. Claiming them is Volcano's behaviour and what
   clients that create pods only once their PodGroup is Inqueue (Kubeflow's training
   operator) need; beside another scheduler that admits such PodGroups, turn it off and
   annotate the PodGroups meant for muster.

A native PodGroup (podgroups.scheduling.k8s.io, api/native.py) follows rules 1 to 3, but
rule 4 never claims it: kube-scheduler schedules native PodGroups too, so one with no pods
and no annotation is left to it.

A pod counts for rule 1 and 2 by the PodGroup it names in `scheduling.k8s.io/group-name`,
else in `spec.schedulingGroup` (api/task.py, named_group; muster's own pods also by their
owner, as muster's controller names PodGroups). Pods of any scheduler that sit on a node
still count for that node's room.

`Owners` keeps the rule applied as pods come and go: it counts, per PodGroup, the pods of
each side that name it, and when the first or the last of a side comes or goes it asks the
rule again and moves the PodGroup in or out of the World's jobs. Another scheduler's
PodGroup is kept aside, never scheduled, reported on or counted in a queue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.api import wire
from scheduler.api.job import JobInfo
from scheduler.api.names import SCHEDULER_NAME_ANNOTATION
from scheduler.api.native import NativePodGroup, QueueSource, native_queue
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.task import TaskInfo

if TYPE_CHECKING:
    from scheduler.cache.world import World


@dataclass(frozen=True, slots=True)
class Ownership:
    """The scheduler names muster serves and what it does with PodGroups that have no pods."""

    scheduler_names: frozenset[str]
    claim_without_pods: bool = True

    def owns(
        self,
        annotations: Mapping[str, str],
        our_pods: int,
        their_pods: int,
        *,
        native: bool = False,
    ) -> bool:
        """Whether a PodGroup with these annotations and members is muster's (`native`: a
        native PodGroup, never claimed by default)."""
        if our_pods:
            return True
        if their_pods:
            return False
        named = annotations.get(SCHEDULER_NAME_ANNOTATION)
        if named:
            return named in self.scheduler_names
        return self.claim_without_pods and not native


class Owners:
    """Which PodGroups of a World are muster's jobs, kept as their pods come and go."""

    def __init__(self, world: World, rule: Ownership) -> None:
        self.world = world
        self.rule = rule
        # Which PodGroup each pod names, and whether the pod is muster's (by uid); and per
        # PodGroup, how many pods of muster's and of other schedulers name it.
        self._membership: dict[str, tuple[str, bool]] = {}
        self._members: dict[str, list[int]] = {}

    def owns(self, key: str, group: wire.PodGroup | NativePodGroup) -> bool:
        """Whether PodGroup `key` (a gang key) is muster's, with the pods that name it now."""
        ours, theirs = self._members.get(key, (0, 0))
        if isinstance(group, NativePodGroup):
            return self.rule.owns(group.annotations, ours, theirs, native=True)
        return self.rule.owns(group.metadata.annotations, ours, theirs)

    def set_membership(self, uid: str, key: str, *, ours: bool) -> None:
        """Pod `uid` names PodGroup `key` ("" for none) and is, or is not, muster's."""
        previous = self._membership.get(uid)
        now = (key, ours) if key else None
        if previous == now:
            return
        if previous is not None:
            del self._membership[uid]
            left, was_ours = previous
            counts = self._members[left]
            side = 0 if was_ours else 1
            counts[side] -= 1
            if counts == [0, 0]:
                del self._members[left]
            if not counts[side]:  # the last of its side: the PodGroup may change hands
                self._recheck(left)
        if now is not None:
            self._membership[uid] = now
            counts = self._members.setdefault(key, [0, 0])
            side = 0 if ours else 1
            counts[side] += 1
            if counts[side] == 1:  # the first of its side
                self._recheck(key)

    def adopt(self, key: str, group: wire.PodGroup | NativePodGroup, *, spec_changed: bool) -> None:
        """Make (or remake) the job of a PodGroup of ours, its members and orphans in it."""
        world = self.world
        live = world.live
        old = live.jobs.get(key)
        members = list(old.tasks.values()) if old is not None else []
        members.extend(t for t in live.orphans.values() if t.job == key)
        if isinstance(group, NativePodGroup):
            job = self._native_job(group, members)
        else:
            job = JobInfo.read(
                group, live.priority_of(group.spec.priority_class_name), world.default_queue
            )
        if job.invalid is not None:
            world.invalid[("PodGroup", key)] = job.invalid
        else:
            live.resolve_priority(job)
            world.invalid.pop(("PodGroup", key), None)
        if spec_changed:
            live.failures.pop(key, None)
        if job.phase not in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE):
            live.admitted_at.pop(key, None)
        live.jobs[key] = job
        for task in members:
            live.orphans.pop(task.uid, None)
            job.add_task(task)

    def native_queue(
        self, group: NativePodGroup, members: Iterable[TaskInfo]
    ) -> tuple[str, QueueSource]:
        """The queue of a native PodGroup with these members, and the step of its chain that
        named it (api/native.py)."""
        world = self.world
        workload = (
            world.workloads.get(f"{group.namespace}/{group.workload}") if group.workload else None
        )
        return native_queue(
            group,
            workload,
            (task.queue_annotation for task in members),
            world.namespace_queues.get(group.namespace, ""),
            world.default_queue,
        )

    def _native_job(self, group: NativePodGroup, members: list[TaskInfo]) -> JobInfo:
        """The job of a native PodGroup, in the queue its chain names."""
        queue, source = self.native_queue(group, members)
        priority = (
            group.priority
            if group.priority is not None
            else self.world.live.priority_of(group.priority_class_name)
        )
        return JobInfo.read_native(group, priority, queue, source)

    def disown(self, key: str) -> None:
        """A PodGroup is not (or no longer) ours: no job, nothing kept about it."""
        if key not in self.world.live.jobs:
            return
        self.world.drop_job(key)

    def _recheck(self, key: str) -> None:
        """The pods naming PodGroup `key` changed side: it may have become ours or theirs."""
        world = self.world
        group: wire.PodGroup | NativePodGroup | None = world.podgroups.get(key)
        if group is None:
            group = world.native_podgroups.get(key)
        if group is None:
            return
        if not self.owns(key, group):
            self.disown(key)
        elif key not in world.live.jobs:
            world.generation += 1
            self.adopt(key, group, spec_changed=True)
