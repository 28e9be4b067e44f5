"""The status writer's lanes: PodGroup status never waits behind a backlog of pod conditions."""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.api.podgroup import PodGroupPhase
from scheduler.cache.kinds import pods
from scheduler.cache.world import World
from scheduler.effects.apply import Effects
from scheduler.effects.fence import LeaderFence
from scheduler.effects.status_writer import StatusWriter
from scheduler.framework.decisions import GroupCondition, PodGroupStatusUpdate, PodUnschedulable
from scheduler.metrics import Metrics
from tests.unit.cache.test_world import pod


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

    def lane(self, connections: int, *, depth: int = 0) -> StuckPods:
        return self  # the status writer's lane: the same fake server


class Quiet:
    def record(self, *args: Any) -> None:
        pass

    def yield_to(self, cleared: Any) -> None:
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


class SlowFirstPatch:
    """The first PodGroup patch hangs until released (a 429 and its backoff); others land."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.phases: list[str] = []
        self.calls = 0

    async def patch(self, path: str, body: Any, **_: Any) -> bytes:
        self.calls += 1
        if self.calls == 1:
            await self.release.wait()
        self.phases.append(body["status"]["phase"])
        return b"{}"


def test_an_older_podgroup_status_never_lands_after_a_newer_one() -> None:
    def update(phase: PodGroupPhase) -> PodGroupStatusUpdate:
        return PodGroupStatusUpdate("ns", "g", phase, (), 0, 0, 0, uid="pg")

    async def main() -> list[str]:
        client = SlowFirstPatch()
        writer = StatusWriter(client, Quiet(), concurrency=4)  # type: ignore[arg-type]
        writer.podgroups([update(PodGroupPhase.INQUEUE)])
        await asyncio.sleep(0)
        writer.podgroups([update(PodGroupPhase.RUNNING)])
        writer.podgroups([update(PodGroupPhase.PENDING)])  # sent back before Running landed
        await asyncio.sleep(0.01)
        client.release.set()
        await writer.drain()
        return client.phases

    assert asyncio.run(main()) == ["Inqueue", "Pending"]


class Landed:
    """Answers every patch at once; records each PodGroup status written."""

    def __init__(self) -> None:
        self.statuses: list[tuple[str, str]] = []

    async def patch(self, path: str, body: Any, **_: Any) -> bytes:
        status = body["status"]
        self.statuses.append((status["phase"], status["conditions"][0]["message"]))
        return b"{}"


def test_a_new_message_alone_waits_for_the_refresh_and_a_new_verdict_does_not() -> None:
    def waiting(message: str, phase: PodGroupPhase = PodGroupPhase.INQUEUE) -> PodGroupStatusUpdate:
        condition = GroupCondition("Unschedulable", "True", "NotEnoughResources", message)
        return PodGroupStatusUpdate("ns", "g", phase, (condition,), 0, 0, 0, uid="pg")

    async def main() -> list[tuple[str, str]]:
        client = Landed()
        writer = StatusWriter(client, Quiet())  # type: ignore[arg-type]
        writer.podgroups([waiting("0/200 nodes: 57 Insufficient cpu")])
        await asyncio.sleep(0.01)
        writer.podgroups([waiting("0/200 nodes: 58 Insufficient cpu")])  # the next session
        await asyncio.sleep(0.01)
        first = list(client.statuses)
        writer.podgroups([waiting("0/200 nodes: 58 Insufficient cpu", PodGroupPhase.PENDING)])
        await asyncio.sleep(0.01)
        return [*first, ("--", "--"), *client.statuses[len(first) :]]

    assert asyncio.run(main()) == [
        ("Inqueue", "0/200 nodes: 57 Insufficient cpu"),
        ("--", "--"),
        ("Pending", "0/200 nodes: 58 Insufficient cpu"),
    ]


class Counting:
    """Answers every patch at once and keeps its path and body."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.bodies: list[Any] = []

    async def patch(self, path: str, body: Any, **_: Any) -> bytes:
        self.paths.append(path)
        self.bodies.append(body)
        return b"{}"


def test_what_was_written_for_objects_that_are_gone_is_dropped() -> None:
    def group(name: str) -> PodGroupStatusUpdate:
        return PodGroupStatusUpdate("ns", name, PodGroupPhase.RUNNING, (), 1, 0, 0, uid=name)

    def pending(uid: str) -> PodUnschedulable:
        return PodUnschedulable("ns", uid, uid, "ns/g", "Unschedulable", "full")

    async def main() -> list[str]:
        client = Counting()
        writer = StatusWriter(client, Quiet())  # type: ignore[arg-type]
        writer.podgroups([group("kept"), group("gone")])
        writer.pods([pending("p-kept"), pending("p-gone")])
        await writer.drain()
        writer.forget_gone({"ns/kept"}, {"p-kept"})
        client.paths.clear()
        # The same statuses again: only what was forgotten is written again.
        writer.podgroups([group("kept"), group("gone")])
        writer.pods([pending("p-kept"), pending("p-gone")])
        await writer.drain()
        return sorted(client.paths)

    written = asyncio.run(main())
    assert sorted(p.rsplit("/", 2)[-2] for p in written) == ["p-gone", "podgroups"]
    assert any(p.endswith("/podgroups/gone") for p in written)


def test_the_writes_waiting_are_on_the_metrics() -> None:
    async def main() -> float | None:
        client = StuckPods()  # PodGroup patches land; pod patches hang
        metrics = Metrics()
        world = World(frozenset({"muster"}))
        for i in range(20):
            pods.upsert(world, pod(f"p{i}", uid=f"uid-{i}"))  # pending: their conditions go out
        effects = Effects.connected(
            client,  # type: ignore[arg-type]
            world,
            Quiet(),  # type: ignore[arg-type]
            metrics,
            fence=LeaderFence(lambda: True),
        )
        effects.writer.pods(
            [
                PodUnschedulable("ns", f"p{i}", f"uid-{i}", "ns/g", "Unschedulable", "full")
                for i in range(20)
            ]
        )
        await asyncio.sleep(0.01)
        waiting = metrics.registry.get_sample_value("muster_status_writes_waiting", {"lane": "pod"})
        client.release.set()
        await effects.writer.drain()
        return waiting

    assert asyncio.run(main()) == 4.0  # 16 at a time: 4 wait their turn


def test_a_podgroup_condition_without_a_message_is_written_without_the_field() -> None:
    # kube-apiserver before 1.20 turns "" in a custom resource's merge patch into null and
    # refuses the write; a condition with no message leaves the field out.
    conditions = (
        GroupCondition("Unschedulable", "True", "NotEnoughTasks", ""),
        GroupCondition("Admitted", "True", "Enqueued", "fits", "2026-12-03T00:00:00Z"),
    )

    async def main() -> list[Any]:
        client = Counting()
        writer = StatusWriter(client, Quiet())  # type: ignore[arg-type]
        writer.podgroups(
            [PodGroupStatusUpdate("ns", "g", PodGroupPhase.INQUEUE, conditions, 0, 0, 0, uid="pg")]
        )
        await writer.drain()
        return client.bodies

    (body,) = asyncio.run(main())
    unschedulable, admitted = body["status"]["conditions"]
    assert "message" not in unschedulable
    assert unschedulable["reason"] == "NotEnoughTasks" and unschedulable["lastTransitionTime"]
    assert admitted == {
        "type": "Admitted",
        "status": "True",
        "reason": "Enqueued",
        "message": "fits",
        "lastTransitionTime": "2026-12-03T00:00:00Z",
    }
