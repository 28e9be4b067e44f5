"""The scheduler process's collector settings: held while it starts, a larger young
generation, and the cache's objects kept out of traversals once loaded."""

from __future__ import annotations

import argparse
import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler import cli, gc_policy, server
from tests.unit.offline_process import offline_process


@pytest.fixture
def restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()


@pytest.mark.usefixtures("restored")
def test_tune_enlarges_the_young_generation_only() -> None:
    gc.set_threshold(700, 10, 10)

    gc_policy.tune()

    assert gc.get_threshold() == (gc_policy.YOUNG_THRESHOLD, 10, 10)


@pytest.mark.usefixtures("restored")
def test_settle_keeps_what_the_cache_loaded_out_of_traversals() -> None:
    cache = [{"pod": index} for index in range(1000)]

    gc_policy.settle()

    assert gc.get_freeze_count() >= len(cache)
    assert not any(obj is cache for obj in gc.get_objects())


@pytest.fixture
def collector_back() -> Iterator[None]:
    yield
    gc.enable()
    gc.unfreeze()


@pytest.mark.usefixtures("collector_back")
def test_hold_stops_the_collector_until_settle_freezes_the_cache_and_lets_it_run() -> None:
    gc_policy.hold()
    assert not gc.isenabled()
    cache = [{"pod": index} for index in range(1000)]

    gc_policy.settle()

    assert gc.isenabled()
    assert not any(obj is cache for obj in gc.get_objects())


@pytest.mark.usefixtures("collector_back")
def test_muster_scheduler_runs_with_the_collector_held_and_gives_it_back_on_return(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, bool] = {}

    def parser(named: str | None, prog: str) -> argparse.ArgumentParser:
        fake = argparse.ArgumentParser(prog=prog)
        fake.add_argument("command")
        fake.set_defaults(func=lambda args: seen.setdefault(args.command, gc.isenabled()) and 0)
        return fake

    monkeypatch.setattr(cli, "build_parser", parser)
    cli.main(["scheduler"])
    assert seen["scheduler"] is False  # held from before the scheduler's modules load
    assert gc.isenabled()
    cli.main(["status"])
    assert seen["status"] is True  # other commands never hold it


@pytest.mark.usefixtures("collector_back")
def test_a_cache_slow_to_load_gets_the_collector_back_while_the_lists_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    process = offline_process(tmp_path)
    monkeypatch.setattr(gc_policy, "HOLD_SECONDS", 0.01)

    async def scenario() -> None:
        gc_policy.hold()
        loaded = [r.synced for r in process.reflectors]
        waiting = asyncio.ensure_future(gc_policy.wait_loaded(loaded, process.stopping))
        for _ in range(500):
            if gc.isenabled():
                break
            await asyncio.sleep(0.01)
        assert gc.isenabled()
        assert not waiting.done()  # no reflector listed anything: still waiting
        process.stopping.set()
        await waiting

    asyncio.run(scenario())


@pytest.mark.usefixtures("collector_back")
def test_paused_stops_the_collector_inside_only_and_leaves_a_held_one_held() -> None:
    with gc_policy.paused():
        assert not gc.isenabled()
    assert gc.isenabled()

    with pytest.raises(RuntimeError), gc_policy.paused():
        raise RuntimeError("a session that fails")
    assert gc.isenabled()

    gc_policy.hold()
    with gc_policy.paused():
        pass
    assert not gc.isenabled(), "a collector held for the start stays held"


@pytest.mark.usefixtures("collector_back")
def test_a_session_runs_with_the_collector_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    process = offline_process(tmp_path)
    during: list[bool] = []
    decide = server.schedule

    def schedule(*args: Any, **kwargs: Any) -> Any:
        during.append(gc.isenabled())
        return decide(*args, **kwargs)

    monkeypatch.setattr(server, "schedule", schedule)

    async def scenario() -> None:
        process.cycle()

    asyncio.run(scenario())
    assert during == [False]
    assert gc.isenabled()
