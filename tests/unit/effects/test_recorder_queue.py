"""Events wait in a bounded queue for a fixed set of writers: a slow API server costs
dropped events, never an unbounded pile of tasks (found by the chaos soak)."""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.kube.client import Gate
from scheduler.metrics import Metrics


class Stalled:
    """An API server that answers nothing until released."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.started = 0
        self.written: list[str] = []

    async def create(self, path: str, body: Any, *, gate: Gate | None = None) -> bytes:
        self.started += 1
        await self.open.wait()
        self.written.append(body["involvedObject"]["name"])
        return b"{}"


def pod(index: int) -> ObjectRef:
    return ObjectRef("Pod", "v1", "ml", f"w-{index}")


def test_a_stalled_server_fills_the_queue_then_drops_new_events() -> None:
    metrics = Metrics()
    seen: dict[str, int] = {}

    async def scenario() -> None:
        server = Stalled()
        recorder = EventRecorder(
            server,  # type: ignore[arg-type]
            metrics,
            per_second=1e6,
            burst=10_000,
            queue_size=50,
            workers=3,
        )
        for index in range(500):
            recorder.record(pod(index), "Normal", "Scheduled", "m")
        await asyncio.sleep(0)  # the writers take their first events
        for index in range(500, 510):
            recorder.record(pod(index), "Normal", "Scheduled", "m")
        seen["tasks"] = len(asyncio.all_tasks())
        seen["in_flight"] = server.started
        seen["queued"] = recorder.queued()
        server.open.set()
        await recorder.drain()
        seen["written"] = len(server.written)
        await recorder.close()

    asyncio.run(scenario())
    assert seen["in_flight"] == 3
    assert seen["queued"] == 50
    assert seen["tasks"] == 1 + 3  # the scenario and the three writers, whatever the load
    # 50 queued before the writers started; 3 more fitted once the writers took one each.
    assert seen["written"] == 53
    assert metrics.registry.get_sample_value("muster_events_dropped_total") == 510 - 53


def test_an_event_dropped_for_a_full_queue_is_written_when_offered_again() -> None:
    async def scenario() -> list[str]:
        server = Stalled()
        recorder = EventRecorder(server, Metrics(), queue_size=1, workers=1)  # type: ignore[arg-type]
        recorder.record(pod(0), "Normal", "Scheduled", "m")
        await asyncio.sleep(0)  # w-0 in flight
        recorder.record(pod(1), "Normal", "Scheduled", "m")  # queued
        recorder.record(pod(2), "Normal", "Scheduled", "m")  # dropped: the queue is full
        server.open.set()
        await recorder.drain()
        recorder.record(pod(2), "Normal", "Scheduled", "m")  # not deduplicated away
        await recorder.drain()
        await recorder.close()
        return server.written

    assert asyncio.run(scenario()) == ["w-0", "w-1", "w-2"]


class Failing:
    def __init__(self) -> None:
        self.written: list[str] = []

    async def create(self, path: str, body: Any, *, gate: Gate | None = None) -> bytes:
        name = body["involvedObject"]["name"]
        if name == "w-0":
            raise RuntimeError("a bug in writing this one")
        self.written.append(name)
        return b"{}"


def test_a_writer_survives_an_unexpected_error_and_writes_the_next_events() -> None:
    async def scenario() -> list[str]:
        server = Failing()
        recorder = EventRecorder(server, Metrics(), workers=1)  # type: ignore[arg-type]
        for index in range(3):
            recorder.record(pod(index), "Normal", "Scheduled", "m")
        await recorder.drain()
        await recorder.close()
        return server.written

    assert asyncio.run(scenario()) == ["w-1", "w-2"]


def test_a_writer_cancelled_from_elsewhere_is_replaced_when_the_next_event_comes() -> None:
    async def scenario() -> list[str]:
        server = Stalled()
        server.open.set()
        recorder = EventRecorder(server, Metrics(), workers=1)  # type: ignore[arg-type]
        recorder.record(pod(0), "Normal", "Scheduled", "m")
        await recorder.drain()
        (writer,) = [t for t in asyncio.all_tasks() if t.get_name() == "event-writer-0"]
        writer.cancel()
        await asyncio.gather(writer, return_exceptions=True)
        recorder.record(pod(1), "Normal", "Scheduled", "m")
        await asyncio.wait_for(recorder.drain(), timeout=5)
        await recorder.close()
        return server.written

    assert asyncio.run(scenario()) == ["w-0", "w-1"]
