"""The probes' rules: a stalled loop or an ended task is not live; a long-broken watch not ready."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from scheduler.health import WATCH_BROKEN_SECONDS, Health


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

    def is_synced(self) -> bool:
        return self.synced

    def broken_since(self) -> float | None:
        return self.broken


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
