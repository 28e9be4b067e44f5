"""World: the cluster as the watches describe it, kept up to date event by event.

No I/O and no clock (the caller says when a session runs): events in, snapshots out.
Each session gets `snapshot()`, a copy it may change freely; the world itself changes
only through watch events and the binder's assumptions (a pod is counted on its node
from the moment its bind is sent, as kube-scheduler assumes pods, so the next session
cannot place it twice while the watch event is on its way). A cached task changes status
(and node) only through `ClusterSnapshot.set_task_status`, which keeps its job's and
nodes' figures right; a record from a new event gets its status before it is indexed.

The world keeps the jobs the last sessions left settled (framework/settled.py) until
something that could move them changes: an event about the job itself (its PodGroup, its
pods, a bind of its pods) unsettles that job; a change to the cluster's room or rules (a
node, a pod leaving a node, a queue, a policy object, a PodGroup's spec going or changing)
or to a gang holding room unsettles them all. A session over a snapshot with settled jobs
shares them uncopied (ClusterSnapshot.clone_for_session); every WHOLE_SESSION_SECONDS the
snapshot settles nothing, so the clock's rules are never later than that.

Only muster's own PodGroups become jobs (cache/ownership.py says whose a PodGroup is):
the World counts, per PodGroup, the pods of muster and of other schedulers that name it,
and moves a PodGroup in or out of the jobs as that changes. Another scheduler's PodGroup is
kept aside, never scheduled, reported on or counted in a queue; its pods are never
pending work, and count only on the node they sit on.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Any

from scheduler.api import wire
from scheduler.api.budgets import DisruptionBudget, budget_from_wire
from scheduler.api.errors import InvalidObject
from scheduler.api.hypernode import HyperNode, HyperNodeInfo
from scheduler.api.job import JobInfo, PodGroupPhase
from scheduler.api.names import DEFAULT_QUEUE, DEFAULT_SCHEDULER_NAME, GROUP_NAME_ANNOTATION
from scheduler.api.node import NodeImages, NodeInfo
from scheduler.api.provisioning import (
    ProvisioningRequest,
    ScaleUpRequest,
    read_request,
    requests_by_podgroup,
)
from scheduler.api.queue import QueueInfo
from scheduler.api.snapshot import (
    ClusterSnapshot,
    PlacementFailures,
    PriorityClassInfo,
    SettledJob,
    SettledPart,
    SettledTotals,
    StorageView,
    add_task,
    shadow_key,
)
from scheduler.api.task import (
    BOUND_STATUSES,
    TERMINAL_STATUSES,
    TaskInfo,
    TaskStatus,
    pod_digest,
)
from scheduler.cache.ownership import Ownership
from scheduler.framework.decisions import SessionResult
from scheduler.framework.settled import WHOLE_SESSION_SECONDS

log = logging.getLogger(__name__)


class World:
    """Records of every object scheduling needs, indexed for incremental updates."""

    def __init__(
        self,
        scheduler_names: frozenset[str] = frozenset({DEFAULT_SCHEDULER_NAME}),
        default_queue: str = DEFAULT_QUEUE,
        *,
        claim_podgroups_without_pods: bool = True,
        partitioned: bool = False,
    ) -> None:
        self.scheduler_names = scheduler_names
        self.default_queue = default_queue
        self.ownership = Ownership(scheduler_names, claim_podgroups_without_pods)
        # Whether it holds one partition's nodes and queues (api/partition.py): then a gang
        # of a queue it does not hold, or of no PodGroup yet, is another instance's.
        self.partitioned = partitioned
        self.live = ClusterSnapshot()
        self.tasks: dict[str, TaskInfo] = {}
        # Pods that sit on a node we have not seen yet, by node name.
        self._waiting_for_node: dict[str, dict[str, TaskInfo]] = {}
        # Every PodGroup, muster's or not (only muster's are jobs in `live`).
        self._podgroups: dict[str, wire.PodGroup] = {}
        # Which PodGroup each pod names, and whether the pod is muster's (by uid); and per
        # PodGroup, how many pods of muster's and of other schedulers name it.
        self._membership: dict[str, tuple[str, bool]] = {}
        self._members: dict[str, list[int]] = {}
        # Objects that could not be read, by kind and key.
        self._invalid: dict[tuple[str, str], InvalidObject] = {}
        # Bumped by every change from the API server (and by failed binds and evictions),
        # not by the binder's own assumptions: a session over an unchanged world would
        # decide nothing new, so the loop may skip it.
        self.generation = 0
        # Bumped by changes that only move what statuses report (a pod going Running,
        # a PodGroup's status): worth a session now and then, not every period.
        self.status_generation = 0
        # Evictions sent whose watch event has not come yet: uid -> status before.
        self._releasing: dict[str, TaskStatus] = {}
        # Storage objects by kind ("claims" keyed namespace/name, the others by name), and
        # the read-only view sessions share, rebuilt only after one of them changed.
        self._storage: dict[str, dict[str, Any]] = {
            "claims": {},
            "volumes": {},
            "classes": {},
            "csinodes": {},
        }
        self._storage_view: StorageView | None = None
        # HyperNodes by name, and the read-only mapping sessions share, rebuilt only after
        # one of them changed (as storage's).
        self._hypernodes: dict[str, HyperNodeInfo] = {}
        self._hypernodes_view: Mapping[str, HyperNodeInfo] | None = None
        # PodDisruptionBudgets by "namespace/name", and the per-namespace view sessions
        # share, rebuilt only after one of them changed.
        self._budgets: dict[str, DisruptionBudget] = {}
        self._budgets_view: Mapping[str, tuple[DisruptionBudget, ...]] | None = None
        # Per preemptor (job key): why the Eviction API last refused its evictions.
        self._refusals: dict[str, str] = {}
        # Each HyperNode's status.nodeCount as last seen (what a session compares against).
        self._hypernode_counts: dict[str, int | None] = {}
        # Jobs the last session left settled and nothing moved since; the gangs it held
        # room for; and when the last snapshot that settled nothing was taken (epoch s).
        self._settled: dict[str, SettledJob] = {}
        # What each settled job adds to its queue's figures, and those figures summed.
        self._settled_parts: dict[str, SettledPart] = {}
        self._settled_totals: dict[str, SettledTotals] = {}
        self._holders: frozenset[str] = frozenset()
        self._whole_at = 0.0
        # muster's ProvisioningRequests by "namespace/name", and the per-PodGroup view
        # sessions share, rebuilt only after one of them changed.
        self._scale_up_requests: dict[str, ScaleUpRequest] = {}
        self._scale_up_view: Mapping[str, tuple[ScaleUpRequest, ...]] | None = None

    # Snapshots ---------------------------------------------------------------
    def snapshot(self, now: float = 0.0) -> ClusterSnapshot:
        """A copy for one session that runs at wall-clock time `now` (epoch seconds): the
        settled jobs shared, unless the last whole snapshot is WHOLE_SESSION_SECONDS old."""
        if self._settled and now - self._whole_at < WHOLE_SESSION_SECONDS:
            totals = {queue: total.copy() for queue, total in self._settled_totals.items()}
            copy = self.live.clone_for_session(MappingProxyType(dict(self._settled)), totals)
        else:
            self._unsettle()
            self._whole_at = now
            copy = self.live.clone()
        copy.invalid = list(self._invalid.values())
        if self.partitioned:
            copy.jobs = {key: job for key, job in copy.jobs.items() if job.queue in copy.queues}
            copy.orphans = {}
            copy.invalid = [e for e in copy.invalid if e.kind != "PodGroup" or e.name in copy.jobs]
        copy.now = now
        copy.storage = self.storage()
        copy.hypernodes = self.hypernodes()
        copy.budgets = self.budgets()
        copy.eviction_refusals = MappingProxyType(dict(self._refusals))
        copy.hypernode_counts = dict(self._hypernode_counts)
        copy.scale_up_requests = self.scale_up_requests()
        return copy

    def storage(self) -> StorageView:
        """The storage objects as sessions read them (copied once per change, not per session)."""
        if self._storage_view is None:
            stores = self._storage
            self._storage_view = StorageView(
                claims=MappingProxyType(dict(stores["claims"])),
                volumes=MappingProxyType(dict(stores["volumes"])),
                classes=MappingProxyType(dict(stores["classes"])),
                csinodes=MappingProxyType(dict(stores["csinodes"])),
            )
        return self._storage_view

    def hypernodes(self) -> Mapping[str, HyperNodeInfo]:
        """The HyperNodes as sessions read them (copied once per change, not per session)."""
        if self._hypernodes_view is None:
            self._hypernodes_view = MappingProxyType(dict(self._hypernodes))
        return self._hypernodes_view

    def budgets(self) -> Mapping[str, tuple[DisruptionBudget, ...]]:
        """The PodDisruptionBudgets by namespace, as sessions read them."""
        if self._budgets_view is None:
            by_namespace: dict[str, list[DisruptionBudget]] = {}
            for budget in self._budgets.values():
                by_namespace.setdefault(budget.namespace, []).append(budget)
            self._budgets_view = MappingProxyType(
                {namespace: tuple(found) for namespace, found in by_namespace.items()}
            )
        return self._budgets_view

    def scale_up_requests(self) -> Mapping[str, tuple[ScaleUpRequest, ...]]:
        """muster's ProvisioningRequests by PodGroup key, as sessions read them."""
        if self._scale_up_view is None:
            self._scale_up_view = MappingProxyType(
                requests_by_podgroup(self._scale_up_requests.values())
            )
        return self._scale_up_view

    def record_session(self, result: SessionResult, now: float) -> None:
        """Keep what the next sessions need from this one: nominations, placement
        failures (for backoff), and when jobs were admitted or sent back."""
        live = self.live
        self._settle(result.settled)
        self._holders = frozenset(hold.job for hold in result.holds)
        live.nominated = frozenset(result.nominated)
        for key, placed in result.attempts.items():
            if placed:
                live.failures.pop(key, None)
                continue
            previous = live.failures.get(key)
            live.failures[key] = PlacementFailures(previous.count + 1 if previous else 1, now)
        for key in result.admitted:
            live.admitted_at.setdefault(key, now)
            live.timed_out_at.pop(key, None)
        for key in result.dequeued:
            live.admitted_at.pop(key, None)
            live.timed_out_at[key] = now

    def _room_freed(self) -> None:
        # Like kube-scheduler moving pods out of backoff on cluster events: a gang that
        # failed is retried at once when room appears, not after its backoff.
        self._unsettle()
        if self.live.failures:
            self.live.failures.clear()

    def _settle(self, settled: Mapping[str, SettledJob]) -> None:
        """The jobs a session left settled replace those before; their queues' totals
        move by the jobs that came and went."""
        parts = self._settled_parts
        for key in self._settled.keys() - settled.keys():
            self._count_settled(parts.pop(key), -1)
        kept: dict[str, SettledJob] = {}
        for key, known in settled.items():
            job = self.live.jobs.get(key)
            if job is None:
                continue
            kept[key] = known
            if key not in parts:
                part = parts[key] = SettledPart.of(job, known)
                self._count_settled(part, 1)
        self._settled = kept

    def _count_settled(self, part: SettledPart, sign: int) -> None:
        total = self._settled_totals.get(part.queue)
        if total is None:
            total = self._settled_totals[part.queue] = SettledTotals()
        total.count(part, sign)

    def _unsettle(self) -> None:
        """The cluster's room or rules changed: no job stays settled."""
        self._settled.clear()
        self._settled_parts.clear()
        self._settled_totals.clear()

    def _touch(self, job: str) -> None:
        """An event about the job itself: it is settled no more (nor is anything, when it
        held room for starving: the next gang to hold is chosen anew)."""
        if job in self._holders:
            self._unsettle()
        if self._settled.pop(job, None) is not None:
            self._count_settled(self._settled_parts.pop(job), -1)

    def counts(self) -> dict[str, int]:
        """How many objects of each kind are cached (for metrics)."""
        return {
            "pod": len(self.tasks),
            "node": len(self.live.nodes),
            "podgroup": len(self._podgroups),
            "queue": len(self.live.queues),
            "priorityclass": len(self.live.priority_classes),
            "persistentvolumeclaim": len(self._storage["claims"]),
            "persistentvolume": len(self._storage["volumes"]),
            "storageclass": len(self._storage["classes"]),
            "csinode": len(self._storage["csinodes"]),
            "hypernode": len(self._hypernodes),
            "poddisruptionbudget": len(self._budgets),
            "provisioningrequest": len(self._scale_up_requests),
        }

    # Pods ------------------------------------------------------------------
    def keeps(self, pod: wire.Pod) -> bool:
        """Pods that name one of our schedulers, or sit on a node (they use its room)."""
        return pod.spec.scheduler_name in self.scheduler_names or bool(pod.spec.node_name)

    def upsert_pod(self, pod: wire.Pod) -> None:
        """A pod was added or changed."""
        uid = pod.metadata.uid
        key = ("Pod", f"{pod.metadata.namespace}/{pod.metadata.name}")
        ours = pod.spec.scheduler_name in self.scheduler_names
        if not self.keeps(pod):
            self._set_membership(uid, _named_group(pod), ours=False)
            self._forget_pod(uid)
            return
        old = self.tasks.get(uid)
        # A pod seen before: if only its status moved (a kubelet's report), its record is
        # restated rather than read again.
        digest = pod_digest(pod) if old is not None else 0
        if old is not None and old.digest == digest:
            task = old.restated(pod)
        else:
            try:
                task = TaskInfo.from_pod(pod)
            except InvalidObject as error:
                self._invalid[key] = error
                self._set_membership(uid, _named_group(pod), ours=ours)
                self._forget_pod(uid)
                return
            task.digest = digest
            self._invalid.pop(key, None)
        # Before the task is indexed: muster's first pod of a PodGroup makes it a job to join.
        self._set_membership(uid, task.job if ours else _named_group(pod), ours=ours)
        if old is not None:
            self._touch(old.job)
        if old is not None and uid not in self._releasing and _same_placement(old, task):
            # The common event (our bind's echo, Bound -> Running): move it in place. It
            # changes what statuses say (running counts), not what a session can place;
            # our bind's echo changes neither, and asks for no session.
            if not _same_but_bound(old, task):
                self.status_generation += 1
            # Read only when the pod is a victim candidate (minimum runtimes, cooldowns).
            old.started = task.started
            # Our own annotation coming back (framework/scaleup.py): no session needed.
            old.scale_up_request = task.scale_up_request
            if old.status is not task.status:
                self.live.set_task_status(old, task.status)
            return
        self.generation += 1
        if old is not None and _assumed_still_pending(old, task):
            # Our bind is in flight and the server has not caught up: keep the assumption.
            task.status = old.status
            task.node_name = old.node_name
        if old is not None and _holds_room(old) and not _holds_room(task):
            self._room_freed()
        if uid in self._releasing:
            if task.status in (TaskStatus.RUNNING, TaskStatus.BOUND):
                # Our eviction is in flight: the pod's room is already going.
                task.status = TaskStatus.RELEASING
            else:
                del self._releasing[uid]
        self._remove(uid)
        self._add(task)
        self._touch(task.job)

    def delete_pod(self, uid: str) -> None:
        """A pod is gone."""
        self._set_membership(uid, "", ours=False)
        self._forget_pod(uid)

    def _forget_pod(self, uid: str) -> None:
        """No task for this pod any more (gone, or neither ours nor on a node)."""
        self.generation += 1
        task = self.tasks.get(uid)
        if task is not None:
            self._touch(task.job)
            if _holds_room(task):
                self._room_freed()
        self._releasing.pop(uid, None)
        self._remove(uid)

    def _remove(self, uid: str) -> None:
        task = self.tasks.pop(uid, None)
        if task is None:
            return
        live = self.live
        if task.node_name:
            node = live.nodes.get(task.node_name)
            if node is not None:
                node.remove_task(task)
            else:
                self._waiting_for_node.get(task.node_name, {}).pop(uid, None)
        live.orphans.pop(uid, None)
        job = live.jobs.get(task.job)
        if job is not None:
            job.remove_task(task)
            if job.shadow and not job.tasks:
                del live.jobs[job.key]

    def _add(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        placed = task.node_name and task.status not in TERMINAL_STATUSES
        if placed and task.node_name not in self.live.nodes:
            self._waiting_for_node.setdefault(task.node_name, {})[task.uid] = task
        add_task(self.live, task, self.scheduler_names, self.default_queue)

    # The binder's assumptions ------------------------------------------------
    def assume_bound(self, uid: str, node_name: str) -> None:
        """A bind was sent: count the pod on its node now (status Binding)."""
        task = self.tasks.get(uid)
        if task is None or task.node_name:
            return
        self._touch(task.job)
        self.live.set_task_status(task, TaskStatus.BINDING, node_name=node_name)
        if node_name not in self.live.nodes:
            # A node not seen yet: the pod is counted on it when it comes.
            self._waiting_for_node.setdefault(node_name, {})[uid] = task

    def assume_releasing(self, uid: str) -> None:
        """An eviction was sent: the pod's room is going (status Releasing) from now on,
        so the next session does not choose victims again for the same preemptor."""
        task = self.tasks.get(uid)
        if task is None or task.status not in (TaskStatus.RUNNING, TaskStatus.BOUND):
            return
        self._touch(task.job)
        self._releasing[uid] = task.status
        self.live.set_task_status(task, TaskStatus.RELEASING)

    def forget_releasing(self, uid: str) -> None:
        """An eviction failed: the pod keeps its room."""
        self.generation += 1
        self._unsettle()
        previous = self._releasing.pop(uid, None)
        task = self.tasks.get(uid)
        if previous is None or task is None or task.status is not TaskStatus.RELEASING:
            return
        self.live.set_task_status(task, previous)

    def eviction_refused(self, preemptor: str, why: str, now: float) -> None:
        """A PodDisruptionBudget refused the evictions made for a gang at `now`: none was
        sent; its condition says why until evictions go for it again, and it backs off as
        a gang that failed to place (a budget does not change every period)."""
        self.generation += 1
        self._unsettle()
        self._refusals[preemptor] = why
        # Its pipelined room is gone with the evictions: not served first any more.
        self.live.nominated = self.live.nominated - {preemptor}
        previous = self.live.failures.get(preemptor)
        self.live.failures[preemptor] = PlacementFailures(
            previous.count + 1 if previous else 1, now
        )

    def evictions_sent(self, preemptor: str) -> None:
        """The Eviction API took the evictions made for a gang: its last refusal is history."""
        self._refusals.pop(preemptor, None)

    def forget_bound(self, uid: str) -> None:
        """A bind failed: the pod is pending again (its room on the node is free again)."""
        self.generation += 1
        self._unsettle()
        task = self.tasks.get(uid)
        if task is None or task.status is not TaskStatus.BINDING:
            return
        self._waiting_for_node.get(task.node_name, {}).pop(uid, None)
        self.live.set_task_status(task, TaskStatus.PENDING, node_name="")

    def confirm_bound(self, uid: str) -> None:
        """A bind succeeded: the pod stays on its node as Bound until the watch says more."""
        task = self.tasks.get(uid)
        if task is None or task.status is not TaskStatus.BINDING:
            return
        self._touch(task.job)
        self.live.set_task_status(task, TaskStatus.BOUND)

    # Nodes -------------------------------------------------------------------
    def upsert_node(self, node: wire.Node) -> None:
        """A node was added or changed (a status written again with nothing a session
        reads changed, as kubelets do every few minutes, changes nothing)."""
        name = node.metadata.name
        try:
            info = NodeInfo.from_node(node)
        except InvalidObject as error:
            self.generation += 1
            self._unsettle()
            self._invalid[("Node", name)] = error
            self.delete_node(name)
            return
        old = self.live.nodes.get(name)
        if old is not None and _same_node(old, info):
            return
        self.generation += 1
        self._unsettle()
        self._invalid.pop(("Node", name), None)
        tasks = list(old.tasks.values()) if old is not None else []
        tasks.extend(self._waiting_for_node.pop(name, {}).values())
        self.live.nodes[name] = info
        for task in tasks:
            info.add_task(task)
        if old is None or old.allocatable != info.allocatable or old.unschedulable:
            self._room_freed()

    def delete_node(self, name: str) -> None:
        """A node is gone; its pods wait for it to come back (or for their own deletion)."""
        self.generation += 1
        self._unsettle()
        node = self.live.nodes.pop(name, None)
        if node is not None and node.tasks:
            self._waiting_for_node.setdefault(name, {}).update(node.tasks)

    # PodGroups ---------------------------------------------------------------
    def upsert_podgroup(self, group: wire.PodGroup) -> None:
        """A PodGroup was added or changed: its tasks move to the new record. Another
        scheduler's PodGroup is kept aside, not made a job."""
        key = f"{group.metadata.namespace}/{group.metadata.name}"
        previous = self._podgroups.get(key)
        self._podgroups[key] = group
        if not self._owns(key, group):
            self._disown(key)
            return
        same = previous is not None and _same_request(previous, group)
        if same and key in self.live.jobs:
            # Mostly our own status writes coming back: they change no decision.
            self.status_generation += 1
        else:
            self.generation += 1
            if previous is not None:
                # What it reserves or asks of its queue moved: others may fit now.
                self._unsettle()
        self._touch(key)
        self._adopt(key, group, spec_changed=not same)

    def is_ours(self, namespace: str, name: str) -> bool:
        """Whether the PodGroup namespace/name is cached and muster's (cache/ownership.py)."""
        job = self.live.jobs.get(f"{namespace}/{name}")
        return job is not None and not job.shadow

    def status_unwritten(self) -> None:
        """A status write failed: a status session (at most one a second) writes it again."""
        self.status_generation += 1

    def is_pending(self, uid: str) -> bool:
        """Whether pod `uid` is cached and waits for a node (not bound, nor being bound)."""
        task = self.tasks.get(uid)
        return task is not None and task.status is TaskStatus.PENDING

    def _owns(self, key: str, group: wire.PodGroup) -> bool:
        ours, theirs = self._members.get(key, (0, 0))
        return self.ownership.owns(group.metadata.annotations, ours, theirs)

    def _adopt(self, key: str, group: wire.PodGroup, *, spec_changed: bool) -> None:
        """Make (or remake) the job of a PodGroup of ours, its members and orphans in it."""
        live = self.live
        job = JobInfo.read(
            group, live.priority_of(group.spec.priority_class_name), self.default_queue
        )
        if job.invalid is not None:
            self._invalid[("PodGroup", key)] = job.invalid
        else:
            live.resolve_priority(job)
            self._invalid.pop(("PodGroup", key), None)
        old = live.jobs.get(key)
        if spec_changed:
            live.failures.pop(key, None)
        if job.phase not in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE):
            live.admitted_at.pop(key, None)
        members = list(old.tasks.values()) if old is not None else []
        members.extend(t for t in live.orphans.values() if t.job == key)
        live.jobs[key] = job
        for task in members:
            live.orphans.pop(task.uid, None)
            job.add_task(task)

    def _disown(self, key: str) -> None:
        """A PodGroup is not (or no longer) ours: no job, nothing kept about it."""
        if key not in self.live.jobs:
            return
        self._drop_job(key)

    def _recheck_owner(self, key: str) -> None:
        """The pods naming PodGroup `key` changed side: it may have become ours or theirs."""
        group = self._podgroups.get(key)
        if group is None:
            return
        if not self._owns(key, group):
            self._disown(key)
        elif key not in self.live.jobs:
            self.generation += 1
            self._adopt(key, group, spec_changed=True)

    def _set_membership(self, uid: str, key: str, *, ours: bool) -> None:
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
                self._recheck_owner(left)
        if now is not None:
            self._membership[uid] = now
            counts = self._members.setdefault(key, [0, 0])
            side = 0 if ours else 1
            counts[side] += 1
            if counts[side] == 1:  # the first of its side
                self._recheck_owner(key)

    def delete_podgroup(self, namespace: str, name: str) -> None:
        """A PodGroup is gone: its pods wait for it as orphans."""
        key = f"{namespace}/{name}"
        self._podgroups.pop(key, None)
        self._refusals.pop(key, None)
        self._drop_job(key)

    def _drop_job(self, key: str) -> None:
        self.generation += 1
        self._unsettle()
        self._invalid.pop(("PodGroup", key), None)
        for table in (self.live.failures, self.live.admitted_at, self.live.timed_out_at):
            table.pop(key, None)
        job = self.live.jobs.pop(key, None)
        if job is not None:
            for task in job.tasks.values():
                self.live.orphans[task.uid] = task

    # PodDisruptionBudgets ----------------------------------------------------
    def upsert_budget(self, pdb: wire.PodDisruptionBudget) -> None:
        """A PodDisruptionBudget was added or changed (its status, mostly: the disruption
        controller recounts it as pods come and go)."""
        key = f"{pdb.metadata.namespace}/{pdb.metadata.name}"
        budget = budget_from_wire(pdb)
        if self._budgets.get(key) == budget:
            return
        self.generation += 1
        self._unsettle()
        self._budgets[key] = budget
        self._budgets_view = None

    def delete_budget(self, key: str) -> None:
        """A PodDisruptionBudget ("namespace/name") is gone."""
        if self._budgets.pop(key, None) is None:
            return
        self.generation += 1
        self._unsettle()
        self._budgets_view = None

    # ProvisioningRequests ----------------------------------------------------
    def upsert_provisioning_request(self, obj: ProvisioningRequest) -> None:
        """A ProvisioningRequest was added or changed (another client's is not kept)."""
        key = f"{obj.metadata.namespace}/{obj.metadata.name}"
        request = read_request(obj)
        if request is None:
            self.delete_provisioning_request(key)
            return
        if self._scale_up_requests.get(key) == request:
            return
        self.generation += 1
        self._unsettle()
        self._scale_up_requests[key] = request
        self._scale_up_view = None

    def delete_provisioning_request(self, key: str) -> None:
        """A ProvisioningRequest ("namespace/name") is gone."""
        if self._scale_up_requests.pop(key, None) is None:
            return
        self.generation += 1
        self._unsettle()
        self._scale_up_view = None

    # Namespaces --------------------------------------------------------------
    def upsert_namespace(self, namespace: wire.Namespace) -> None:
        """A Namespace was added or changed: pod affinity's namespaceSelector reads its labels."""
        name = namespace.metadata.name
        labels = namespace.metadata.labels
        if self.live.namespaces.get(name) == labels:
            return
        self.generation += 1
        self._unsettle()
        # Copied on write: snapshots share the mapping, sessions only read it.
        self.live.namespaces = {**self.live.namespaces, name: dict(labels)}

    def delete_namespace(self, name: str) -> None:
        """A Namespace is gone."""
        if name not in self.live.namespaces:
            return
        self.generation += 1
        self._unsettle()
        self.live.namespaces = {k: v for k, v in self.live.namespaces.items() if k != name}

    # Queues and priority classes ---------------------------------------------
    def upsert_queue(self, queue: wire.Queue) -> None:
        """A Queue was added or changed."""
        self.generation += 1
        self._unsettle()
        name = queue.metadata.name
        try:
            self.live.queues[name] = QueueInfo.from_queue(queue)
            self._invalid.pop(("Queue", name), None)
        except InvalidObject as error:
            self._invalid[("Queue", name)] = error
            self.live.queues.pop(name, None)

    def delete_queue(self, name: str) -> None:
        """A Queue is gone."""
        self.generation += 1
        self._unsettle()
        self.live.queues.pop(name, None)
        self._invalid.pop(("Queue", name), None)

    def upsert_priority_class(self, pc: wire.PriorityClass) -> None:
        """A PriorityClass was added or changed: job priorities follow."""
        self.generation += 1
        self._unsettle()
        name = pc.metadata.name
        self.live.priority_classes[name] = PriorityClassInfo(
            name, pc.value, pc.global_default, pc.preemption_policy
        )
        self._refresh_job_priorities()

    def delete_priority_class(self, name: str) -> None:
        """A PriorityClass is gone."""
        self.generation += 1
        self._unsettle()
        self.live.priority_classes.pop(name, None)
        self._refresh_job_priorities()

    # Storage: PVCs, PVs, StorageClasses, CSINodes -----------------------------
    def upsert_claim(self, claim: wire.PersistentVolumeClaim) -> None:
        """A PersistentVolumeClaim was added or changed."""
        self._store("claims", f"{claim.metadata.namespace}/{claim.metadata.name}", claim)

    def claim(self, namespace: str, name: str) -> wire.PersistentVolumeClaim | None:
        """A PersistentVolumeClaim as the cache holds it now."""
        found: wire.PersistentVolumeClaim | None = self._storage["claims"].get(
            f"{namespace}/{name}"
        )
        return found

    def delete_claim(self, key: str) -> None:
        """A PersistentVolumeClaim ("namespace/name") is gone."""
        self._store("claims", key, None)

    def upsert_volume(self, volume: wire.PersistentVolume) -> None:
        """A PersistentVolume was added or changed."""
        self._store("volumes", volume.metadata.name, volume)

    def delete_volume(self, name: str) -> None:
        """A PersistentVolume is gone."""
        self._store("volumes", name, None)

    def upsert_storage_class(self, storage_class: wire.StorageClass) -> None:
        """A StorageClass was added or changed."""
        self._store("classes", storage_class.metadata.name, storage_class)

    def delete_storage_class(self, name: str) -> None:
        """A StorageClass is gone."""
        self._store("classes", name, None)

    def upsert_csinode(self, csinode: wire.CSINode) -> None:
        """A CSINode was added or changed."""
        self._store("csinodes", csinode.metadata.name, csinode)

    def delete_csinode(self, name: str) -> None:
        """A CSINode is gone."""
        self._store("csinodes", name, None)

    # HyperNodes ----------------------------------------------------------------
    def upsert_hypernode(self, hypernode: HyperNode) -> None:
        """A HyperNode was added or changed; one muster cannot use is reported, not used."""
        name = hypernode.metadata.name
        key = ("HyperNode", name)
        self._hypernode_counts[name] = hypernode.status.node_count
        try:
            info = HyperNodeInfo.from_wire(hypernode)
        except InvalidObject as error:
            # A session reports it (snapshot.invalid): worth one even when nothing else moved.
            self.generation += 1
            self._unsettle()
            self._invalid[key] = error
            self._forget_hypernode(name)
            return
        was_invalid = self._invalid.pop(key, None) is not None
        if self._hypernodes.get(name) == info:
            # Mostly status.nodeCount written (by muster or Volcano's controller): no
            # decision changes.
            if was_invalid:
                self.generation += 1
                self._unsettle()
            return
        self._hypernodes[name] = info
        self._topology_changed()

    def delete_hypernode(self, name: str) -> None:
        """A HyperNode is gone."""
        self._hypernode_counts.pop(name, None)
        if self._invalid.pop(("HyperNode", name), None) is not None:
            self.generation += 1
            self._unsettle()
        self._forget_hypernode(name)

    def _forget_hypernode(self, name: str) -> None:
        if self._hypernodes.pop(name, None) is not None:
            self._topology_changed()

    def _topology_changed(self) -> None:
        self.generation += 1
        self._hypernodes_view = None
        # A gang that waited for a domain with room may fit the new topology: retry it now.
        self._room_freed()

    def _store(self, kind: str, key: str, obj: Any) -> None:
        self.generation += 1
        self._unsettle()
        table = self._storage[kind]
        if obj is None:
            if table.pop(key, None) is None:
                return
        else:
            table[key] = obj
        self._storage_view = None
        # As kube-scheduler requeues pods on PV and PVC events: a pod that waited for a
        # claim to be bound or a volume to appear is tried again at once.
        self._room_freed()

    def _refresh_job_priorities(self) -> None:
        for job in self.live.jobs.values():
            if not job.shadow and job.invalid is None:
                self.live.resolve_priority(job)


def _same_request(old: wire.PodGroup, new: wire.PodGroup) -> bool:
    """Whether two versions of a PodGroup ask the same of a session: spec, and the labels
    and annotations it reads (waiting time, preemptable); a status write changes neither."""
    return (
        old.spec == new.spec
        and old.metadata.annotations == new.metadata.annotations
        and old.metadata.labels == new.metadata.labels
    )


def _same_node(old: NodeInfo, new: NodeInfo) -> bool:
    """Whether two records of a node are alike in everything a session reads of it."""
    return (
        old.allocatable == new.allocatable
        and old.max_pods == new.max_pods
        and old.labels == new.labels
        and old.taints == new.taints
        and old.unschedulable == new.unschedulable
        and old.ready == new.ready
        and _same_images(old.images, new.images)
    )


def _same_images(old: NodeImages | None, new: NodeImages | None) -> bool:
    if old is None or new is None:
        return old is new
    return old.names == new.names and old.sizes == new.sizes


def _named_group(pod: wire.Pod) -> str:
    """The PodGroup ("namespace/name") a pod names in its group annotation, or ""."""
    group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION)
    return f"{pod.metadata.namespace}/{group}" if group else ""


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
