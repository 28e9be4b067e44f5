"""The leader's fence: a status write, an event or a scale-up write queued while this replica
led is not sent once it lost the lease (effects/fence.py), and shutdown closes the fence only
once the writes queued had their time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.resources import Resource
from scheduler.effects.apply import Effects
from scheduler.effects.fence import LeaderFence
from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.effects.scale_up import ScaleUpWriter
from scheduler.effects.status_writer import StatusWriter
from scheduler.framework.decisions import (
    AnnotatePod,
    HyperNodeStatusUpdate,
    PodGroupStatusUpdate,
    PodUnschedulable,
    QueueStatusUpdate,
)
from scheduler.kube.client import Gate
from scheduler.kube.errors import Fenced
from scheduler.metrics import Metrics
from tests.unit.effects.test_apply import FakeBinder, FakeCache, FakeEvictor, Journal


class Lease:
    """Whether this replica leads, as the elector would say it."""

    def __init__(self) -> None:
        self.held = True

    def __call__(self) -> bool:
        return self.held


class Server:
    """Asks each request's gate as the real client does once the request has its connection,
    and records what was sent (method, path)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def _send(self, method: str, path: str, gate: Gate | None) -> bytes:
        if gate is not None and not gate():
            raise Fenced("the request's gate closed before it was sent")
        self.sent.append((method, path))
        return b'{"metadata": {"uid": "u"}}'

    async def patch(self, path: str, body: Any, *, gate: Gate | None = None, **_: Any) -> bytes:
        return self._send("PATCH", path, gate)

    async def create(self, path: str, body: Any, *, gate: Gate | None = None) -> bytes:
        return self._send("POST", path, gate)

    async def request(self, method: str, path: str, *, gate: Gate | None = None, **_: Any) -> bytes:
        return self._send(method, path, gate)


class Events:
    """A recorder that only counts (the status writer's events are the recorder's business)."""

    def record(self, *args: Any, **kwargs: Any) -> None:
        pass


def podgroup(phase: PodGroupPhase = PodGroupPhase.RUNNING) -> PodGroupStatusUpdate:
    return PodGroupStatusUpdate("ns", "train", phase, (), 2, 0, 0, uid="pg")


def test_status_writes_queued_behind_binds_are_not_sent_once_the_lease_is_lost() -> None:
    async def main() -> tuple[list[tuple[str, str]], float | None]:
        lease, server, metrics = Lease(), Server(), Metrics()
        writer = StatusWriter(
            server,  # type: ignore[arg-type]
            Events(),  # type: ignore[arg-type]
            fence=LeaderFence(lease),
            on_written=lambda kind, result: metrics.status_writes.labels(kind, result).inc(),
        )
        binds_sent = asyncio.Event()
        # A burst of binds waits to be sent: the writes are queued and held behind it.
        writer.yield_to(lambda: not binds_sent.is_set(), binds_sent.wait)
        writer.podgroups([podgroup()])
        writer.queues([QueueStatusUpdate("default", "Open", Resource(), None, {})])
        writer.pods([PodUnschedulable("ns", "w", "p1", "ns/train", "Unschedulable", "full")])
        writer.hypernodes([HyperNodeStatusUpdate("rack-1", 4)])
        await asyncio.sleep(0.05)
        assert server.sent == [], "the writes were held behind the binds"
        lease.held = False  # stopped past its term, or a renewal that failed
        binds_sent.set()
        await writer.drain()
        fenced = metrics.registry.get_sample_value(
            "muster_status_writes_total", {"kind": "podgroup", "result": "fenced"}
        )
        return server.sent, fenced

    sent, fenced = asyncio.run(main())
    assert sent == []
    assert fenced == 1


def test_a_status_write_fenced_once_is_written_again_when_the_replica_leads_again() -> None:
    async def main() -> list[tuple[str, str]]:
        lease, server = Lease(), Server()
        writer = StatusWriter(
            server,  # type: ignore[arg-type]
            Events(),  # type: ignore[arg-type]
            fence=LeaderFence(lease),
        )
        lease.held = False
        writer.podgroups([podgroup()])
        await writer.drain()
        lease.held = True
        # The same status, decided again by its first session as leader: not taken as
        # written, since it never was.
        writer.podgroups([podgroup()])
        await writer.drain()
        return server.sent

    assert asyncio.run(main()) == [
        ("PATCH", "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/train")
    ]


def test_events_held_behind_binds_are_not_written_once_the_lease_is_lost() -> None:
    async def main() -> list[tuple[str, str]]:
        lease, server = Lease(), Server()
        recorder = EventRecorder(
            server,  # type: ignore[arg-type]
            Metrics(),
            workers=2,
            fence=LeaderFence(lease),
        )
        binds_sent = asyncio.Event()
        recorder.yield_to(binds_sent.wait)
        recorder.record(ObjectRef("PodGroup", "v1", "ns", "train"), "Normal", "Scheduled", "ok")
        own_pod = ObjectRef("Pod", "v1", "muster-system", "muster-scheduler-0", "uid-0")
        recorder.record(own_pod, "Warning", "InvalidConfig", "bad", as_leader=False)
        await asyncio.sleep(0.05)
        assert server.sent == [], "the events were held behind the binds"
        lease.held = False
        binds_sent.set()
        await recorder.drain()
        await recorder.close()
        return server.sent

    # The process's own event goes out whichever replica it is; the leader's does not.
    assert asyncio.run(main()) == [("POST", "/api/v1/namespaces/muster-system/events")]


def test_a_fenced_event_counts_as_dropped() -> None:
    async def main() -> float | None:
        metrics = Metrics()
        recorder = EventRecorder(
            Server(),  # type: ignore[arg-type]
            metrics,
            workers=1,
            fence=LeaderFence(lambda: False),
        )
        recorder.record(ObjectRef("PodGroup", "v1", "ns", "train"), "Normal", "Scheduled", "ok")
        await recorder.drain()
        await recorder.close()
        return metrics.registry.get_sample_value("muster_events_dropped_total")

    assert asyncio.run(main()) == 1


def test_scale_up_writes_under_way_stop_once_the_lease_is_lost() -> None:
    async def main() -> list[tuple[str, str]]:
        lease, server = Lease(), Server()
        writer = ScaleUpWriter(
            server,  # type: ignore[arg-type]
            Events(),  # type: ignore[arg-type]
            may_write=LeaderFence(lease),
        )
        lease.held = False
        writer.annotate(AnnotatePod("ns", "w", "p1", "ns/train", "big-scaleup-1", "atomic"))
        await writer.drain()
        return server.sent

    assert asyncio.run(main()) == []


class SlowWriter:
    """A status writer whose queued writes take `seconds` to drain, sent through the fence."""

    def __init__(self, journal: Journal, fence: LeaderFence, seconds: float) -> None:
        self.journal = journal
        self.fence = fence
        self.seconds = seconds

    async def drain(self) -> None:
        await asyncio.sleep(self.seconds)
        self.journal.add("writer", "sent" if self.fence() else "fenced")


class Recorder:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    async def drain(self) -> None:
        self.journal.add("recorder", "drain")

    async def close(self) -> None:
        self.journal.add("recorder", "close")


def shutting_down(journal: Journal, fence: LeaderFence, seconds: float) -> Effects:
    return Effects(
        cache=FakeCache(journal),
        binder=FakeBinder(journal),
        writer=SlowWriter(journal, fence, seconds),  # type: ignore[arg-type]
        evictor=FakeEvictor(journal),
        recorder=Recorder(journal),
        fence=fence,
    )


def test_shutdown_sends_the_writes_queued_then_closes_the_fence() -> None:
    journal = Journal()
    fence = LeaderFence(lambda: True)
    asyncio.run(shutting_down(journal, fence, 0.01).finish_writes())
    assert ("writer", "sent", None) in journal.calls
    assert fence.closed and not fence()


def test_shutdown_closes_the_fence_on_writes_that_outlast_their_time(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("scheduler.effects.apply.WRITE_DRAIN_SECONDS", 0.01)

    async def main() -> None:
        journal = Journal()
        fence = LeaderFence(lambda: True)
        effects = shutting_down(journal, fence, 0.2)
        # The writer's drain outlives the shutdown's wait: cancelled with it, and the fence
        # is closed, so whatever it would send later would be fenced.
        await effects.finish_writes()
        assert fence.closed
        assert ("writer", "sent", None) not in journal.calls

    asyncio.run(main())
    assert "shutdown: some writes did not go out in time" in caplog.text


class WireWriter:
    """A status writer with one write on the wire: answered `seconds` after it was sent,
    whatever the fence says now (it was asked before the write was sent)."""

    def __init__(self, journal: Journal, seconds: float) -> None:
        self.journal = journal
        self.answered = asyncio.Event()
        self.seconds = seconds
        self.task: asyncio.Task[None] | None = None

    async def _answer(self) -> None:
        await asyncio.sleep(self.seconds)
        self.journal.add("writer", "answered")
        self.answered.set()

    async def drain(self) -> None:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._answer())
        await self.answered.wait()


def on_the_wire(journal: Journal, fence: LeaderFence, seconds: float) -> Effects:
    return Effects(
        cache=FakeCache(journal),
        binder=FakeBinder(journal),
        writer=WireWriter(journal, seconds),  # type: ignore[arg-type]
        evictor=FakeEvictor(journal),
        recorder=Recorder(journal),
        fence=fence,
    )


def test_a_write_on_the_wire_past_the_drain_time_is_answered_before_shutdown_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("scheduler.effects.apply.WRITE_DRAIN_SECONDS", 0.01)
    monkeypatch.setattr("scheduler.effects.apply.WRITE_ANSWER_SECONDS", 5.0)

    async def main() -> tuple[bool, bool]:
        journal = Journal()
        fence = LeaderFence(lambda: True)
        answered = await on_the_wire(journal, fence, 0.2).finish_writes()
        # The lease is released only after this returns: the write has landed by then.
        return answered, ("writer", "answered", None) in journal.calls

    assert asyncio.run(main()) == (True, True)


def test_a_write_never_answered_keeps_the_lease_from_being_given_up(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("scheduler.effects.apply.WRITE_DRAIN_SECONDS", 0.01)
    monkeypatch.setattr("scheduler.effects.apply.WRITE_ANSWER_SECONDS", 0.05)

    async def main() -> bool:
        fence = LeaderFence(lambda: True)
        answered = await on_the_wire(Journal(), fence, 10.0).finish_writes()
        assert fence.closed
        return answered

    assert asyncio.run(main()) is False
    assert "shutdown: some writes were not answered in time" in caplog.text
