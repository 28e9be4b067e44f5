"""JobInfo: a PodGroup (a gang) and its member tasks.

Its readers (from_podgroup, from_native and the read* that keep an unusable PodGroup's
members together) ask api/podgroup.py what the PodGroup says of itself; the verdicts a
session records on it are api/verdicts.py's.
"""

from __future__ import annotations

from collections.abc import Iterator

from scheduler.api import wire
from scheduler.api.annotations import NO_SETTINGS, GroupSettings, group_settings
from scheduler.api.errors import InvalidObject
from scheduler.api.names import ALLOCATED_HYPERNODE_ANNOTATION, DEFAULT_QUEUE
from scheduler.api.native import NativePodGroup, PodGroupApi, QueueSource, native_key
from scheduler.api.network_topology import NetworkTopology as NetworkTopology
from scheduler.api.podgroup import (
    PRIORITY_CLASS_FIELD,
    PodGroupPhase,
    admission_times,
    check_counts,
    check_native,
    native_phase,
    read_phase,
    unhonoured_fields,
)
from scheduler.api.resources import Resource, shortfall
from scheduler.api.subgroups import SubGroupPolicy, read_policies
from scheduler.api.task import ALLOCATED_STATUSES, READY_STATUSES, TaskInfo, TaskStatus
from scheduler.api.verdicts import Completion, ScaleUpVerdict, Starving

# How a member in each status counts in its job's totals: whether its request is in
# `allocated`, and what it adds to `ready` (towards minMember) and to `pipelined`. The one
# place add_task, remove_task, set_task_status and clone read it from.
_COUNTS: dict[TaskStatus, tuple[bool, int, int]] = {
    status: (
        status in ALLOCATED_STATUSES,
        int(status in READY_STATUSES),
        int(status is TaskStatus.PIPELINED),
    )
    for status in TaskStatus
}


class JobInfo:
    """A gang: its PodGroup's spec and status, and its tasks indexed by status."""

    __slots__ = (
        "_pending_request",
        "admitted_since",
        "allocated",
        "allocated_hypernode",
        "api",
        "completion",
        "conditions",
        "creation_timestamp",
        "disrupted",
        "failed",
        "fit_errors",
        "invalid",
        "key",
        "min_member",
        "min_resources",
        "min_task_member",
        "name",
        "namespace",
        "native_version",
        "network_topology",
        "observed_phase",
        "phase",
        "pipelined",
        "placed_hypernode",
        "preemption_policy",
        "priority",
        "priority_class_name",
        "queue",
        "queue_source",
        "ready",
        "running",
        "scale_up",
        "settings",
        "shadow",
        "spec_priority",
        "starving",
        "subgroup_policies",
        "subgroup_waits",
        "succeeded",
        "tasks",
        "tasks_by_status",
        "timed_out_since",
        "topology_key",
        "uid",
        "unhonoured",
        "wait_message",
        "wait_reason",
        "whole_disruption",
        "workload",
    )

    def __init__(
        self,
        *,
        namespace: str,
        name: str,
        uid: str = "",
        queue: str = DEFAULT_QUEUE,
        min_member: int = 1,
        min_task_member: dict[str, int] | None = None,
        min_resources: Resource | None = None,
        priority: int = 0,
        priority_class_name: str = "",
        phase: PodGroupPhase = PodGroupPhase.PENDING,
        conditions: tuple[wire.Condition, ...] = (),
        creation_timestamp: str = "",
        shadow: bool = False,
        api: PodGroupApi = PodGroupApi.VOLCANO,
    ) -> None:
        self.namespace = namespace
        self.name = name
        # Which API the PodGroup comes from: the status writer, explain and the effects
        # read it (never the key).
        self.api = api
        # namespace/name of a Volcano PodGroup, scheduling.k8s.io/namespace/name of a native
        # one (api/native.py); kept, not derived: every ordering asks for it.
        self.key = (
            native_key(namespace, name) if api is PodGroupApi.NATIVE else f"{namespace}/{name}"
        )
        self.uid = uid
        self.queue = queue
        self.min_member = min_member
        self.min_task_member = min_task_member or {}
        self.min_resources = min_resources
        self.priority = priority
        self.priority_class_name = priority_class_name
        self.phase = phase
        # The phase the API server holds; `phase` is what the session decides.
        self.observed_phase = phase
        self.conditions = conditions
        self.creation_timestamp = creation_timestamp
        self.shadow = shadow
        # Counts last written to the PodGroup status; the session compares against them.
        self.running = 0
        self.succeeded = 0
        self.failed = 0
        self.tasks: dict[str, TaskInfo] = {}
        self.tasks_by_status: dict[TaskStatus, dict[str, TaskInfo]] = {}
        self.allocated = Resource()
        # Kept as tasks move: the gang questions are asked on every comparison.
        self.ready = 0
        self.pipelined = 0
        # pending_request(), kept until a member comes, goes or moves: a backlog's queue
        # figures are summed every session, and its gangs mostly do not change between them.
        self._pending_request: Resource | None = None
        # Filled during a session: why each unplaced task could not go anywhere.
        self.fit_errors: dict[str, str] = {}
        # Filled during a session when the job waits: a CamelCase reason and a message.
        self.wait_reason = ""
        self.wait_message = ""
        # Set when the PodGroup cannot be used as written; the job is never scheduled.
        self.invalid: InvalidObject | None = None
        # From the Admitted condition (epoch seconds): when the PodGroup was admitted, or
        # sent back for not starting in time. Survives a restart of the scheduler.
        self.admitted_since: float | None = None
        self.timed_out_since: float | None = None
        # Spec fields present on the PodGroup that muster does not honour (NOT_HONOURED).
        self.unhonoured: tuple[str, ...] = ()
        # spec.networkTopology, when the PodGroup sets it.
        self.network_topology: NetworkTopology | None = None
        # What the PodGroup's labels and annotations ask (waiting time, preemptable).
        self.settings: GroupSettings = NO_SETTINGS
        # Set during a session when the gang starves (framework/holds.py).
        self.starving: Starving | None = None
        # spec.subGroupPolicy (api/subgroups.py); empty: the PodGroup is one gang.
        self.subgroup_policies: tuple[SubGroupPolicy, ...] = ()
        # Filled during a session: why each subgroup that stays unplaced waits, by its name.
        self.subgroup_waits: dict[str, str] = {}
        # The annotation volcano.sh/job-allocated-hypernode as the PodGroup carries it, and
        # the HyperNode the session finds its placed members in (written when they differ).
        self.allocated_hypernode = ""
        self.placed_hypernode = ""
        # Set during a session when muster asks an autoscaler for its nodes
        # (framework/scaleup.py).
        self.scale_up: ScaleUpVerdict | None = None
        # A native PodGroup's (api/native.py): the version it was read at ("" for a Volcano
        # one), the Workload it was made from, whether a victim gang is evicted whole
        # (disruptionMode PodGroup / all), its own preemptionPolicy ("" unset), the node
        # label one of whose domains holds all its pods ("" none), its spec.priority as
        # admission set it (None: resolved from the class), and where its queue came from.
        self.native_version = ""
        self.workload = ""
        self.whole_disruption = False
        self.preemption_policy = ""
        self.topology_key = ""
        self.spec_priority: int | None = None
        self.queue_source = int(QueueSource.PODGROUP)
        # Set during a session that evicts any of its pods: the gang the room is made for
        # (a native PodGroup's DisruptionTarget condition says so).
        self.disrupted = ""
        # Set during a session when the gang is partly bound: what allocate did about it.
        self.completion: Completion | None = None

    @classmethod
    def from_podgroup(cls, group: wire.PodGroup, priority: int = 0) -> JobInfo:
        """The record of a PodGroup; raises InvalidObject when its spec cannot be used."""
        meta = group.metadata
        spec = group.spec
        key = f"{meta.namespace}/{meta.name}"
        check_counts(key, spec)
        min_resources = (
            Resource.from_list(
                spec.min_resources, kind="PodGroup", name=key, field="spec.minResources"
            )
            if spec.min_resources
            else None
        )
        job = JobInfo(
            namespace=meta.namespace,
            name=meta.name,
            uid=meta.uid,
            queue=spec.queue or DEFAULT_QUEUE,
            min_member=spec.min_member,
            min_task_member=dict(spec.min_task_member),
            min_resources=min_resources,
            priority=priority,
            priority_class_name=spec.priority_class_name,
            phase=read_phase(group.status.phase),
            conditions=tuple(group.status.conditions),
            creation_timestamp=meta.creation_timestamp or "",
        )
        if spec.network_topology is not None:
            job.network_topology = NetworkTopology.read(key, spec.network_topology)
        job.settings = group_settings(meta.labels, meta.annotations)
        if spec.sub_group_policy is not None:
            job.subgroup_policies = read_policies(key, spec.sub_group_policy)
        job.allocated_hypernode = meta.annotations.get(ALLOCATED_HYPERNODE_ANNOTATION, "")
        job.unhonoured = unhonoured_fields(spec, job.subgroup_policies)
        job.running = group.status.running
        job.succeeded = group.status.succeeded
        job.failed = group.status.failed
        job.admitted_since, job.timed_out_since = admission_times(group.status.conditions)
        return job

    @classmethod
    def from_native(
        cls, group: NativePodGroup, priority: int, queue: str, source: QueueSource
    ) -> JobInfo:
        """The record of a native PodGroup (api/native.py) in `queue`; raises InvalidObject
        when its spec cannot be used, FieldRefused when it uses a field muster refuses."""
        check_native(group)
        job = JobInfo(
            namespace=group.namespace,
            name=group.name,
            uid=group.uid,
            queue=queue,
            # `basic`: each pod alone, as kube-scheduler places it.
            min_member=group.min_count if group.gang else 1,
            priority=priority,
            priority_class_name=group.priority_class_name,
            phase=native_phase(group),
            conditions=group.conditions,
            creation_timestamp=group.creation_timestamp,
            api=PodGroupApi.NATIVE,
        )
        job.native_version = group.version
        job.workload = group.workload
        job.whole_disruption = group.disruption_whole
        job.preemption_policy = group.preemption_policy
        job.topology_key = group.topology_keys[0] if group.topology_keys else ""
        job.spec_priority = group.priority
        job.queue_source = int(source)
        job.settings = group_settings(group.labels, group.annotations)
        job.admitted_since, job.timed_out_since = admission_times(group.conditions)
        return job

    @classmethod
    def read_native(
        cls, group: NativePodGroup, priority: int, queue: str, source: QueueSource
    ) -> JobInfo:
        """The record of a native PodGroup, or, when muster cannot use it, a record that
        keeps its members together and says why (`invalid`): never scheduled."""
        try:
            return cls.from_native(group, priority, queue, source)
        except InvalidObject as error:
            job = JobInfo(
                namespace=group.namespace,
                name=group.name,
                uid=group.uid,
                queue=queue,
                phase=native_phase(group),
                conditions=group.conditions,
                api=PodGroupApi.NATIVE,
            )
            job.native_version = group.version
            job.workload = group.workload
            job.queue_source = int(source)
            job.invalid = error
            return job

    @property
    def native(self) -> bool:
        """Whether its PodGroup is a native one (scheduling.k8s.io)."""
        return self.api is PodGroupApi.NATIVE

    def set_priority(self, value: int, *, class_known: bool) -> None:
        """The PodGroup's priority, from its PriorityClass; a class name that names none is
        said on the PodGroup (with the other fields not honoured), never ignored."""
        self.priority = value
        fields = tuple(f for f in self.unhonoured if f != PRIORITY_CLASS_FIELD)
        if self.priority_class_name and not class_known:
            fields += (PRIORITY_CLASS_FIELD,)
        self.unhonoured = fields

    @classmethod
    def read(cls, group: wire.PodGroup, priority: int, default_queue: str) -> JobInfo:
        """The record of a PodGroup, or, when its spec cannot be used, a record that keeps
        its members together and says why (`invalid`): such a job is never scheduled."""
        try:
            return cls.from_podgroup(group, priority)
        except InvalidObject as error:
            job = JobInfo(
                namespace=group.metadata.namespace,
                name=group.metadata.name,
                uid=group.metadata.uid,
                queue=group.spec.queue or default_queue,
            )
            job.invalid = error
            return job

    def add_task(self, task: TaskInfo) -> None:
        """Add a member, indexed under its current status."""
        self._pending_request = None
        self.tasks[task.uid] = task
        self.tasks_by_status.setdefault(task.status, {})[task.uid] = task
        allocated, ready, pipelined = _COUNTS[task.status]
        if allocated:
            self.allocated.add(task.request)
        self.ready += ready
        self.pipelined += pipelined

    def remove_task(self, task: TaskInfo) -> None:
        """Remove a member (with the status it has now)."""
        stored = self.tasks.pop(task.uid, None)
        if stored is None:
            return
        self._pending_request = None
        bucket = self.tasks_by_status.get(stored.status)
        if bucket is not None:
            bucket.pop(stored.uid, None)
        allocated, ready, pipelined = _COUNTS[stored.status]
        if allocated:
            self.allocated.sub(stored.request)
        self.ready -= ready
        self.pipelined -= pipelined

    def set_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move a member to another status, keeping the index and totals right."""
        self._pending_request = None
        uid = task.uid
        tasks = self.tasks
        if tasks.get(uid) is not task:
            self.remove_task(task)
            task.status = status
            self.add_task(task)
            return
        # The member itself (every placement a session makes): move it between buckets
        # and totals directly, as remove_task then add_task would, in a third of the time.
        # It keeps its place in `tasks`, the order its pods came in.
        old = task.status
        by_status = self.tasks_by_status
        previous = by_status.get(old)
        if previous is not None:
            previous.pop(uid, None)
        task.status = status
        bucket = by_status.get(status)
        if bucket is None:
            bucket = by_status[status] = {}
        bucket[uid] = task
        was_allocated, was_ready, was_pipelined = _COUNTS[old]
        allocated, ready, pipelined = _COUNTS[status]
        if was_allocated is not allocated:
            if allocated:
                self.allocated.add(task.request)
            else:
                self.allocated.sub(task.request)
        self.ready += ready - was_ready
        self.pipelined += pipelined - was_pipelined

    def tasks_in(self, *statuses: TaskStatus) -> Iterator[TaskInfo]:
        """Members in any of the given statuses."""
        for status in statuses:
            yield from self.tasks_by_status.get(status, {}).values()

    def count(self, *statuses: TaskStatus) -> int:
        """How many members are in any of the given statuses."""
        # A loop, not sum() over a generator: every session asks it of every job.
        by_status = self.tasks_by_status
        total = 0
        for status in statuses:
            bucket = by_status.get(status)
            if bucket:
                total += len(bucket)
        return total

    def ready_count(self) -> int:
        """Members that count towards minMember: placed, bound, running or done."""
        return self.ready

    def pipelined_count(self) -> int:
        """Members placed on resources still being released."""
        return self.pipelined

    def pending_tasks(self) -> list[TaskInfo]:
        """Members waiting for a node that the scheduler may place (not gated)."""
        pending = self.tasks_by_status.get(TaskStatus.PENDING)
        return [t for t in pending.values() if not t.gated] if pending else []

    def pending_request(self) -> Resource:
        """The summed request of pending_tasks() (the caller must not change it)."""
        found = self._pending_request
        if found is None:
            found = Resource()
            for task in self.pending_tasks():
                found.add(task.request)
            self._pending_request = found
        return found

    def role_counts(self, *statuses: TaskStatus) -> dict[str, int]:
        """Per role (volcano.sh/task-spec), how many members are in the given statuses."""
        counts: dict[str, int] = {}
        for task in self.tasks_in(*statuses):
            counts[task.role] = counts.get(task.role, 0) + 1
        return counts

    def request(self) -> Resource:
        """The sum of every non-terminal member's request."""
        total = Resource()
        for task in self.tasks.values():
            if task.status not in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
                total.add(task.request)
        return total

    def reservation(self) -> Resource | None:
        """What enqueue keeps reserved for the job: minResources less what it already holds,
        while it is Inqueue, and while it is Running with at least minMember pods placed
        (Volcano's rule: a RayJob's submitter or Spark's executors keep the room their
        PodGroup reserved; a finished driver with a Running PodGroup does not reserve again).
        None when nothing is reserved."""
        if self.min_resources is None:
            return None
        if self.phase is PodGroupPhase.INQUEUE or (
            self.phase is PodGroupPhase.RUNNING
            and self.count(*ALLOCATED_STATUSES) >= self.min_member
        ):
            return shortfall(self.min_resources, self._held_or_used())
        return None

    def admission_need(self) -> Resource | None:
        """What admitting the job (Pending -> Inqueue) asks of its queue and the cluster:
        minResources less what its members already hold. A Pending gang can hold some: its
        leader died before the gang's Running was written, or minMember was raised past its
        pods; what they hold is counted as used already, and counting it again would keep
        the gang from being admitted, part placed, for good. Members that already ran to
        completion (the cut gang's bound members finished before the next leader came) need
        no room again either. None when nothing is asked."""
        if self.min_resources is None:
            return None
        return shortfall(self.min_resources, self._held_or_used())

    def _held_or_used(self) -> Resource:
        """What the members hold on nodes now, plus what the members that succeeded used:
        the part of minResources the gang needs no room for any more."""
        done = self.tasks_by_status.get(TaskStatus.SUCCEEDED)
        if not done:
            return self.allocated
        total = self.allocated.clone()
        for task in done.values():
            total.add(task.request)
        return total

    def clone(self, placed: dict[str, TaskInfo], with_terms: list[TaskInfo]) -> JobInfo:
        """A copy whose members are the snapshot's copies: `placed` holds those of the tasks
        on nodes (the nodes hold them too); the others are cloned here, and the ones with
        pod-to-pod terms added to `with_terms`. Indexed and totalled as add_task does, in
        one loop: a session's snapshot copy runs this over every pod, so it is not handed
        a function to call per member (a compiled call through Python's protocol)."""
        twin = self._empty_copy()
        tasks = twin.tasks
        by_status = twin.tasks_by_status
        total = twin.allocated
        ready = pipelined = 0
        for uid, task in self.tasks.items():
            copy = placed.get(uid) if task.node_name else None
            if copy is None:
                copy = task.clone()
                if copy.topology is not None:
                    with_terms.append(copy)
            tasks[uid] = copy
            status = copy.status
            bucket = by_status.get(status)
            if bucket is None:
                bucket = by_status[status] = {}
            bucket[uid] = copy
            allocated, ready_count, pipelined_count = _COUNTS[status]
            if allocated:
                total.add(copy.request)
            ready += ready_count
            pipelined += pipelined_count
        twin.ready = ready
        twin.pipelined = pipelined
        return twin

    def clone_pending(self) -> JobInfo:
        """A copy whose members without a node are copies and whose members with one are
        the members themselves: for a session that places pods and evicts none, which
        changes no member that has a node (ClusterSnapshot.clone_for_session)."""
        twin = self._empty_copy()
        tasks = twin.tasks
        by_status = twin.tasks_by_status
        for uid, task in self.tasks.items():
            copy = task if task.node_name else task.clone()
            tasks[uid] = copy
            status = copy.status
            bucket = by_status.get(status)
            if bucket is None:
                bucket = by_status[status] = {}
            bucket[uid] = copy
        twin.allocated = self.allocated.clone()
        twin.ready = self.ready
        twin.pipelined = self.pipelined
        return twin

    def _empty_copy(self) -> JobInfo:
        """A copy of the job with no tasks (clone fills it)."""
        # Through the constructor (the compiled core builds native objects only this way);
        # what a session finds out (fit errors, why it waits) starts empty.
        twin = JobInfo(
            namespace=self.namespace,
            name=self.name,
            uid=self.uid,
            queue=self.queue,
            min_member=self.min_member,
            min_task_member=self.min_task_member,
            min_resources=self.min_resources,
            priority=self.priority,
            priority_class_name=self.priority_class_name,
            phase=self.phase,
            conditions=self.conditions,
            creation_timestamp=self.creation_timestamp,
            shadow=self.shadow,
            api=self.api,
        )
        twin.observed_phase = self.observed_phase
        twin.running = self.running
        twin.succeeded = self.succeeded
        twin.failed = self.failed
        twin.invalid = self.invalid
        twin.admitted_since = self.admitted_since
        twin.timed_out_since = self.timed_out_since
        twin.unhonoured = self.unhonoured
        twin.network_topology = self.network_topology
        twin.settings = self.settings
        twin.subgroup_policies = self.subgroup_policies
        twin.allocated_hypernode = self.allocated_hypernode
        twin.native_version = self.native_version
        twin.workload = self.workload
        twin.whole_disruption = self.whole_disruption
        twin.preemption_policy = self.preemption_policy
        twin.topology_key = self.topology_key
        twin.spec_priority = self.spec_priority
        twin.queue_source = self.queue_source
        return twin

    def wait(self, reason: str, message: str) -> None:
        """Record why the job does not run this session (the first cause wins)."""
        if not self.wait_reason:
            self.wait_reason = reason
            self.wait_message = message

    def __repr__(self) -> str:
        phase = self.phase.value
        return f"JobInfo({self.key}, {phase}, min={self.min_member}, tasks={len(self.tasks)})"
