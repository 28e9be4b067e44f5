"""Queues: what each queue may take of the cluster. Any change unsettles every gang (shares
and capabilities move); a queue that cannot be read is reported and not used."""

from __future__ import annotations

from scheduler.api import paths, wire
from scheduler.api.errors import InvalidObject
from scheduler.api.queue import QueueInfo
from scheduler.cache.kinds.base import Handler, named
from scheduler.cache.world import World


def upsert(world: World, queue: wire.Queue) -> None:
    """A Queue was added or changed."""
    world.cluster_changed()
    name = queue.metadata.name
    try:
        world.live.queues[name] = QueueInfo.from_queue(queue)
        world.invalid.pop(("Queue", name), None)
    except InvalidObject as error:
        world.invalid[("Queue", name)] = error
        world.live.queues.pop(name, None)


def delete(world: World, name: str) -> None:
    """A Queue is gone."""
    world.cluster_changed()
    world.live.queues.pop(name, None)
    world.invalid.pop(("Queue", name), None)


HANDLER = Handler(
    "queue", f"{paths.GROUP_PATH}/queues", wire.Queue, named, upsert, delete, partitioned=True
)
