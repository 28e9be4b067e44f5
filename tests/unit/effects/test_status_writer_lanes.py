"""The status writer's lanes: PodGroup status never waits behind a backlog of pod conditions."""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.api.job import PodGroupPhase
from scheduler.effects.status_writer import StatusWriter
from scheduler.framework.decisions import PodGroupStatusUpdate, PodUnschedulable


class StuckPods:
    """Pod status patches hang until released; every other patch is answered at once."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.patched: list[str] = []

    async def patch(self, path: str, body: Any, **_: Any) -> bytes:
        if "/pods/" in path:
            await self.release.wait()
        self.patched.append(path)
        return b"{}"


class Quiet:
    def record(self, *args: Any) -> None:
        pass


def test_a_podgroup_status_goes_out_while_pod_conditions_are_backed_up() -> None:
    async def main() -> list[str]:
        client = StuckPods()
        writer = StatusWriter(client, Quiet(), concurrency=2)  # type: ignore[arg-type]
        writer.pods(
            [
                PodUnschedulable("ns", f"p{i}", f"uid-{i}", "ns/g", "Unschedulable", "full")
                for i in range(10)
            ]
        )
        writer.podgroups(
            [PodGroupStatusUpdate("ns", "g", PodGroupPhase.RUNNING, (), 3, 0, 0, uid="pg")]
        )
        for _ in range(50):
            if any("/podgroups/g" in path for path in client.patched):
                break
            await asyncio.sleep(0.01)
        written = list(client.patched)
        client.release.set()
        await writer.drain()
        return written

    written = asyncio.run(main())
    assert any(path.endswith("/podgroups/g") for path in written), written
    assert not any("/pods/" in path for path in written)
