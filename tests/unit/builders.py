"""Builders for synthetic snapshots: node(cpu=2), gang("a", 4, cpu=1), queue("q", weight=3)."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api import wire
from scheduler.api.annotations import UNPROTECTED, PodProtection
from scheduler.api.budgets import DisruptionBudget
from scheduler.api.job import JobInfo, NetworkTopology
from scheduler.api.names import DEFAULT_QUEUE
from scheduler.api.node import NodeInfo, Taint
from scheduler.api.placement import PodPlacementSpec, placement_spec
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.queue import QueueInfo
from scheduler.api.resources import Resource
from scheduler.api.selectors import LabelSelector
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TERMINAL_STATUSES, TaskInfo, TaskStatus
from scheduler.framework.decisions import SessionResult

_uids = itertools.count(1)


def resources(cpu: float = 0, memory: str | int = 0, **scalars: int) -> Resource:
    """A vector from cpu cores, a memory quantity and extended resources (gpu -> nvidia.com/gpu)."""
    values: dict[str, Any] = {}
    if cpu:
        values["cpu"] = str(cpu)
    if memory:
        values["memory"] = memory
    for key, value in scalars.items():
        values["nvidia.com/gpu" if key == "gpu" else key] = value
    return Resource.from_list(values)


def node(
    name: str,
    cpu: float = 4,
    memory: str | int = "16Gi",
    *,
    gpu: int = 0,
    max_pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[tuple[str, str, str]] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
) -> NodeInfo:
    """A Ready node with the given allocatable resources."""
    extra = {"gpu": gpu} if gpu else {}
    return NodeInfo(
        name,
        resources(cpu, memory, **extra),
        max_pods=max_pods,
        labels=labels or {"kubernetes.io/hostname": name},
        taints=tuple(Taint(k, v, e) for k, v, e in (taints or [])),
        unschedulable=unschedulable,
        ready=ready,
    )


def task(
    name: str,
    cpu: float = 1,
    memory: str | int = 0,
    *,
    job: str = "",
    namespace: str = "default",
    role: str = "",
    priority: int = 0,
    status: TaskStatus = TaskStatus.PENDING,
    node_name: str = "",
    spec: dict[str, Any] | None = None,
    gpu: int = 0,
    created: str = "",
    labels: dict[str, str] | None = None,
    started: str = "",
    bound_at: str = "",
    protection: PodProtection = UNPROTECTED,
) -> TaskInfo:
    """A pod record; `spec` is a pod spec fragment for placement constraints; `bound_at`
    when it was bound (its PodScheduled condition turned True)."""
    placement: PodPlacementSpec | None = None
    if spec:
        placement = placement_spec(wire.from_dict(spec, wire.PodSpec))
    extra = {"gpu": gpu} if gpu else {}
    return TaskInfo(
        uid=f"uid-{name}-{next(_uids)}",
        namespace=namespace,
        name=name,
        request=resources(cpu, memory, **extra),
        job=job,
        role=role,
        scheduler_name="muster",
        priority=priority,
        node_name=node_name,
        status=status,
        placement=placement,
        creation_timestamp=created,
        labels=labels,
        started=started,
        bound_at=bound_at,
        protection=protection,
    )


def gang(
    name: str,
    size: int,
    cpu: float = 1,
    memory: str | int = 0,
    *,
    min_member: int | None = None,
    queue: str = DEFAULT_QUEUE,
    namespace: str = "default",
    priority: int = 0,
    phase: PodGroupPhase = PodGroupPhase.INQUEUE,
    roles: dict[str, int] | None = None,
    min_task_member: dict[str, int] | None = None,
    min_resources: Resource | None = None,
    created: str = "",
    spec: dict[str, Any] | None = None,
    gpu: int = 0,
    status: TaskStatus | None = None,
    statuses: Sequence[TaskStatus] = (),
    on: Sequence[str] = (),
    labels: dict[str, str] | None = None,
    started: str = "",
    bound_at: str = "",
    protection: PodProtection = UNPROTECTED,
) -> JobInfo:
    """A PodGroup with `size` pods (or the pods of `roles`, role -> count), Pending unless
    `status` (every member) or `statuses` (the first members, in name order) says
    otherwise; members that hold room (neither Pending nor finished) sit on the nodes
    `on`, cycled in name order, and were bound at `bound_at`."""
    job = JobInfo(
        namespace=namespace,
        name=name,
        uid=f"pg-{name}-{next(_uids)}",
        queue=queue,
        min_member=size if min_member is None else min_member,
        min_task_member=min_task_member,
        min_resources=min_resources,
        priority=priority,
        phase=phase,
        creation_timestamp=created,
    )
    members = roles or {"": size}
    index = 0
    for role, count in members.items():
        for _ in range(count):
            job.add_task(
                task(
                    f"{name}-{index}",
                    cpu,
                    memory,
                    job=job.key,
                    namespace=namespace,
                    role=role,
                    priority=priority,
                    spec=spec,
                    gpu=gpu,
                    created=created,
                    labels=labels,
                    started=started,
                    protection=protection,
                )
            )
            index += 1
    ordered = sorted(job.tasks.values(), key=lambda t: t.name)
    wanted = [status] * len(ordered) if status is not None else list(statuses)
    if len(wanted) > len(ordered):
        raise ValueError(f"gang {name}: {len(wanted)} statuses for {len(ordered)} members")
    holding = 0
    for member, member_status in zip(ordered, wanted, strict=False):
        job.set_task_status(member, member_status)
        if member_status is TaskStatus.PENDING:
            continue
        member.bound_at = bound_at
        if member_status in TERMINAL_STATUSES:
            continue
        if not on:
            raise ValueError(f"gang {name}: members {member_status.value} need nodes (on=...)")
        member.node_name = on[holding % len(on)]
        holding += 1
    return job


RAY_GROUP = "ray.io/group"
REPLICA_NAME = "ray.io/worker-group-replica-name"


def replica_gang(
    name: str,
    replicas: int,
    hosts: int,
    cpu: float = 1,
    *,
    min_replicas: int,
    head: bool = True,
    group: str = "workers",
    topology: dict[str, Any] | None = None,
    gang_topology: NetworkTopology | None = None,
    phase: PodGroupPhase = PodGroupPhase.INQUEUE,
    running: Sequence[int] = (),
    on: Sequence[str] = (),
) -> JobInfo:
    """A RayCluster's PodGroup as KubeRay's subGroupPolicy change writes it: a head (in the
    default group) and `replicas` multi-host replicas of `hosts` pods each, labelled
    ray.io/group and ray.io/worker-group-replica-name, one policy for the worker group
    (minSubGroups `min_replicas`, subGroupSize `hosts`, `topology` its networkTopology);
    minMember head + min_replicas x hosts. Replicas listed in `running` run, their pods
    cycled over the nodes `on`."""
    policy: dict[str, Any] = {
        "name": group,
        "labelSelector": {"matchLabels": {RAY_GROUP: group}},
        "subGroupSize": hosts,
        "minSubGroups": min_replicas,
        "matchLabelKeys": [REPLICA_NAME],
    }
    if topology is not None:
        policy["networkTopology"] = topology
    spec: dict[str, Any] = {
        "minMember": int(head) + min_replicas * hosts,
        "subGroupPolicy": [policy],
    }
    if gang_topology is not None:
        spec["networkTopology"] = {
            "mode": gang_topology.mode,
            "highestTierAllowed": gang_topology.highest_tier,
        }
    podgroup = wire.from_dict(
        {
            "metadata": {"namespace": "default", "name": name, "uid": f"pg-{name}-{next(_uids)}"},
            "spec": spec,
            "status": {"phase": phase.value},
        },
        wire.PodGroup,
    )
    job = JobInfo.from_podgroup(podgroup)
    if head:
        job.add_task(task(f"{name}-head", cpu, job=job.key, labels={RAY_GROUP: "headgroup"}))
    placed = 0
    for replica in range(replicas):
        labels = {RAY_GROUP: group, REPLICA_NAME: f"{group}-r{replica}"}
        for host in range(hosts):
            member = task(f"{name}-{group}-r{replica}-h{host}", cpu, job=job.key, labels=labels)
            job.add_task(member)
            if replica in running:
                job.set_task_status(member, TaskStatus.RUNNING)
                member.node_name = on[placed % len(on)]
                placed += 1
    return job


def running_gang(name: str, size: int, *args: Any, on: Sequence[str], **kwargs: Any) -> JobInfo:
    """A Running PodGroup whose members all run, on the nodes `on` (cycled in name order)."""
    return gang(
        name, size, *args, phase=PodGroupPhase.RUNNING, status=TaskStatus.RUNNING, on=on, **kwargs
    )


def budget(
    name: str,
    selects: dict[str, str],
    allowed: int,
    *,
    namespace: str = "default",
    processed: bool = True,
) -> DisruptionBudget:
    """A PodDisruptionBudget selecting pods by `selects` (matchLabels) that allows
    `allowed` disruptions now (`processed`: the disruption controller has computed it)."""
    return DisruptionBudget(
        namespace, name, LabelSelector(tuple(sorted(selects.items()))), allowed, processed
    )


def queue(name: str = DEFAULT_QUEUE, weight: int = 1, **kwargs: Any) -> QueueInfo:
    """An Open queue."""
    return QueueInfo(name, weight=weight, **kwargs)


def snapshot(
    nodes: list[NodeInfo], jobs: list[JobInfo], queues: list[QueueInfo] | None = None
) -> ClusterSnapshot:
    """A snapshot; running tasks of the jobs are placed on their nodes, the default queue added."""
    snap = ClusterSnapshot(
        nodes={n.name: n for n in nodes},
        jobs={j.key: j for j in jobs},
        queues={q.name: q for q in (queues or [])},
    )
    snap.queues.setdefault(DEFAULT_QUEUE, queue(DEFAULT_QUEUE))
    for job in jobs:
        for member in job.tasks.values():
            # As build_snapshot: a finished pod holds nothing on its node.
            if member.node_name and member.status not in TERMINAL_STATUSES:
                snap.nodes[member.node_name].add_task(member)
    return snap


def binds_per_job(result: SessionResult) -> Counter[str]:
    """How many pods of each job (namespace/name) the session binds."""
    return Counter(bind.job for bind in result.binds)


def binds_per_queue(result: SessionResult, queue_of: Mapping[str, str]) -> Counter[str]:
    """How many pods the session binds per queue, given each job's queue by key."""
    return Counter(queue_of[bind.job] for bind in result.binds)


def evictions_per_job(result: SessionResult) -> Counter[str]:
    """How many pods of each job (namespace/name) the session evicts."""
    return Counter(evict.job for evict in result.evictions)
