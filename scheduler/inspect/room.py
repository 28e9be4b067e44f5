"""What would let a gang that waits for resources run: who holds the room on the nodes that
would otherwise take its pods, and whether preempt or reclaim would evict them for it.

Which nodes would otherwise take a pod is the session's own static filters (cordon,
taints, affinity) and the node's allocatable; whether a holder can be evicted is never
judged here: one more session of the same engine, with preempt and reclaim in its
actions, says which pods it would evict for the gang.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.node import NodeInfo
from scheduler.api.resources import Resource
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import ALLOCATED_STATUSES, TaskInfo, TaskStatus
from scheduler.cache.world import World
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.cycle import close_cycle, open_cycle
from scheduler.framework.decisions import Evict
from scheduler.inspect.cluster import Session, run_session
from scheduler.inspect.config import EVICTING_ACTIONS, Configuration
from scheduler.inspect.figures import amount
from scheduler.plugins import PLUGINS


@dataclass
class Holder:
    """A gang (or a pod that is no gang of ours) holding room the waiting gang lacks."""

    key: str
    # "PodGroup" for a gang of ours, "Pod" for a pod with no PodGroup or not ours.
    kind: str
    queue: str
    priority: int
    scheduler_name: str
    held: Resource = field(default_factory=Resource)
    nodes: list[str] = field(default_factory=list)
    pods: list[str] = field(default_factory=list)

    def line(self, resources: list[str]) -> str:
        """ "ml/train-7 (PodGroup, queue ml, priority 100) holds nvidia.com/gpu=8 on n1, n2"."""
        held = ",".join(f"{name}={amount(name, self.held.get(name))}" for name in resources)
        whose = f"queue {self.queue}" if self.queue else f"schedulerName {self.scheduler_name}"
        return (
            f"{self.key} ({self.kind}, {whose}, priority {self.priority}) holds {held} "
            f"on {', '.join(self.nodes)}"
        )

    def as_dict(self, resources: list[str]) -> dict[str, Any]:
        """The holder as JSON."""
        return {
            "name": self.key,
            "kind": self.kind,
            "queue": self.queue,
            "priority": self.priority,
            "schedulerName": self.scheduler_name,
            "holds": {name: amount(name, self.held.get(name)) for name in resources},
            "nodes": self.nodes,
            "pods": self.pods,
        }


@dataclass
class Room:
    """Where a gang's waiting pods would otherwise fit, who holds it, and what a session
    with preempt and reclaim would evict for the gang."""

    resources: list[str]
    nodes: list[str]
    holders: list[Holder]
    # The config the eviction question was asked with (the actions it added to the
    # configured ones), and that session's answer.
    asked_with: Configuration
    added: list[str]
    evictions: list[Evict]
    would_run: bool


def otherwise_fitting_nodes(
    snapshot: ClusterSnapshot, tasks: list[TaskInfo], config: SchedulerConfig
) -> list[NodeInfo]:
    """The nodes that would take one of the tasks if nothing ran on them: the session's
    static filters admit the task and the node's allocatable holds its request."""
    cycle = open_cycle(snapshot, config, PLUGINS)
    session = cycle.session
    try:
        return [
            node
            for node in session.node_list
            if any(
                session.admits(task, node).ok and task.node_request.fits_in(node.allocatable)
                for task in tasks
            )
        ]
    finally:
        close_cycle(cycle)


def holders_on(
    snapshot: ClusterSnapshot, nodes: Iterable[NodeInfo], job_key: str, resources: list[str]
) -> list[Holder]:
    """Who holds `resources` on the nodes (the gang itself aside), largest first."""
    found: dict[str, Holder] = {}
    for node in nodes:
        for task in sorted(node.tasks.values(), key=lambda t: t.key):
            # pipelined pods hold nothing yet; releasing ones are leaving already
            if task.job == job_key or task.status not in ALLOCATED_STATUSES:
                continue
            held = _restricted(task.request, resources)
            if held.is_empty():
                continue
            holder = _holder_of(snapshot, task, found)
            holder.held.add(held)
            if node.name not in holder.nodes:
                holder.nodes.append(node.name)
            holder.pods.append(task.key)
    return sorted(found.values(), key=functools.cmp_to_key(_larger_first(resources)))


def _restricted(request: Resource, resources: list[str]) -> Resource:
    held = Resource()
    for name in resources:
        value = request.get(name)
        if name == "cpu":
            held.cpu = value
        elif name == "memory":
            held.memory = value
        elif value:
            held.add(Resource(scalars={name: value}))
    return held


def _holder_of(snapshot: ClusterSnapshot, task: TaskInfo, found: dict[str, Holder]) -> Holder:
    job = snapshot.jobs.get(task.job)
    if job is not None and not job.shadow:
        key, kind, queue, priority = job.key, "PodGroup", job.queue, job.priority
    else:
        # a bare pod of ours is a one-pod gang named by a uid: name the pod instead
        key, kind, priority = task.key, "Pod", task.priority
        queue = job.queue if job is not None else ""
    if key not in found:
        found[key] = Holder(key, kind, queue, priority, task.scheduler_name)
    return found[key]


def _larger_first(resources: list[str]) -> Any:
    def compare(a: Holder, b: Holder) -> int:
        for name in resources:
            if a.held.get(name) != b.held.get(name):
                return -1 if a.held.get(name) > b.held.get(name) else 1
        return -1 if a.key < b.key else (1 if a.key > b.key else 0)

    return compare


def evictions_for(session: Session, job_key: str) -> list[Evict]:
    """The evictions a session makes for the gang (preempt and reclaim name it as
    "... {key} (priority N) ...")."""
    return [e for e in session.result.evictions if f" {job_key} (priority " in e.reason]


def room(
    world: World,
    configuration: Configuration,
    session: Session,
    job_key: str,
    resources: list[str],
) -> Room | None:
    """The room the gang's pending pods lack in `resources`: the nodes that would
    otherwise fit them, who holds it, and which pods a session with preempt and reclaim
    (as configured, or added to the configured actions) would evict for it. None when
    the gang has no pending pod."""
    snapshot = world.snapshot(session.now)
    job = snapshot.jobs.get(job_key)
    if job is None:
        return None
    pending = [t for t in job.tasks.values() if t.status is TaskStatus.PENDING]
    if not pending:
        return None
    nodes = otherwise_fitting_nodes(snapshot, pending, configuration.config)
    holders = holders_on(snapshot, nodes, job_key, resources)
    evicting = configuration.with_actions(EVICTING_ACTIONS)
    asked = session if evicting is None else run_session(world, evicting.config, session.now)
    return Room(
        resources=resources,
        nodes=[n.name for n in nodes],
        holders=holders,
        asked_with=evicting or configuration,
        added=[a for a in EVICTING_ACTIONS if a not in configuration.actions],
        evictions=evictions_for(asked, job_key),
        would_run=job_key in asked.result.nominated
        or any(b.job == job_key for b in asked.result.binds),
    )
