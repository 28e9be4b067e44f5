"""ClusterSnapshot: the world one session schedules, built from wire objects or cloned."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from scheduler.api import dra, wire
from scheduler.api.budgets import DisruptionBudget
from scheduler.api.errors import InvalidObject
from scheduler.api.hypernode import HyperNodeInfo
from scheduler.api.job import JobInfo
from scheduler.api.names import DEFAULT_QUEUE, DEFAULT_SCHEDULER_NAME
from scheduler.api.node import NodeInfo
from scheduler.api.pod_topology import PodTopologySpec
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.provisioning import ScaleUpRequest
from scheduler.api.queue import QueueInfo
from scheduler.api.resources import Resource
from scheduler.api.task import TERMINAL_STATUSES, TaskInfo, TaskStatus


@dataclass(frozen=True, slots=True)
class PriorityClassInfo:
    """A PriorityClass: its value and whether it may preempt."""

    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"


@dataclass(frozen=True, slots=True)
class SettledJob:
    """What a session found of a job it left settled (framework/settled.py), which the
    next sessions, which do not look at the job again, report of it as they found it."""

    phase: PodGroupPhase
    starving: bool


@dataclass(frozen=True, slots=True)
class SettledPart:
    """What one settled job adds to its queue's figures, read from the cache's record when
    it was settled (the record does not change while it stays settled)."""

    queue: str
    allocated: Resource
    pending_request: Resource
    # What enqueue keeps reserved for it (JobInfo.reservation), empty for none.
    inqueue: Resource
    pending: int
    phase: str
    starving: bool

    @classmethod
    def of(cls, job: JobInfo, known: SettledJob) -> SettledPart:
        """The part of `job`, the cache's record, that a session found `known`."""
        reserved = job.reservation()
        return cls(
            job.queue,
            job.allocated.clone(),
            job.pending_request().clone(),
            reserved.clone() if reserved is not None else Resource(),
            job.count(TaskStatus.PENDING),
            known.phase.value.lower(),
            known.starving,
        )


@dataclass(slots=True)
class SettledTotals:
    """One queue's settled jobs summed: the sessions that leave them out read their queue's
    figures (proportion's shares, the queue's status, the holds' per-queue sums, the
    pending and starving counts) from here, not job by job."""

    allocated: Resource = field(default_factory=Resource)
    pending_request: Resource = field(default_factory=Resource)
    inqueue: Resource = field(default_factory=Resource)
    pending: int = 0
    starving: int = 0
    # PodGroups per phase, as the queue's status counts them (lower-case phase names).
    phases: dict[str, int] = field(default_factory=dict)

    def count(self, part: SettledPart, sign: int) -> None:
        """Add the part (sign 1) or take it back out (sign -1)."""
        if sign > 0:
            self.allocated.add(part.allocated)
            self.pending_request.add(part.pending_request)
            self.inqueue.add(part.inqueue)
        else:
            self.allocated.sub(part.allocated)
            self.pending_request.sub(part.pending_request)
            self.inqueue.sub(part.inqueue)
        self.pending += sign * part.pending
        self.starving += sign * int(part.starving)
        self.phases[part.phase] = self.phases.get(part.phase, 0) + sign

    def copy(self) -> SettledTotals:
        """A copy a session holds while the cache's totals move on."""
        return SettledTotals(
            self.allocated.clone(),
            self.pending_request.clone(),
            self.inqueue.clone(),
            self.pending,
            self.starving,
            dict(self.phases),
        )


@dataclass(frozen=True, slots=True)
class PlacementFailures:
    """A job's consecutive failed placement attempts (kept by the cache across sessions)."""

    count: int
    last: float


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class StorageView:
    """The storage objects VolumeBinding and its kin read: claims by "namespace/name",
    volumes, classes and CSINodes by name. Read-only in sessions (clones share it)."""

    claims: Mapping[str, wire.PersistentVolumeClaim] = field(default_factory=_empty)
    volumes: Mapping[str, wire.PersistentVolume] = field(default_factory=_empty)
    classes: Mapping[str, wire.StorageClass] = field(default_factory=_empty)
    csinodes: Mapping[str, wire.CSINode] = field(default_factory=_empty)


NO_STORAGE = StorageView()


@dataclass(frozen=True, slots=True)
class DeviceView:
    """The DRA objects the device filter reads (nodefit/dynamicresources.py): DeviceClasses and
    ResourceSlices by name, ResourceClaims by "namespace/name" as the binder assumes them
    (an allocation it wrote counts before its watch event comes back), and the selector
    memo the cache keeps across sessions. Read-only in sessions (clones share it)."""

    classes: Mapping[str, dra.DeviceClass] = field(default_factory=_empty)
    slices: Mapping[str, dra.ResourceSlice] = field(default_factory=_empty)
    claims: Mapping[str, dra.ResourceClaim] = field(default_factory=_empty)
    # scheduler.dra's SelectorMemo (api/ imports nothing of dra/): selectors' answers per
    # device, kept across sessions; None makes a session evaluate them afresh. Spelled
    # `object | None`: mypyc looks a compiled dataclass's bare `object` field type up among
    # the module's globals, and the module then fails to import.
    memo: object | None = None
    # The devices each class selects in the cluster (`deviceclass/<class>` counts): what
    # queues' shares of devices divide, beside the nodes' allocatable.
    totals: Resource = field(default_factory=Resource)

    def __bool__(self) -> bool:
        """Whether there is anything to allocate or reuse (a cluster without DRA has not)."""
        return bool(self.slices or self.claims)


NO_DEVICES = DeviceView()


@dataclass(slots=True)
class ClusterSnapshot:
    """Nodes, jobs and queues as one session sees them; the session mutates its own copy."""

    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClassInfo] = field(default_factory=dict)
    # Objects that could not be read, for the status writer to report.
    invalid: list[InvalidObject] = field(default_factory=list)
    # Our pods that name a PodGroup that does not exist (yet): they wait.
    orphans: dict[str, TaskInfo] = field(default_factory=dict)
    # Wall-clock seconds (epoch) the session runs at: the only time a decision depends on
    # (the core reads no wall clock; it times its own steps for metrics only).
    now: float = 0.0
    # Jobs that ended the previous session holding pipelined room (made for them by
    # preempt or reclaim): allocate serves them first so nobody else takes that room.
    nominated: frozenset[str] = frozenset()
    # Per job key: consecutive failed placement attempts and when the last one was.
    failures: dict[str, PlacementFailures] = field(default_factory=dict)
    # Per job key: when the cache saw a session admit it (Inqueue), and when one sent it
    # back to Pending for not starting in time. Read-only in sessions (shared by clones).
    admitted_at: dict[str, float] = field(default_factory=dict)
    timed_out_at: dict[str, float] = field(default_factory=dict)
    # PVCs, PVs, StorageClasses and CSINodes, for pods that use claims.
    storage: StorageView = NO_STORAGE
    # DeviceClasses, ResourceSlices and ResourceClaims, for pods with resource claims (DRA).
    devices: DeviceView = NO_DEVICES
    # Namespace labels by namespace name, for pod affinity terms' namespaceSelector.
    # Read-only in sessions (shared by clones).
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # HyperNodes by name, for gangs with a network topology. Read-only in sessions.
    hypernodes: Mapping[str, HyperNodeInfo] = field(default_factory=_empty)
    # PodDisruptionBudgets by namespace, for preempt and reclaim. Read-only in sessions.
    budgets: Mapping[str, tuple[DisruptionBudget, ...]] = field(default_factory=_empty)
    # Per job key: why the Eviction API refused evictions made for it lately (a budget
    # that allowed none when they were sent), said on its condition until it is placed.
    eviction_refusals: Mapping[str, str] = field(default_factory=_empty)
    # Each HyperNode's status.nodeCount as the API server holds it (None: not written).
    hypernode_counts: Mapping[str, int | None] = field(default_factory=_empty)
    # Jobs the cache left settled (framework/settled.py): nothing of them or of the cluster
    # that could move them changed since a session settled them. They are the cache's own
    # records, not copies (clone_for_session): a session acts on none of them, and reads
    # their queues' figures from settled_totals.
    settled: Mapping[str, SettledJob] = field(default_factory=_empty)
    # The settled jobs' figures, summed per queue.
    settled_totals: Mapping[str, SettledTotals] = field(default_factory=_empty)
    # muster's ProvisioningRequests by their PodGroup's key, oldest attempt first
    # (api/provisioning.py). Read-only in sessions (shared by clones).
    scale_up_requests: Mapping[str, tuple[ScaleUpRequest, ...]] = field(default_factory=_empty)
    # The tasks with pod-to-pod terms (topology_tasks), found by the clone's own pass.
    _topology_tasks: list[TaskInfo] | None = None
    _topology_specs: list[PodTopologySpec] | None = None

    def allocatable(self, nodes: Iterable[NodeInfo]) -> Resource:
        """What the nodes hold together, and the cluster's devices per DeviceClass: the
        total queue shares and admissions divide."""
        total = Resource()
        for node in nodes:
            total.add(node.allocatable)
        return total.add(self.devices.totals)

    def topology_tasks(self) -> list[TaskInfo]:
        """Every task of the snapshot, on a node or in a job, that has pod (anti-)affinity
        or spread terms, once each: what the pod-to-pod plugins and the node picker read
        when a session opens, rather than each walking all 10,000 tasks again."""
        found = self._topology_tasks
        if found is None:
            seen: dict[str, TaskInfo] = {}
            for node in self.nodes.values():
                for task in node.tasks.values():
                    if task.topology is not None:
                        seen[task.uid] = task
            for job in self.jobs.values():
                for task in job.tasks.values():
                    if task.topology is not None:
                        seen[task.uid] = task
            found = self._topology_tasks = list(seen.values())
        return found

    def topology_specs(self) -> list[PodTopologySpec]:
        """The distinct pod-to-pod specs of topology_tasks (a gang's members share one), for
        what reads only the terms: the selectors and keys the session's pods use."""
        found = self._topology_specs
        if found is None:
            distinct: dict[int, PodTopologySpec] = {}
            for task in self.topology_tasks():
                spec = task.topology
                if spec is not None:
                    distinct.setdefault(id(spec), spec)
            found = self._topology_specs = list(distinct.values())
        return found

    def resolve_priority(self, job: JobInfo) -> None:
        """Give a PodGroup's job the priority its PriorityClass names (or the default); a
        native PodGroup's spec.priority, which Priority admission set, wins."""
        name = job.priority_class_name
        fixed = job.spec_priority
        value = fixed if fixed is not None else self.priority_of(name)
        job.set_priority(value, class_known=fixed is not None or name in self.priority_classes)

    def priority_of(self, class_name: str) -> int:
        """The value of a PriorityClass; the global default (or 0) when unnamed or unknown."""
        if class_name:
            known = self.priority_classes.get(class_name)
            if known is not None:
                return known.value
        for info in self.priority_classes.values():
            if info.global_default:
                return info.value
        return 0

    def set_task_status(
        self, task: TaskInfo, status: TaskStatus, *, node_name: str | None = None
    ) -> None:
        """Change a task's status, and its node when `node_name` is given ("" for none),
        keeping its job's and nodes' figures right: the one place a task's status moves."""
        # A pending task is on no node (every placement a session makes): nothing to leave.
        node = self.nodes.get(task.node_name) if task.node_name else None
        if node is not None:
            node.remove_task(task)
        job = self.jobs.get(task.job)
        if job is not None:
            job.set_task_status(task, status)
        else:
            task.status = status
        if node_name is not None:
            task.node_name = node_name
            node = self.nodes.get(node_name)
        if node is not None:
            node.add_task(task)

    def clone_for_session(
        self,
        settled: Mapping[str, SettledJob],
        totals: Mapping[str, SettledTotals] | None = None,
    ) -> ClusterSnapshot:
        """A copy for a session that acts on every job but the `settled` ones, whose
        actions place pods and evict none (framework/settled.py): the settled jobs, and
        every task on a node, are this snapshot's own objects, shared, as no such session
        changes them; the nodes, the other jobs and their pending tasks are copied. A
        session over it costs what changed, not the backlog's size; it reads the settled
        jobs' figures from `totals`, per queue. Without settled jobs, the full copy (clone)."""
        if not settled:
            return self.clone()
        nodes = {name: node.clone() for name, node in self.nodes.items()}
        topology = [
            task
            for node in self.nodes.values()
            for task in node.tasks.values()
            if task.topology is not None
        ]
        on_nodes = {task.uid for task in topology}
        jobs = {}
        for key, job in self.jobs.items():
            if key in settled:
                jobs[key] = job
                continue
            twin = jobs[key] = job.clone_pending()
            for task in twin.tasks.values():
                if task.topology is not None and task.uid not in on_nodes:
                    topology.append(task)
        return self._copy(nodes, jobs, dict(self.orphans), settled, topology, totals or {})

    def clone(self) -> ClusterSnapshot:
        """A copy a session may change freely: tasks, nodes and jobs are copied once each
        (settled jobs too: the copy settles none)."""
        # Each task is copied once: the nodes' tasks here, the pending ones by their job.
        placed: dict[str, TaskInfo] = {}
        topology: list[TaskInfo] = []
        nodes = {}
        for name, node in self.nodes.items():
            copy = node.clone()
            on_node = copy.tasks = {}
            for uid, task in node.tasks.items():
                twin = placed.get(uid)
                if twin is None:
                    twin = placed[uid] = task.clone()
                    if twin.topology is not None:
                        topology.append(twin)
                on_node[uid] = twin
            nodes[name] = copy
        jobs = {}
        for key, job in self.jobs.items():
            jobs[key] = job.clone(placed, topology)
        # What topology_tasks() answers: the tasks on nodes and in jobs (not the orphans).
        on_nodes_and_in_jobs = list(topology)
        orphans = {}
        for uid, task in self.orphans.items():
            twin = placed.get(uid)
            orphans[uid] = twin if twin is not None else task.clone()
        return self._copy(nodes, jobs, orphans, {}, on_nodes_and_in_jobs, {})

    def _copy(
        self,
        nodes: dict[str, NodeInfo],
        jobs: dict[str, JobInfo],
        orphans: dict[str, TaskInfo],
        settled: Mapping[str, SettledJob],
        topology: list[TaskInfo],
        totals: Mapping[str, SettledTotals],
    ) -> ClusterSnapshot:
        """This snapshot with the given copies; its per-session tables copied, what
        sessions only read shared."""
        return ClusterSnapshot(
            nodes=nodes,
            jobs=jobs,
            queues=dict(self.queues),
            priority_classes=dict(self.priority_classes),
            invalid=list(self.invalid),
            orphans=orphans,
            now=self.now,
            nominated=self.nominated,
            failures=dict(self.failures),
            admitted_at=self.admitted_at,
            timed_out_at=self.timed_out_at,
            storage=self.storage,
            devices=self.devices,
            namespaces=self.namespaces,
            hypernodes=self.hypernodes,
            budgets=self.budgets,
            eviction_refusals=self.eviction_refusals,
            hypernode_counts=self.hypernode_counts,
            settled=settled,
            settled_totals=totals,
            scale_up_requests=self.scale_up_requests,
            _topology_tasks=topology,
        )


def shadow_key(task: TaskInfo) -> str:
    """The key of the one-pod job of a pod that names no PodGroup."""
    return f"{task.namespace}/podgroup-{task.uid}"


def shadow_job(task: TaskInfo, default_queue: str = DEFAULT_QUEUE) -> JobInfo:
    """A one-pod gang for a pod of ours that names no PodGroup (as Volcano's cache does)."""
    return JobInfo(
        namespace=task.namespace,
        name=f"podgroup-{task.uid}",
        uid=task.uid,
        queue=task.queue_annotation or default_queue,
        min_member=1,
        priority=task.priority,
        creation_timestamp=task.creation_timestamp,
        shadow=True,
    )


def build_snapshot(
    *,
    pods: Iterable[wire.Pod] = (),
    nodes: Iterable[wire.Node] = (),
    podgroups: Iterable[wire.PodGroup] = (),
    queues: Iterable[wire.Queue] = (),
    priority_classes: Iterable[wire.PriorityClass] = (),
    scheduler_names: Iterable[str] = (DEFAULT_SCHEDULER_NAME,),
    default_queue: str = DEFAULT_QUEUE,
    claims: Iterable[wire.PersistentVolumeClaim] = (),
    volumes: Iterable[wire.PersistentVolume] = (),
    storage_classes: Iterable[wire.StorageClass] = (),
    csinodes: Iterable[wire.CSINode] = (),
    device_classes: Iterable[dra.DeviceClass] = (),
    resource_slices: Iterable[dra.ResourceSlice] = (),
    resource_claims: Iterable[dra.ResourceClaim] = (),
) -> ClusterSnapshot:
    """A snapshot from whole objects; an object that cannot be read is listed in `invalid`."""
    names = frozenset(scheduler_names)
    snapshot = ClusterSnapshot()
    snapshot.storage = storage_view(claims, volumes, storage_classes, csinodes)
    snapshot.devices = DeviceView(
        MappingProxyType({c.metadata.name: c for c in device_classes}),
        MappingProxyType({s.metadata.name: s for s in resource_slices}),
        MappingProxyType({f"{c.metadata.namespace}/{c.metadata.name}": c for c in resource_claims}),
    )
    for pc in priority_classes:
        snapshot.priority_classes[pc.metadata.name] = PriorityClassInfo(
            pc.metadata.name, pc.value, pc.global_default, pc.preemption_policy
        )
    for node in nodes:
        try:
            info = NodeInfo.from_node(node)
        except InvalidObject as error:
            snapshot.invalid.append(error)
            continue
        snapshot.nodes[info.name] = info
    for queue in queues:
        try:
            queue_info = QueueInfo.from_queue(queue)
        except InvalidObject as error:
            snapshot.invalid.append(error)
            continue
        snapshot.queues[queue_info.name] = queue_info
    for group in podgroups:
        job = JobInfo.read(
            group, snapshot.priority_of(group.spec.priority_class_name), default_queue
        )
        if job.invalid is not None:
            snapshot.invalid.append(job.invalid)
        else:
            snapshot.resolve_priority(job)
        snapshot.jobs[job.key] = job
    for pod in pods:
        try:
            task = TaskInfo.from_pod(pod)
        except InvalidObject as error:
            snapshot.invalid.append(error)
            continue
        add_task(snapshot, task, names, default_queue)
    return snapshot


def storage_view(
    claims: Iterable[wire.PersistentVolumeClaim],
    volumes: Iterable[wire.PersistentVolume],
    classes: Iterable[wire.StorageClass],
    csinodes: Iterable[wire.CSINode],
) -> StorageView:
    """A StorageView of the given objects (copied into read-only mappings)."""
    return StorageView(
        claims=MappingProxyType({f"{c.metadata.namespace}/{c.metadata.name}": c for c in claims}),
        volumes=MappingProxyType({v.metadata.name: v for v in volumes}),
        classes=MappingProxyType({c.metadata.name: c for c in classes}),
        csinodes=MappingProxyType({n.metadata.name: n for n in csinodes}),
    )


def add_task(
    snapshot: ClusterSnapshot, task: TaskInfo, scheduler_names: frozenset[str], default_queue: str
) -> None:
    """Place a task in the snapshot: on its node if it has one, in its job if it is ours."""
    if task.node_name and task.status not in TERMINAL_STATUSES:
        node = snapshot.nodes.get(task.node_name)
        if node is not None:
            node.add_task(task)
    if task.scheduler_name not in scheduler_names:
        return
    if not task.job or task.job == shadow_key(task):
        # Re-adding a task (a cache update) finds its shadow job, or makes it again.
        task.job = shadow_key(task)
        if task.job not in snapshot.jobs:
            snapshot.jobs[task.job] = shadow_job(task, default_queue)
    job_info = snapshot.jobs.get(task.job)
    if job_info is None:
        snapshot.orphans[task.uid] = task
        return
    job_info.add_task(task)
