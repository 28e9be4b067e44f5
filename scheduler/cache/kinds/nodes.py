"""Nodes: the room sessions place pods in, and the pods already on it.

A node written again with nothing a session reads changed (a kubelet's periodic status)
changes nothing. Any other change unsettles every gang; a new node, more room or a node
schedulable again also brings the gangs that failed back at once. A node that is gone keeps
its pods waiting for it (or for their own deletion), as a pod that names a node not seen yet
waits for it.
"""

from __future__ import annotations

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.node import NodeImages, NodeInfo
from scheduler.cache.kinds.base import Handler, named
from scheduler.cache.world import World


def upsert(world: World, node: wire.Node) -> None:
    """A node was added or changed."""
    name = node.metadata.name
    try:
        info = NodeInfo.from_node(node)
    except InvalidObject as error:
        world.cluster_changed()
        world.invalid[("Node", name)] = error
        delete(world, name)
        return
    old = world.live.nodes.get(name)
    if old is not None and _same_node(old, info):
        return
    world.cluster_changed()
    world.invalid.pop(("Node", name), None)
    tasks = list(old.tasks.values()) if old is not None else []
    tasks.extend(world.waiting_for_node.pop(name, {}).values())
    world.live.nodes[name] = info
    for task in tasks:
        info.add_task(task)
    if old is None or old.allocatable != info.allocatable or old.unschedulable:
        world.room_freed()


def delete(world: World, name: str) -> None:
    """A node is gone; its pods wait for it to come back (or for their own deletion)."""
    world.cluster_changed()
    node = world.live.nodes.pop(name, None)
    if node is not None and node.tasks:
        world.waiting_for_node.setdefault(name, {}).update(node.tasks)


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


HANDLER = Handler("node", "/api/v1/nodes", wire.Node, named, upsert, delete, partitioned=True)
