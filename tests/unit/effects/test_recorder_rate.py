"""The recorder's rate limit is per reason: a flood of one kind never silences another."""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.metrics import Metrics


class Server:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    async def create(self, path: str, body: Any) -> bytes:
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
