"""Binds have the API server first: while binds wait for the binder's workers, events are
held (up to HOLD_SECONDS from when each was recorded), and written with the time they were
recorded."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from scheduler.api import wire
from scheduler.cache.kinds import nodes, pods
from scheduler.cache.world import World
from scheduler.effects import recorder as recorder_module
from scheduler.effects.apply import Effects
from scheduler.effects.binder import Binder
from scheduler.effects.fence import LeaderFence
from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.framework.decisions import Bind
from scheduler.kube.client import Gate
from scheduler.metrics import Metrics

PODS = 5


class HeldBinds:
    """A bind lane whose answers wait until `open` is set; counts the binds started."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.started = 0

    async def bind(
        self, namespace: str, name: str, uid: str, node: str, *, gate: Gate | None = None
    ) -> None:
        self.started += 1
        await self.open.wait()


class Events:
    """An event lane that notes, at each event written, how many binds had started."""

    def __init__(self, binds: HeldBinds | None = None) -> None:
        self.binds = binds
        self.written: list[dict[str, Any]] = []
        self.binds_started_at_write: list[int] = []

    async def create(self, path: str, body: Any, *, gate: Gate | None = None) -> bytes:
        self.written.append(body)
        self.binds_started_at_write.append(self.binds.started if self.binds else 0)
        return b"{}"

    def lane(self, connections: int, *, depth: int = 0) -> Events:
        return self  # the status writer's lane: the same fake server


def pending_world() -> World:
    world = World(frozenset({"muster"}))
    nodes.upsert(world, wire.from_dict({"metadata": {"name": "n1"}}, wire.Node))
    for index in range(PODS):
        body = {
            "metadata": {"name": f"p{index}", "namespace": "ns", "uid": f"uid-{index}"},
            "spec": {"schedulerName": "muster", "containers": [{"name": "c"}]},
        }
        pods.upsert(world, wire.decode_pod(msgspec.json.encode(body)))
    return world


def binds() -> list[Bind]:
    return [Bind("ns", f"p{i}", f"uid-{i}", "n1", "ns/g") for i in range(PODS)]


async def turns(count: int = 20) -> None:
    """Let every ready task run a few steps (nothing here waits on time)."""
    for _ in range(count):
        await asyncio.sleep(0)


def test_events_wait_until_no_bind_waits_for_a_worker() -> None:
    bind_lane = HeldBinds()
    event_lane = Events(bind_lane)
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        recorder = EventRecorder(event_lane, Metrics(), workers=2)  # type: ignore[arg-type]
        effects = Effects.connected(
            event_lane,  # type: ignore[arg-type]
            pending_world(),
            recorder,
            Metrics(),
            fence=LeaderFence(lambda: True),
            bind_client=bind_lane,  # type: ignore[arg-type]
            bind_workers=1,
        )
        effects.binder.dispatch(binds())
        recorder.record(ObjectRef("PodGroup", "v1beta1", "ns", "g"), "Normal", "Inqueue", "m")
        await turns()
        seen["written while binds waited"] = len(event_lane.written)
        bind_lane.open.set()
        await effects.binder.drain()
        await recorder.drain()
        await recorder.close()
        await effects.binder.close()

    asyncio.run(scenario())
    assert seen["written while binds waited"] == 0
    # The event recorded first and the binds' own Scheduled events: every one written
    # only once the last bind had been taken by a worker.
    assert len(event_lane.written) == 1 + PODS
    assert event_lane.binds_started_at_write == [PODS] * (1 + PODS)


def test_without_a_backlog_an_event_is_written_at_once() -> None:
    bind_lane = HeldBinds()
    event_lane = Events(bind_lane)

    async def scenario() -> int:
        recorder = EventRecorder(event_lane, Metrics(), workers=1)  # type: ignore[arg-type]
        binder = Binder(bind_lane, pending_world(), recorder, Metrics(), concurrency=PODS)  # type: ignore[arg-type]
        recorder.yield_to(binder.backlog_cleared)
        binder.dispatch(binds())  # a worker for each: none waits
        await turns()
        recorder.record(ObjectRef("Pod", "v1", "ns", "p0"), "Normal", "Pulled", "m")
        await turns()
        written = len(event_lane.written)
        await binder.close()
        await recorder.close()
        return written

    assert asyncio.run(scenario()) == 1


def test_a_binder_closed_with_binds_queued_holds_no_event() -> None:
    bind_lane = HeldBinds()

    async def scenario() -> bool:
        binder = Binder(bind_lane, pending_world(), Events(), Metrics(), concurrency=1)  # type: ignore[arg-type]
        binder.dispatch(binds())
        await turns()
        waiting = asyncio.ensure_future(binder.backlog_cleared())
        await turns()
        held = not waiting.done()
        await binder.close()
        await asyncio.wait_for(waiting, timeout=5)
        return held

    assert asyncio.run(scenario()) is True


def one_event_held(event_lane: Events, cleared: asyncio.Event) -> EventRecorder:
    """A recorder whose events wait for `cleared`, one Scheduled event recorded."""
    recorder = EventRecorder(event_lane, Metrics(), workers=1)  # type: ignore[arg-type]
    recorder.yield_to(cleared.wait)
    recorder.record(ObjectRef("Pod", "v1", "ns", "p0"), "Normal", "Scheduled", "m")
    return recorder


def test_an_event_held_longer_than_hold_seconds_is_written_with_binds_still_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(recorder_module, "HOLD_SECONDS", 0.05)
    event_lane = Events()

    async def scenario() -> None:
        recorder = one_event_held(event_lane, asyncio.Event())  # never cleared
        await asyncio.wait_for(recorder.drain(), timeout=5)
        await recorder.close()

    asyncio.run(scenario())
    assert [body["reason"] for body in event_lane.written] == ["Scheduled"]


def test_a_held_event_says_when_it_was_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    stamps = iter(["2026-12-03T10:00:00Z", "2026-12-03T10:00:09Z"])
    monkeypatch.setattr(recorder_module, "now_rfc3339", lambda: next(stamps))
    event_lane = Events()

    async def scenario() -> None:
        cleared = asyncio.Event()
        recorder = one_event_held(event_lane, cleared)
        await turns()
        cleared.set()
        await recorder.drain()
        await recorder.close()

    asyncio.run(scenario())
    (body,) = event_lane.written
    assert (body["firstTimestamp"], body["lastTimestamp"]) == ("2026-12-03T10:00:00Z",) * 2
