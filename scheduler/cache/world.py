"""World: the cluster as the watches describe it, the state every kind's handler keeps current.

No I/O and no clock (the caller says when a session runs): events in, snapshots out. What
an event of each kind changes is that kind's handler (cache/kinds/); the World owns what
they change: the records and their indexes (a pod on its node, in its job or waiting as an
orphan; a pod on a node not seen yet), the objects that could not be read, the generations
that say a session is due, the settled gangs (cache/settled_gangs.py) and whose each
PodGroup is (cache/ownership.py).

Each session gets `snapshot()`, a copy it may change freely; the world itself changes only
through watch events and the binder's and evictor's assumptions (a pod is counted on its node
from the moment its bind is sent, as kube-scheduler assumes pods, so the next session cannot
place it twice while the watch event is on its way). A cached task changes status (and
node) only through `ClusterSnapshot.set_task_status`, which keeps its job's and nodes'
figures right; a record from a new event gets its status before it is indexed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import msgspec

from scheduler.api import dra, wire
from scheduler.api.alike import alike
from scheduler.api.budgets import DisruptionBudget
from scheduler.api.errors import InvalidObject
from scheduler.api.gang_state import HAS_BEEN_READY_PHASES, gang_ready
from scheduler.api.hypernode import HyperNodeInfo
from scheduler.api.names import DEFAULT_QUEUE, DEFAULT_SCHEDULER_NAME
from scheduler.api.native import NativePodGroup, NativeWorkload, QueueSource
from scheduler.api.provisioning import ScaleUpRequest, requests_by_podgroup
from scheduler.api.resources import Resource
from scheduler.api.snapshot import (
    NO_DEVICES,
    NO_STORAGE,
    ClusterSnapshot,
    DeviceView,
    PlacementFailures,
    StorageView,
    add_task,
)
from scheduler.api.task import TERMINAL_STATUSES, TaskInfo, TaskStatus
from scheduler.cache.bounded import deferred_gangs, with_deferred
from scheduler.cache.ownership import Owners, Ownership
from scheduler.cache.settled_gangs import SettledGangs
from scheduler.cache.table import ReadOnlyTable, Table, read_only
from scheduler.dra import DeviceMemo, claim_from_wire
from scheduler.dra.quota import claim_devices, class_totals
from scheduler.framework.decisions import SessionResult


@dataclass(slots=True)
class AssumedClaim:
    """What the binder wrote, or is writing, into a ResourceClaim before its watch event
    comes back: the allocation (None: the claim was allocated already) and the pods it
    reserved the claim for."""

    allocation: dra.AllocationResult | None
    pods: dict[str, str] = field(default_factory=dict)


def _by_namespace(
    budgets: Mapping[str, DisruptionBudget],
) -> Mapping[str, tuple[DisruptionBudget, ...]]:
    by_namespace: dict[str, list[DisruptionBudget]] = {}
    for budget in budgets.values():
        by_namespace.setdefault(budget.namespace, []).append(budget)
    return MappingProxyType({namespace: tuple(found) for namespace, found in by_namespace.items()})


def _by_podgroup(
    requests: Mapping[str, ScaleUpRequest],
) -> Mapping[str, tuple[ScaleUpRequest, ...]]:
    return MappingProxyType(requests_by_podgroup(requests.values()))


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
        # Whether it holds one partition's nodes and queues (api/partition.py): then a gang
        # of a queue it does not hold, or of no PodGroup yet, is another instance's.
        self.partitioned = partitioned
        # Nodes, jobs, orphans, queues, priority classes, namespaces, and what the last
        # sessions left for the next (failures, admissions, nominations).
        self.live = ClusterSnapshot()
        self.tasks: dict[str, TaskInfo] = {}
        # Pods that sit on a node we have not seen yet, by node name.
        self.waiting_for_node: dict[str, dict[str, TaskInfo]] = {}
        # Every PodGroup, muster's or not (only muster's are jobs in `live`): Volcano's by
        # "namespace/name", the native ones (scheduling.k8s.io) by their gang key.
        self.podgroups: dict[str, wire.PodGroup] = {}
        self.native_podgroups: dict[str, NativePodGroup] = {}
        # Native Workloads by "namespace/name" (the queue their PodGroups may take), and the
        # queue each namespace's annotation names: steps of a native PodGroup's queue chain.
        self.workloads: dict[str, NativeWorkload] = {}
        self.namespace_queues: dict[str, str] = {}
        # The version of each discovered kind the server serves, by plural ("" for none):
        # native PodGroups are read, and their status written, at it.
        self.served_versions: dict[str, str] = {}
        self.owners = Owners(self, Ownership(scheduler_names, claim_podgroups_without_pods))
        # Objects that could not be read, by kind and key.
        self.invalid: dict[tuple[str, str], InvalidObject] = {}
        # Bumped by every change from the API server (and by failed binds and evictions),
        # not by the binder's own assumptions: a session over an unchanged world would
        # decide nothing new, so the loop may skip it.
        self.generation = 0
        # Bumped by changes that only move what statuses report (a pod going Running,
        # a PodGroup's status): worth a session now and then, not every period.
        self.status_generation = 0
        self.settled = SettledGangs()
        # The gangs the last snapshot left to the next session (cache/bounded.py).
        self.deferred: frozenset[str] = frozenset()
        # Evictions sent whose watch event has not come yet: uid -> status before.
        self.releasing: dict[str, TaskStatus] = {}
        # Per preemptor (job key): why the Eviction API last refused its evictions.
        self.refusals: dict[str, str] = {}
        # Storage objects: claims by "namespace/name", the others by name.
        self.claims: ReadOnlyTable[wire.PersistentVolumeClaim] = Table(read_only)
        self.volumes: ReadOnlyTable[wire.PersistentVolume] = Table(read_only)
        self.storage_classes: ReadOnlyTable[wire.StorageClass] = Table(read_only)
        self.csinodes: ReadOnlyTable[wire.CSINode] = Table(read_only)
        self._storage_view = NO_STORAGE
        # DRA: DeviceClasses and ResourceSlices by name, ResourceClaims by "namespace/name";
        # the device memo of scheduler/dra, kept across sessions (a selector's answer for
        # a device is pure); the pods using each claim (uids), whose gangs a change of the
        # claim touches; and the claims the binder wrote but whose event has not come back.
        self.device_classes: ReadOnlyTable[dra.DeviceClass] = Table(read_only)
        self.resource_slices: ReadOnlyTable[dra.ResourceSlice] = Table(read_only)
        self.resource_claims: ReadOnlyTable[dra.ResourceClaim] = Table(read_only)
        self.selector_memo = DeviceMemo()
        # By claim key: the uid of its one pod (most claims: made from a template for it), or
        # a set once several pods use it (a 1-tuple costs a quarter of a set's memory).
        self.claim_users: dict[str, tuple[str] | set[str]] = {}
        self.assumed_claims: dict[str, AssumedClaim] = {}
        # What each claim adds to its queue (`deviceclass/<class>` counts), read once per
        # claim (its spec never changes); the cluster's devices per class, worked out again
        # when classes or slices change.
        self._claim_counts: dict[str, Resource] = {}
        self._shared_counts: dict[tuple[tuple[str, int], ...], Resource] = {}
        self._totals: tuple[object, object, Resource] | None = None
        self._device_view = NO_DEVICES
        self._viewed_claims: Mapping[str, dra.ResourceClaim] | None = None
        self._assumed_version = 0
        self._viewed_assumptions = -1
        self.hypernodes: ReadOnlyTable[HyperNodeInfo] = Table(read_only)
        # Each HyperNode's status.nodeCount as last seen (what a session compares against).
        self.hypernode_counts: dict[str, int | None] = {}
        # PodDisruptionBudgets by "namespace/name", which sessions read by namespace.
        self.budgets = Table(_by_namespace)
        # muster's ProvisioningRequests by "namespace/name", which sessions read by PodGroup.
        self.scale_up_requests = Table(_by_podgroup)

    # Snapshots ---------------------------------------------------------------
    def snapshot(self, now: float = 0.0, *, pending_pods: int = 0) -> ClusterSnapshot:
        """A copy for one session that runs at wall-clock time `now` (epoch seconds): the
        settled jobs shared, unless the last whole snapshot is WHOLE_SESSION_SECONDS old.
        With `pending_pods` (above 0), a bounded session's: the pending gangs past that
        many pending pods are left to the next session, as settled ones (cache/bounded.py)."""
        settled = self.settled
        live = self.live
        if settled.shared_at(now):
            jobs, totals = settled.jobs(), settled.totals()
        else:
            settled.whole(now)
            jobs, totals = MappingProxyType({}), {}
        deferred = {}
        if pending_pods > 0:
            # Of the queues this instance holds (a partition's): another's are not its own.
            ours = {key: job for key, job in live.jobs.items() if job.queue in live.queues}
            kept = set(jobs) | live.nominated | self.scale_up_requests.view().keys()
            deferred = deferred_gangs(ours, pending_pods, kept=kept)
        self.deferred = frozenset(deferred)
        if deferred:
            totals = with_deferred(totals, deferred, live.jobs)
            jobs = MappingProxyType({**jobs, **deferred})
        copy = live.clone_for_session(jobs, totals) if jobs else live.clone()
        copy.invalid = list(self.invalid.values())
        if self.partitioned:
            copy.jobs = {key: job for key, job in copy.jobs.items() if job.queue in copy.queues}
            copy.orphans = {}
            copy.invalid = [e for e in copy.invalid if e.kind != "PodGroup" or e.name in copy.jobs]
        copy.now = now
        copy.storage = self.storage()
        copy.devices = self.devices()
        copy.hypernodes = self.hypernodes.view()
        copy.budgets = self.budgets.view()
        copy.eviction_refusals = MappingProxyType(dict(self.refusals))
        copy.hypernode_counts = dict(self.hypernode_counts)
        copy.scale_up_requests = self.scale_up_requests.view()
        return copy

    def storage(self) -> StorageView:
        """The storage objects as sessions read them (copied once per change, not per session)."""
        claims, volumes = self.claims.view(), self.volumes.view()
        classes, csinodes = self.storage_classes.view(), self.csinodes.view()
        view = self._storage_view
        if not (
            view.claims is claims
            and view.volumes is volumes
            and view.classes is classes
            and view.csinodes is csinodes
        ):
            view = self._storage_view = StorageView(claims, volumes, classes, csinodes)
        return view

    def devices(self) -> DeviceView:
        """The DRA objects as sessions read them, the binder's assumptions applied (copied
        once per change, not per session)."""
        classes, slices = self.device_classes.view(), self.resource_slices.view()
        claims = self.resource_claims.view()
        view = self._device_view
        if (
            view.classes is classes
            and view.slices is slices
            and self._viewed_claims is claims
            and self._viewed_assumptions == self._assumed_version
        ):
            return view
        self._viewed_claims = claims
        self._viewed_assumptions = self._assumed_version
        if self.assumed_claims:
            claims = MappingProxyType(
                {**claims, **{key: self._as_assumed(key) for key in self.assumed_claims}}
            )
        if not (classes or slices or claims):
            view = NO_DEVICES
        else:
            view = DeviceView(classes, slices, claims, self.selector_memo, self._class_totals())
        self._device_view = view
        return view

    def _class_totals(self) -> Resource:
        classes, slices = self.device_classes.view(), self.resource_slices.view()
        known = self._totals
        if known is not None and known[0] is classes and known[1] is slices:
            return known[2]
        # The inventory the next session's allocator reads too (dra/kept.py): decoded once.
        inventory = self.selector_memo.inventory(list(slices.values()), {})
        totals = Resource(
            scalars=class_totals(classes.values(), inventory, self.selector_memo) or None
        )
        self._totals = (classes, slices, totals)
        return totals

    # Devices in queues' requests --------------------------------------------------
    def claim_changed(self, key: str, claim: dra.ResourceClaim | None) -> None:
        """A claim came, changed or went: what it adds to its queue is read again, and the
        requests of the pods that use it follow."""
        self._claim_counts.pop(key, None)
        if claim is not None:
            counts = claim_devices(claim_from_wire(claim)).devices
            self._claim_counts[key] = self._counts_alike(counts)
        self.recount(key)

    def _counts_alike(self, counts: dict[str, int]) -> Resource:
        """The counts as a vector, shared by every claim that asks the same (those of one
        template): read only, never written to (counted_request adds it to a copy)."""
        key = tuple(sorted(counts.items()))
        return alike(self._shared_counts, key, Resource(scalars=counts or None), 1024)

    def counted_request(self, task: TaskInfo) -> Resource:
        """The pod's request with the devices its claims add to its queue: a claim counts
        once, in the pod a template made it for, else in the first of its pods (by name)."""
        devices = task.devices
        if devices is None:
            return task.request
        request = task.request.without_devices()
        counted = None
        for key in devices.claims:
            counts = self._claim_counts.get(key)
            if counts is None or not counts.scalars or not self._counts_in(task, key):
                continue
            if counted is None:
                counted = request.clone()
            counted.add(counts)
        return counted if counted is not None else request

    def _counts_in(self, task: TaskInfo, key: str) -> bool:
        claim = self.resource_claims.get(key)
        if claim is None:
            return False
        owner = next((ref.uid for ref in claim.metadata.owner_references if ref.controller), None)
        if owner is not None:
            return owner == task.uid
        users = [self.tasks[uid] for uid in self.claim_users.get(key, ()) if uid in self.tasks]
        return min((*users, task), key=lambda t: (t.key, t.uid)).uid == task.uid

    def recount(self, key: str) -> None:
        """Give each pod using the claim the request its claims make now (re-indexed where
        it changed)."""
        for uid in sorted(self.claim_users.get(key, ())):
            task = self.tasks.get(uid)
            if task is None:
                continue
            request = self.counted_request(task)
            if request == task.request:
                continue
            self.cluster_changed()
            self.settled.touch(task.job)
            self.remove_task(uid)
            task.set_request(request)
            self.add_task(task)

    def _as_assumed(self, key: str) -> dra.ResourceClaim:
        """The cached claim as the binder's writes will leave it."""
        claim = self.resource_claims.get(key)
        assumed = self.assumed_claims[key]
        if claim is None:
            claim = dra.ResourceClaim()
        status = claim.status
        reserved = list(status.reserved_for)
        known = {ref.uid for ref in reserved}
        reserved.extend(
            dra.ResourceClaimConsumerReference(resource="pods", name=name, uid=uid)
            for uid, name in assumed.pods.items()
            if uid not in known
        )
        allocation = status.allocation or assumed.allocation
        return msgspec.structs.replace(
            claim,
            status=dra.ResourceClaimStatus(allocation=allocation, reserved_for=reserved),
        )

    def record_session(self, result: SessionResult, now: float) -> None:
        """Keep what the next sessions need from this one: the gangs it settled, nominations,
        placement failures (for backoff), and when jobs were admitted or sent back."""
        live = self.live
        # The gangs this session left to the next were not settled by it.
        settled = {k: known for k, known in result.settled.items() if k not in self.deferred}
        self.settled.settle(settled, live.jobs, frozenset(hold.job for hold in result.holds))
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

    def counts(self) -> dict[str, int]:
        """How many objects of each kind are cached (for metrics)."""
        return {
            "pod": len(self.tasks),
            "node": len(self.live.nodes),
            "podgroup": len(self.podgroups),
            "nativepodgroup": len(self.native_podgroups),
            "workload": len(self.workloads),
            "queue": len(self.live.queues),
            "priorityclass": len(self.live.priority_classes),
            "persistentvolumeclaim": len(self.claims),
            "persistentvolume": len(self.volumes),
            "storageclass": len(self.storage_classes),
            "csinode": len(self.csinodes),
            "deviceclass": len(self.device_classes),
            "resourceslice": len(self.resource_slices),
            "resourceclaim": len(self.resource_claims),
            "hypernode": len(self.hypernodes),
            "poddisruptionbudget": len(self.budgets),
            "provisioningrequest": len(self.scale_up_requests),
        }

    # What a change invalidates ---------------------------------------------------
    def cluster_changed(self) -> None:
        """The cluster's room or rules changed: a session is due, and no gang stays settled."""
        self.generation += 1
        self.settled.unsettle()

    def room_freed(self) -> None:
        """Room appeared, or a rule that kept gangs out changed: no gang stays settled, and
        the gangs that failed are tried at once."""
        # Like kube-scheduler moving pods out of backoff on cluster events: a gang that
        # failed is retried at once when room appears, not after its backoff.
        self.settled.unsettle()
        if self.live.failures:
            self.live.failures.clear()

    # Indexes ---------------------------------------------------------------------
    def add_task(self, task: TaskInfo) -> None:
        """Index a pod's record: on its node (or waiting for it), in its job or an orphan."""
        self.tasks[task.uid] = task
        if task.devices is not None:
            for key in task.devices.claims:
                users = self.claim_users.get(key)
                if users is None:
                    self.claim_users[key] = (task.uid,)
                elif isinstance(users, set):
                    users.add(task.uid)
                elif users[0] != task.uid:
                    self.claim_users[key] = {users[0], task.uid}
        placed = task.node_name and task.status not in TERMINAL_STATUSES
        if placed and task.node_name not in self.live.nodes:
            self.waiting_for_node.setdefault(task.node_name, {})[task.uid] = task
        add_task(self.live, task, self.scheduler_names, self.default_queue)

    def remove_task(self, uid: str) -> None:
        """Take a pod's record out of every index (a shadow job it leaves empty goes too)."""
        task = self.tasks.pop(uid, None)
        if task is None:
            return
        if task.devices is not None:
            for key in task.devices.claims:
                users = self.claim_users.get(key)
                if isinstance(users, set):
                    users.discard(uid)
                if users is not None and (not users or users == (uid,)):
                    del self.claim_users[key]
        live = self.live
        if task.node_name:
            node = live.nodes.get(task.node_name)
            if node is not None:
                node.remove_task(task)
            else:
                self.waiting_for_node.get(task.node_name, {}).pop(uid, None)
        live.orphans.pop(uid, None)
        job = live.jobs.get(task.job)
        if job is not None:
            job.remove_task(task)
            if job.shadow and not job.tasks:
                del live.jobs[job.key]

    def drop_job(self, key: str) -> None:
        """PodGroup `key` is gone, or not ours: its job goes and its pods wait as orphans."""
        self.cluster_changed()
        self.invalid.pop(("PodGroup", key), None)
        for table in (self.live.failures, self.live.admitted_at, self.live.timed_out_at):
            table.pop(key, None)
        job = self.live.jobs.pop(key, None)
        if job is not None:
            for task in job.tasks.values():
                self.live.orphans[task.uid] = task

    def requeue(self, keys: Collection[str], step: QueueSource) -> None:
        """Read again the queue of those native PodGroups `keys` of ours whose queue came from
        `step` of their chain or a weaker one (api/native.py, native_queue): what that step
        says changed (a Workload's label, a pod's annotation, the namespace's)."""
        live = self.live
        for key in keys:
            job = live.jobs.get(key)
            group = self.native_podgroups.get(key)
            if job is None or group is None or job.queue_source < step:
                continue
            queue, source = self.owners.native_queue(group, job.tasks.values())
            if queue == job.queue and source == job.queue_source:
                continue
            self.cluster_changed()
            self.owners.adopt(key, group, spec_changed=False)

    # The binder's and the evictor's assumptions --------------------------------
    def assume_bound(self, uid: str, node_name: str) -> None:
        """A bind was sent: count the pod on its node now (status Binding)."""
        task = self.tasks.get(uid)
        if task is None or task.node_name:
            return
        self.settled.touch(task.job)
        self.live.set_task_status(task, TaskStatus.BINDING, node_name=node_name)
        if node_name not in self.live.nodes:
            # A node not seen yet: the pod is counted on it when it comes.
            self.waiting_for_node.setdefault(node_name, {})[uid] = task

    def confirm_bound(self, uid: str) -> None:
        """A bind succeeded: the pod stays on its node as Bound until the watch says more."""
        task = self.tasks.get(uid)
        if task is None or task.status is not TaskStatus.BINDING:
            return
        self.settled.touch(task.job)
        self.live.set_task_status(task, TaskStatus.BOUND)

    def forget_bound(self, uid: str) -> None:
        """A bind failed: the pod is pending again (its room on the node is free again)."""
        self.cluster_changed()
        task = self.tasks.get(uid)
        if task is None or task.status is not TaskStatus.BINDING:
            return
        self.waiting_for_node.get(task.node_name, {}).pop(uid, None)
        self.live.set_task_status(task, TaskStatus.PENDING, node_name="")

    def assume_claimed(
        self, key: str, allocation: dra.AllocationResult | None, uid: str, pod: str
    ) -> None:
        """The binder writes a claim for pod `uid` (named `pod`): its allocation (None: the
        claim keeps its own) and the pod's reservation count from now on, so the next
        session does not promise the devices again while the watch event is on its way."""
        assumed = self.assumed_claims.get(key)
        if assumed is None:
            assumed = self.assumed_claims[key] = AssumedClaim(allocation)
        elif assumed.allocation is None:
            assumed.allocation = allocation
        assumed.pods[uid] = pod
        self._assumed_version += 1

    def forget_claimed(self, key: str, uid: str) -> None:
        """The binder's write of a claim for pod `uid` failed or was given up: what it
        assumed goes, and with it the devices (unless another pod's write assumes them)."""
        assumed = self.assumed_claims.get(key)
        if assumed is None or assumed.pods.pop(uid, None) is None:
            return
        if not assumed.pods:
            del self.assumed_claims[key]
        self._assumed_version += 1
        self.cluster_changed()
        self.room_freed()

    def claim_seen(self, key: str, claim: dra.ResourceClaim | None) -> None:
        """A watch event of a claim: an assumption the server now holds (an allocation and
        the reservations) is the server's from here on."""
        assumed = self.assumed_claims.get(key)
        if assumed is None:
            return
        if claim is None:
            del self.assumed_claims[key]
        else:
            reserved = {ref.uid for ref in claim.status.reserved_for}
            for uid in [uid for uid in assumed.pods if uid in reserved]:
                del assumed.pods[uid]
            if claim.status.allocation is not None and not assumed.pods:
                del self.assumed_claims[key]
        self._assumed_version += 1

    def assume_releasing(self, uid: str) -> None:
        """An eviction was sent: the pod's room is going (status Releasing) from now on,
        so the next session does not choose victims again for the same preemptor."""
        task = self.tasks.get(uid)
        if task is None or task.status not in (TaskStatus.RUNNING, TaskStatus.BOUND):
            return
        self.settled.touch(task.job)
        self.releasing[uid] = task.status
        self.live.set_task_status(task, TaskStatus.RELEASING)

    def forget_releasing(self, uid: str) -> None:
        """An eviction failed: the pod keeps its room."""
        self.cluster_changed()
        previous = self.releasing.pop(uid, None)
        task = self.tasks.get(uid)
        if previous is None or task is None or task.status is not TaskStatus.RELEASING:
            return
        self.live.set_task_status(task, previous)

    def eviction_refused(self, preemptor: str, why: str, now: float) -> None:
        """A PodDisruptionBudget refused the evictions made for a gang at `now`: none was
        sent; its condition says why until evictions go for it again, and it backs off as
        a gang that failed to place (a budget does not change every period)."""
        self.cluster_changed()
        self.refusals[preemptor] = why
        # Its pipelined room is gone with the evictions: not served first any more.
        self.live.nominated = self.live.nominated - {preemptor}
        previous = self.live.failures.get(preemptor)
        self.live.failures[preemptor] = PlacementFailures(
            previous.count + 1 if previous else 1, now
        )

    def evictions_sent(self, preemptor: str) -> None:
        """The Eviction API took the evictions made for a gang: its last refusal is history."""
        self.refusals.pop(preemptor, None)

    def status_unwritten(self) -> None:
        """A status write failed: a status session (at most one a second) writes it again."""
        self.status_generation += 1

    # What the effects ask ----------------------------------------------------------
    def is_ours(self, namespace: str, name: str) -> bool:
        """Whether the Volcano PodGroup namespace/name is cached and muster's."""
        return self.owns(f"{namespace}/{name}")

    def owns(self, key: str) -> bool:
        """Whether the PodGroup of gang `key` is cached and muster's (cache/ownership.py)."""
        job = self.live.jobs.get(key)
        return job is not None and not job.shadow

    def awaits_binds(self, key: str) -> bool:
        """Whether gang `key` (namespace/name) has a bind sent and not yet answered (a member
        Binding) while its PodGroup does not say it has been ready (gang_state's
        HAS_BEEN_READY_PHASES): its Running waits for the answers (effects/apply.py)."""
        job = self.live.jobs.get(key)
        return (
            job is not None
            and job.observed_phase not in HAS_BEEN_READY_PHASES
            and job.count(TaskStatus.BINDING) > 0
        )

    def bound_whole(self, key: str) -> bool:
        """Whether gang `key` is ready on members whose binds were answered (gang_ready,
        nothing Binding)."""
        job = self.live.jobs.get(key)
        return job is not None and not job.count(TaskStatus.BINDING) and gang_ready(job)

    def is_pending(self, uid: str) -> bool:
        """Whether pod `uid` is cached and waits for a node (not bound, nor being bound)."""
        task = self.tasks.get(uid)
        return task is not None and task.status is TaskStatus.PENDING

    def claim(self, namespace: str, name: str) -> wire.PersistentVolumeClaim | None:
        """A PersistentVolumeClaim as the cache holds it now."""
        return self.claims.get(f"{namespace}/{name}")
