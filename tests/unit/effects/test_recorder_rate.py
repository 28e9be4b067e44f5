"""The recorder's rate limit is per reason: a flood of one kind never silences another."""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.kube.client import Gate
from scheduler.metrics import Metrics


class Server:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    async def create(self, path: str, body: Any, *, gate: Gate | None = None) -> bytes:
        self.reasons.append(body["reason"])
        return b"{}"


def flood_then(reason: str) -> tuple[Server, Metrics]:
    server = Server()
    metrics = Metrics()

    async def scenario() -> None:
        recorder = EventRecorder(server, metrics, per_second=0.001, burst=5, workers=1)  # type: ignore[arg-type]
        for index in range(50):  # 50 binds: more Scheduled events than the burst
            recorder.record(ObjectRef("Pod", "v1", "ml", f"w-{index}"), "Normal", "Scheduled", "m")
        recorder.record(ObjectRef("Queue", "", "", "bad"), "Warning", reason, "spec.capability")
        await recorder.drain()

    asyncio.run(scenario())
    return server, metrics


def test_a_flood_of_scheduled_events_leaves_room_for_an_invalid_object_warning() -> None:
    server, metrics = flood_then("InvalidObject")
    assert server.reasons.count("Scheduled") == 5
    assert server.reasons.count("InvalidObject") == 1
    assert metrics.registry.get_sample_value("muster_events_dropped_total") == 45


def test_the_same_reason_is_still_capped() -> None:
    server, _ = flood_then("Scheduled")
    assert server.reasons.count("Scheduled") == 5


def test_events_older_than_the_window_are_forgotten_as_time_passes() -> None:
    # A leader binding for hours must not remember every pod it ever reported on.
    now = [0.0]

    async def scenario() -> tuple[int, int, int]:
        recorder = EventRecorder(
            Server(),  # type: ignore[arg-type]
            Metrics(),
            window=300.0,
            per_second=1e6,
            burst=10**6,
            queue_size=10_000,
            workers=1,
            clock=lambda: now[0],
        )
        counts = []
        for minute in range(12):
            now[0] = minute * 60.0
            for index in range(100):
                pod = ObjectRef("Pod", "v1", "ml", f"w-{minute}-{index}")
                recorder.record(pod, "Normal", "Scheduled", f"assigned to n{index}")
            counts.append(recorder.remembered())
        await recorder.drain()
        await recorder.close()
        return counts[4], counts[8], counts[11]

    # five minutes' worth (the window), then no more: the first minutes are forgotten
    assert asyncio.run(scenario()) == (500, 500, 500)
