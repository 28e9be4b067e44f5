"""Namespaces: their labels, which pod affinity terms' namespaceSelector reads. A change of
labels unsettles every gang; anything else about a namespace changes nothing."""

from __future__ import annotations

from scheduler.api import wire
from scheduler.cache.kinds.base import Handler, named
from scheduler.cache.world import World


def upsert(world: World, namespace: wire.Namespace) -> None:
    """A Namespace was added or changed."""
    live = world.live
    name = namespace.metadata.name
    labels = namespace.metadata.labels
    if live.namespaces.get(name) == labels:
        return
    world.cluster_changed()
    # Copied on write: snapshots share the mapping, sessions only read it.
    live.namespaces = {**live.namespaces, name: dict(labels)}


def delete(world: World, name: str) -> None:
    """A Namespace is gone."""
    live = world.live
    if name not in live.namespaces:
        return
    world.cluster_changed()
    live.namespaces = {k: v for k, v in live.namespaces.items() if k != name}


HANDLER = Handler("namespace", "/api/v1/namespaces", wire.Namespace, named, upsert, delete)
