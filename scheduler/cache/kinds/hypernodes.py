"""HyperNodes (network topology), for gangs with a network topology.

From Volcano's CRD or muster's crds/hypernode.yaml. Optional: most clusters do not have the
CRD, and a cluster without it simply has none. A HyperNode read again with only its
status.nodeCount changed (written by muster or by Volcano's controller) changes no decision;
a change to the topology unsettles every gang and brings the gangs that failed back at once.
One muster cannot use is reported (snapshot.invalid), not used.
"""

from __future__ import annotations

from scheduler.api.errors import InvalidObject
from scheduler.api.hypernode import API_VERSION, HyperNode, HyperNodeInfo
from scheduler.cache.kinds.base import Handler, named
from scheduler.cache.world import World


def upsert(world: World, hypernode: HyperNode) -> None:
    """A HyperNode was added or changed."""
    name = hypernode.metadata.name
    key = ("HyperNode", name)
    world.hypernode_counts[name] = hypernode.status.node_count
    try:
        info = HyperNodeInfo.from_wire(hypernode)
    except InvalidObject as error:
        # A session reports it (snapshot.invalid): worth one even when nothing else moved.
        world.cluster_changed()
        world.invalid[key] = error
        _forget(world, name)
        return
    was_invalid = world.invalid.pop(key, None) is not None
    if world.hypernodes.get(name) == info:
        # Mostly status.nodeCount written: no decision changes.
        if was_invalid:
            world.cluster_changed()
        return
    world.hypernodes.put(name, info)
    _topology_changed(world)


def delete(world: World, name: str) -> None:
    """A HyperNode is gone."""
    world.hypernode_counts.pop(name, None)
    if world.invalid.pop(("HyperNode", name), None) is not None:
        world.cluster_changed()
    _forget(world, name)


def _forget(world: World, name: str) -> None:
    if world.hypernodes.remove(name):
        _topology_changed(world)


def _topology_changed(world: World) -> None:
    world.generation += 1
    # A gang that waited for a domain with room may fit the new topology: retry it now.
    world.room_freed()


HANDLER = Handler(
    "hypernode",
    f"/apis/{API_VERSION}/hypernodes",
    HyperNode,
    named,
    upsert,
    delete,
    optional=True,
)
