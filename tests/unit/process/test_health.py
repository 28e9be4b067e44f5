"""The probes' rules: a stalled loop or an ended task is not live; a long-broken watch not ready."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from scheduler.health import QUIET_MARGIN_SECONDS, WATCH_BROKEN_SECONDS, BindProgress, Health


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeReflector:
    name: str = "pod"
    synced: bool = True
    broken: float | None = None
    heard: float | None = None
    watch_timeout: int = 300

    def is_synced(self) -> bool:
        return self.synced

    def broken_since(self) -> float | None:
        return self.broken

    def last_heard(self) -> float | None:
        return self.heard


def test_loop_that_finishes_cycles_is_live() -> None:
    clock = Clock()
    health = Health(1.0, [], clock)
    for _ in range(30):
        clock.now += 1.0
        health.cycle_finished()
    assert health.liveness().ok


@pytest.mark.parametrize(
    ("period", "stall", "live"),
    [
        pytest.param(1.0, 9.9, True, id="short-period-under-10s"),
        pytest.param(1.0, 10.1, False, id="short-period-over-10s"),
        pytest.param(2.0, 19.9, True, id="long-period-under-10-periods"),
        pytest.param(2.0, 20.1, False, id="long-period-over-10-periods"),
    ],
)
def test_no_finished_cycle_for_max_of_10s_and_10_periods_is_not_live(
    period: float, stall: float, live: bool
) -> None:
    clock = Clock()
    health = Health(period, [], clock)
    health.cycle_finished()
    clock.now += stall
    verdict = health.liveness()
    assert verdict.ok is live
    if not live:
        assert "no scheduling cycle finished" in verdict.text()


def test_an_ended_background_task_is_not_live() -> None:
    async def scenario() -> str:
        health = Health(1.0, [], Clock())

        async def ends() -> None:
            return None

        async def runs() -> None:
            await asyncio.sleep(60)

        ended = asyncio.get_running_loop().create_task(ends(), name="reflector pod")
        running = asyncio.get_running_loop().create_task(runs(), name="reflector node")
        health.watch_tasks([ended, running])
        await asyncio.sleep(0)
        text = health.liveness().text()
        running.cancel()
        return text

    assert asyncio.run(scenario()) == "task reflector pod ended"


def test_not_ready_until_every_cache_is_synced() -> None:
    reflectors = [FakeReflector("node"), FakeReflector("pod", synced=False)]
    health = Health(1.0, reflectors, Clock())
    assert health.readiness().text() == "pod cache not synced"
    reflectors[1].synced = True
    assert health.readiness().ok


def test_a_watch_broken_longer_than_30s_is_not_ready() -> None:
    clock = Clock()
    reflector = FakeReflector("podgroup", broken=clock.now)
    health = Health(1.0, [reflector], clock)
    clock.now += WATCH_BROKEN_SECONDS - 1
    assert health.readiness().ok, "a short break (a relist, a server restart) keeps it ready"
    clock.now += 2
    assert "podgroup watch broken for 31s" in health.readiness().text()
    reflector.broken = None
    assert health.readiness().ok


def test_a_watch_quiet_past_its_timeout_and_margin_is_not_ready() -> None:
    clock = Clock()
    reflector = FakeReflector("queue", heard=clock.now, watch_timeout=60)
    health = Health(1.0, [reflector], clock)
    clock.now += 60 + QUIET_MARGIN_SECONDS - 1
    assert health.readiness().ok, "a watch may be silent up to its timeout and the margin"
    clock.now += 2
    assert "queue watch quiet for 91s: no event and no bookmark" in health.readiness().text()
    reflector.heard = clock.now  # a bookmark
    assert health.readiness().ok


def stall_scenario(*, binds_succeed: bool, placed: bool) -> tuple[list[bool], str]:
    """A session places a gang (or finds the cluster full); each period its binds succeed
    or fail for good and the next session places it again. Readiness, second by second."""
    clock = Clock()
    progress = BindProgress(clock)
    health = Health(1.0, [FakeReflector()], clock, progress)
    verdicts = []
    for second in range(40):
        uid = f"p-{second}"
        progress.session_applied([(uid, "ns/gang")] if placed else [])
        if placed:
            progress.sending(uid, "ns/gang")  # the binder, as it takes the bind
            progress.settled(uid, bound=binds_succeed, failed=not binds_succeed)
        clock.now += 1.0
        verdicts.append(health.readiness().ok)
    return verdicts, health.readiness().text()


def test_placeable_gangs_with_no_bind_succeeding_for_30s_turn_readyz_red() -> None:
    verdicts, text = stall_scenario(binds_succeed=False, placed=True)
    assert all(verdicts[:30]), "red before the 30 s the issue allows"
    assert not verdicts[-1]
    assert "1 gang(s) could be placed but no bind succeeded for 40s (limit 30s)" in text


def test_a_full_cluster_where_no_session_places_anything_is_no_stall() -> None:
    verdicts, _ = stall_scenario(binds_succeed=False, placed=False)
    assert all(verdicts)


def test_binds_that_succeed_are_no_stall_however_long_work_keeps_coming() -> None:
    verdicts, _ = stall_scenario(binds_succeed=True, placed=True)
    assert all(verdicts)


def test_a_bind_retried_with_its_room_kept_is_placeable_until_it_is_answered() -> None:
    clock = Clock()
    progress = BindProgress(clock)
    progress.sending("a", "ns/g")
    progress.sending("b", "ns/g")
    progress.sending("c", "ns/h")
    assert progress.placeable == 2
    progress.settled("c", failed=True)
    assert progress.placeable == 2, "a gang whose bind failed waits for the next session"
    progress.session_applied([])
    assert progress.placeable == 1
    progress.settled("a", bound=True)
    progress.settled("b")  # abandoned with the lease, or waiting for its claims
    assert progress.placeable == 0 and progress.placeable_since is None
    assert progress.last_bind == clock.now
