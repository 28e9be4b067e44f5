"""Native Workloads (workloads.scheduling.k8s.io, api/native.py): read for the queue they
name, a step of their PodGroups' queue chain, at whichever version the server serves.

A Workload whose queue changed (or that came or went) reads again the queue of the native
PodGroups of ours made from it, unless a stronger step (the PodGroup's own) names theirs.
"""

from __future__ import annotations

from scheduler.api.native import (
    GROUP,
    VERSIONS,
    WORKLOADS,
    QueueSource,
    WorkloadWire,
    decode_workload,
    read_workload,
)
from scheduler.cache.kinds.base import Handler, Versions, namespaced
from scheduler.cache.world import World


def upsert(world: World, obj: WorkloadWire) -> None:
    """A Workload was added or changed."""
    workload = read_workload(obj)
    previous = world.workloads.get(workload.key)
    world.workloads[workload.key] = workload
    if previous is None or previous.queue != workload.queue:
        _requeue(world, workload.namespace, workload.name)


def delete(world: World, key: str) -> None:
    """A Workload ("namespace/name") is gone."""
    gone = world.workloads.pop(key, None)
    if gone is not None and gone.queue:
        _requeue(world, gone.namespace, gone.name)


def _requeue(world: World, namespace: str, name: str) -> None:
    made = [
        key
        for key, group in world.native_podgroups.items()
        if group.namespace == namespace and group.workload == name
    ]
    if made:
        world.requeue(made, QueueSource.WORKLOAD)


HANDLER = Handler(
    "workload",
    "",
    WorkloadWire,
    namespaced,
    upsert,
    delete,
    decode=decode_workload,
    versions=Versions(GROUP, WORKLOADS, VERSIONS),
)
