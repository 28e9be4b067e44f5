"""Namespaces: their labels, which pod affinity terms' namespaceSelector reads, and the queue
their `scheduling.volcano.sh/queue-name` annotation names, a step of native PodGroups' queue
chain (api/native.py). A change of labels unsettles every gang; a change of the queue reads
again the queue of the native PodGroups of ours there that took theirs from it (or from the
default); anything else about a namespace changes nothing."""

from __future__ import annotations

from scheduler.api import wire
from scheduler.api.names import QUEUE_NAME_ANNOTATION
from scheduler.api.native import QueueSource
from scheduler.cache.kinds.base import Handler, named
from scheduler.cache.world import World


def upsert(world: World, namespace: wire.Namespace) -> None:
    """A Namespace was added or changed."""
    live = world.live
    name = namespace.metadata.name
    _queue_named(world, name, namespace.metadata.annotations.get(QUEUE_NAME_ANNOTATION, ""))
    labels = namespace.metadata.labels
    if live.namespaces.get(name) == labels:
        return
    world.cluster_changed()
    # Copied on write: snapshots share the mapping, sessions only read it.
    live.namespaces = {**live.namespaces, name: dict(labels)}


def delete(world: World, name: str) -> None:
    """A Namespace is gone."""
    live = world.live
    _queue_named(world, name, "")
    if name not in live.namespaces:
        return
    world.cluster_changed()
    live.namespaces = {k: v for k, v in live.namespaces.items() if k != name}


def _queue_named(world: World, name: str, queue: str) -> None:
    if world.namespace_queues.get(name, "") == queue:
        return
    if queue:
        world.namespace_queues[name] = queue
    else:
        world.namespace_queues.pop(name, None)
    there = [key for key, group in world.native_podgroups.items() if group.namespace == name]
    if there:
        world.requeue(there, QueueSource.NAMESPACE)


HANDLER = Handler("namespace", "/api/v1/namespaces", wire.Namespace, named, upsert, delete)
