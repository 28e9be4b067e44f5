"""Effects fans one session's result out: binds, then evictions, then statuses; a failed
eviction gives the pod its room back; shutdown drains every writer and stops the binder."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.resources import Resource
from scheduler.effects.apply import Effects
from scheduler.framework.decisions import (
    Bind,
    Evict,
    FieldNotHonoured,
    HyperNodeStatusUpdate,
    InvalidObjectReport,
    NativeStatusUpdate,
    PodGroupStatusUpdate,
    PodUnschedulable,
    QueueStatusUpdate,
    SessionResult,
)


class Journal:
    """What every fake was asked, in order, as (component, call, argument)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, object]] = []

    def add(self, component: str, call: str, argument: object = None) -> None:
        self.calls.append((component, call, argument))


class FakeCache:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        # Gangs with a bind sent and unanswered, never written Running; gangs bound whole.
        self.binding: set[str] = set()
        self.whole: set[str] = set()

    def assume_releasing(self, uid: str) -> None:
        self.journal.add("cache", "assume_releasing", uid)

    def forget_releasing(self, uid: str) -> None:
        self.journal.add("cache", "forget_releasing", uid)

    def awaits_binds(self, key: str) -> bool:
        return key in self.binding

    def bound_whole(self, key: str) -> bool:
        return key in self.whole


class FakeBinder:
    def __init__(self, journal: Journal, *, drain_forever: bool = False) -> None:
        self.journal = journal
        self.drain_forever = drain_forever
        self.answered: list[Callable[[str], None]] = []

    def dispatch(self, binds: list[Bind]) -> None:
        self.journal.add("binder", "dispatch", [b.uid for b in binds])

    def when_answered(self, callback: Callable[[str], None]) -> None:
        self.answered.append(callback)

    def stop_retrying(self) -> None:
        self.journal.add("binder", "stop_retrying")

    def fence(self) -> None:
        self.journal.add("binder", "fence")

    async def drain(self) -> None:
        self.journal.add("binder", "drain")
        if self.drain_forever:
            await asyncio.Event().wait()

    async def first_answer(self) -> None:
        self.journal.add("binder", "first_answer")

    async def close(self) -> None:
        self.journal.add("binder", "close")


class FakeWriter:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def pod_placed(self, uid: str) -> None:
        self.journal.add("writer", "pod_placed", uid)

    def podgroups(self, updates: list[PodGroupStatusUpdate]) -> None:
        self.journal.add("writer", "podgroups", [u.name for u in updates])

    def pods(self, messages: list[PodUnschedulable]) -> None:
        self.journal.add("writer", "pods", [m.uid for m in messages])

    def queues(self, updates: list[QueueStatusUpdate]) -> None:
        self.journal.add("writer", "queues", [u.name for u in updates])

    def invalid(self, reports: list[InvalidObjectReport]) -> None:
        self.journal.add("writer", "invalid", [r.name for r in reports])

    def field_warnings(self, warnings: list[FieldNotHonoured]) -> None:
        self.journal.add("writer", "field_warnings", [w.uid for w in warnings])

    def hypernodes(self, updates: list[HyperNodeStatusUpdate]) -> None:
        self.journal.add("writer", "hypernodes", [u.name for u in updates])

    async def drain(self) -> None:
        self.journal.add("writer", "drain")


class FakeEvictor:
    def __init__(self, journal: Journal, refused: frozenset[str] = frozenset()) -> None:
        self.journal = journal
        self.refused = refused

    async def evict_group(self, group: list[Evict]) -> list[bool]:
        for eviction in group:
            self.journal.add("evictor", "evict", eviction.uid)
        return [eviction.uid not in self.refused for eviction in group]


class FakeRecorder:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    async def drain(self) -> None:
        self.journal.add("recorder", "drain")

    async def close(self) -> None:
        self.journal.add("recorder", "close")


def effects(
    journal: Journal,
    *,
    refused: frozenset[str] = frozenset(),
    drain_forever: bool = False,
    cache: FakeCache | None = None,
    binder: FakeBinder | None = None,
) -> Effects:
    return Effects(
        cache=cache or FakeCache(journal),
        binder=binder or FakeBinder(journal, drain_forever=drain_forever),
        writer=FakeWriter(journal),
        evictor=FakeEvictor(journal, refused),
        recorder=FakeRecorder(journal),
    )


def bind(uid: str) -> Bind:
    return Bind("ml", f"pod-{uid}", uid, "node-1", "ml/train")


def evict(uid: str) -> Evict:
    return Evict("ml", f"pod-{uid}", uid, "node-2", "ml/low", "preempted by ml/train")


def a_result() -> SessionResult:
    return SessionResult(
        binds=[bind("b1"), bind("b2")],
        evictions=[evict("v1")],
        podgroups=[
            PodGroupStatusUpdate("ml", "train", PodGroupPhase.RUNNING, (), 2, 0, 0),
        ],
        unschedulable=[PodUnschedulable("ml", "w", "p1", "ml/wait", "Unschedulable", "full")],
        queues=[QueueStatusUpdate("default", "Open", Resource(), None, {})],
        invalid=[InvalidObjectReport("PodGroup", "ml/bad", "spec.minMember=-1")],
        field_warnings=[FieldNotHonoured("ml", "pod-b1", "b1", "spec.volumes...")],
    )


async def apply_and_settle(subject: Effects, result: SessionResult) -> None:
    subject.apply(result)
    await asyncio.gather(*subject.evictions_in_flight)


def test_a_result_reaches_binder_writer_and_evictor_in_order() -> None:
    journal = Journal()
    asyncio.run(apply_and_settle(effects(journal), a_result()))
    assert journal.calls == [
        ("binder", "dispatch", ["b1", "b2"]),
        ("writer", "pod_placed", "b1"),
        ("writer", "pod_placed", "b2"),
        ("cache", "assume_releasing", "v1"),
        ("writer", "podgroups", ["train"]),
        ("writer", "pods", ["p1"]),
        ("writer", "queues", ["default"]),
        ("writer", "invalid", ["ml/bad"]),
        ("writer", "field_warnings", ["b1"]),
        ("writer", "hypernodes", []),
        # the eviction itself runs in the background, after apply returned
        ("evictor", "evict", "v1"),
    ]


def test_an_eviction_the_api_server_refused_gives_the_pod_its_room_back() -> None:
    journal = Journal()
    result = SessionResult(evictions=[evict("kept"), evict("gone")])
    asyncio.run(apply_and_settle(effects(journal, refused=frozenset({"kept"})), result))
    cache_calls = [(call, uid) for who, call, uid in journal.calls if who == "cache"]
    assert cache_calls == [
        ("assume_releasing", "kept"),
        ("assume_releasing", "gone"),
        ("forget_releasing", "kept"),
    ]


def test_an_empty_result_still_tells_the_writer_every_list() -> None:
    # The writer compares with what it wrote last: an empty list is an answer too.
    journal = Journal()
    asyncio.run(apply_and_settle(effects(journal), SessionResult()))
    assert journal.calls == [
        ("binder", "dispatch", []),
        ("writer", "podgroups", []),
        ("writer", "pods", []),
        ("writer", "queues", []),
        ("writer", "invalid", []),
        ("writer", "field_warnings", []),
        ("writer", "hypernodes", []),
    ]


def test_finish_drains_binds_statuses_and_events_then_stops_the_event_writers_and_binder() -> None:
    journal = Journal()

    async def release(answered: bool) -> None:
        journal.add("lease", "release", answered)

    asyncio.run(effects(journal).finish(release))
    # The writes are drained, and once the fence is closed drained again: the second
    # waits for the answers of what was still on the wire.
    assert journal.calls == [
        ("binder", "stop_retrying", None),
        ("binder", "drain", None),
        ("writer", "drain", None),
        ("recorder", "drain", None),
        ("writer", "drain", None),
        ("recorder", "drain", None),
        ("lease", "release", True),
        ("recorder", "close", None),
        ("binder", "close", None),
    ]


def test_binds_that_do_not_drain_in_time_are_fenced_and_only_those_on_the_wire_answered(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("scheduler.effects.apply.BIND_DRAIN_SECONDS", 0.01)
    monkeypatch.setattr("scheduler.effects.apply.BIND_ANSWER_SECONDS", 0.01)
    journal = Journal()
    answered = asyncio.run(effects(journal, drain_forever=True).finish_binds())
    assert answered is False, "a bind on the wire may still land: the lease must not go"
    assert journal.calls == [
        ("binder", "stop_retrying", None),
        ("binder", "drain", None),
        ("binder", "fence", None),
        ("binder", "drain", None),
    ]
    assert "shutdown: some binds were not answered in time" in caplog.text


@pytest.mark.parametrize("native", [False, True], ids=["volcano", "native"])
@pytest.mark.parametrize(("whole", "written"), [(True, [["train"]]), (False, [])])
def test_a_gangs_first_running_waits_for_its_binds_to_be_answered(
    whole: bool, written: list[list[str]], native: bool
) -> None:
    # Written before its binds land, Running (a native PodGroup's scheduled condition) would
    # tell a next leader the gang had been whole while a leader stopped mid-binds left it
    # short; a bind that failed drops it.
    journal = Journal()
    cache, binder = FakeCache(journal), FakeBinder(journal)
    kind = NativeStatusUpdate if native else PodGroupStatusUpdate
    update = kind("ml", "train", PodGroupPhase.RUNNING, (), 2, 0, 0)
    key = update.key
    cache.binding.add(key)
    subject = effects(journal, cache=cache, binder=binder)

    subject.apply(SessionResult(binds=[bind("b1")], podgroups=[update]))

    def podgroup_writes() -> list[object]:
        return [names for who, call, names in journal.calls if call == "podgroups" and names]

    assert podgroup_writes() == []
    (answered,) = binder.answered
    answered(key)  # the gang still has a bind out
    assert podgroup_writes() == []
    cache.binding.clear()
    if whole:
        cache.whole.add(key)
    answered(key)
    assert podgroup_writes() == written


def test_a_bind_never_answered_leaves_the_lease_to_expire(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("scheduler.effects.apply.BIND_DRAIN_SECONDS", 0.01)
    monkeypatch.setattr("scheduler.effects.apply.BIND_ANSWER_SECONDS", 0.01)
    journal = Journal()

    async def release(answered: bool) -> None:
        journal.add("lease", "release", answered)

    asyncio.run(effects(journal, drain_forever=True).finish(release))
    assert ("lease", "release", False) in journal.calls
    assert ("lease", "release", True) not in journal.calls
