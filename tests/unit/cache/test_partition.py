"""--node-selector: an instance lists and watches only its partition's nodes and queues, and
places and reports only the gangs of its queues."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Mapping

from scheduler.api import wire
from scheduler.api.partition import NodePartition
from scheduler.cache.kinds import nodes, podgroups, pods, queues
from scheduler.cache.wiring import world_kinds
from scheduler.cache.world import World
from scheduler.engine import schedule
from tests.unit.cache.test_reflector import FakeClient, item, reflector_for, run_until
from tests.unit.cache.test_world import node, pod, podgroup

POOL = NodePartition("muster.dev/pool", "a")


class AskedClient(FakeClient):
    """A FakeClient that notes the parameters of every list and watch."""

    def __init__(self) -> None:
        super().__init__([item("x", 1)], [])
        self.asked: list[dict[str, str]] = []

    async def request(self, method: str, path: str, params: Mapping[str, str]) -> bytes:
        self.asked.append(dict(params))
        return await super().request(method, path, params)

    async def watch(
        self,
        path: str,
        params: Mapping[str, str],
        *,
        timeout: float,
    ) -> AsyncIterator[bytes]:
        self.asked.append(dict(params))
        async for line in super().watch(path, params, timeout=timeout):
            yield line


def test_only_the_partitions_nodes_and_queues_are_selected() -> None:
    kinds = {kind.name: kind.selector for kind in world_kinds(World(), POOL)}
    assert kinds.pop("node") == kinds.pop("queue") == "muster.dev/pool=a"
    assert set(kinds.values()) == {""}  # pods, PodGroups and the rest: all of them
    assert {kind.selector for kind in world_kinds(World())} == {""}


def test_a_selecting_reflector_lists_and_watches_with_the_selector() -> None:
    client = AskedClient()
    store: dict[str, int] = {}
    reflector, _ = reflector_for(client, store)
    reflector.kind = dataclasses.replace(reflector.kind, selector=POOL.selector)

    async def scenario() -> None:
        await run_until(reflector, lambda: len(client.asked) >= 2)

    asyncio.run(scenario())
    assert [asked.get("labelSelector") for asked in client.asked[:2]] == ["muster.dev/pool=a"] * 2


def queue(name: str) -> wire.Queue:
    return wire.from_dict({"metadata": {"name": name}}, wire.Queue)


def test_a_partition_places_and_reports_only_the_gangs_of_its_queues() -> None:
    world = World(partitioned=True)
    queues.upsert(world, queue("pool-a"))  # the only queue the selector lists
    nodes.upsert(world, node("a-1"))
    for name, queue_name in (("ours", "pool-a"), ("theirs", "pool-b"), ("unqueued", "")):
        podgroups.upsert(world, podgroup(name, 1, queue=queue_name))
        pods.upsert(world, pod(f"{name}-0", group=name))
    pods.upsert(world, pod("orphan", group="no-such-group"))
    result = schedule(world.snapshot())
    assert [b.name for b in result.binds] == ["ours-0"]
    assert {u.name for u in result.podgroups} <= {"ours"}
    assert {m.name for m in result.unschedulable} == set()


def test_without_a_partition_every_gang_is_the_instances() -> None:
    world = World()
    queues.upsert(world, queue("default"))
    nodes.upsert(world, node("n-1"))
    podgroups.upsert(world, podgroup("unqueued", 1))
    pods.upsert(world, pod("unqueued-0", group="unqueued"))
    pods.upsert(world, pod("orphan", group="no-such-group"))
    result = schedule(world.snapshot())
    assert [b.name for b in result.binds] == ["unqueued-0"]
    assert [m.name for m in result.unschedulable] == ["orphan"]


def test_a_partition_reports_only_its_own_invalid_podgroups() -> None:
    world = World(partitioned=True)
    queues.upsert(world, queue("pool-a"))
    nodes.upsert(world, node("a-1"))
    podgroups.upsert(world, podgroup("bad", -1, queue="pool-b"))  # invalid, and not ours
    podgroups.upsert(world, podgroup("ours-bad", -1, queue="pool-a"))
    reported = {r.name for r in schedule(world.snapshot()).invalid if r.kind == "PodGroup"}
    assert reported == {"ns/ours-bad"}
