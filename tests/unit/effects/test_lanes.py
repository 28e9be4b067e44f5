"""KeyedLane: only the newest write of an object waits, an object is never written twice at
once (so an older write never lands after a newer one), and at most `concurrency` run."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.effects.lanes import KeyedLane, Write


class Server:
    """Records writes; a write of a held key waits until the key is released."""

    def __init__(self) -> None:
        self.landed: list[tuple[str, int]] = []
        self.running: set[str] = set()
        self.most_at_once = 0
        self.held: dict[str, asyncio.Event] = {}

    def write(self, key: str, version: int) -> Write:
        async def run() -> None:
            assert key not in self.running, f"{key} written twice at once"
            self.running.add(key)
            self.most_at_once = max(self.most_at_once, len(self.running))
            gate = self.held.get(key)
            if gate is not None:
                await gate.wait()
            await asyncio.sleep(0)
            self.landed.append((key, version))
            self.running.discard(key)

        return run


def test_a_write_replaced_before_its_turn_never_runs() -> None:
    async def main() -> Server:
        server = Server()
        lane = KeyedLane(concurrency=1)
        server.held["a"] = asyncio.Event()
        lane.put("a", server.write("a", 1))
        await asyncio.sleep(0)
        for version in (2, 3, 4):
            lane.put("b", server.write("b", version))
        assert lane.backlog == 1
        server.held["a"].set()
        await lane.drain()
        return server

    server = asyncio.run(main())
    assert server.landed == [("a", 1), ("b", 4)]


def test_a_newer_write_of_an_object_being_written_lands_after_it() -> None:
    async def main() -> Server:
        server = Server()
        lane = KeyedLane(concurrency=4)
        server.held["pg"] = asyncio.Event()
        lane.put("pg", server.write("pg", 1))
        await asyncio.sleep(0)
        lane.put("pg", server.write("pg", 2))
        await asyncio.sleep(0.01)
        server.held["pg"].set()
        await lane.drain()
        return server

    server = asyncio.run(main())
    assert server.landed == [("pg", 1), ("pg", 2)]


def test_no_more_than_concurrency_writes_run_at_once() -> None:
    async def main() -> Server:
        server = Server()
        lane = KeyedLane(concurrency=3)
        for index in range(10):
            lane.put(f"k{index}", server.write(f"k{index}", 1))
        await lane.drain()
        return server

    server = asyncio.run(main())
    assert server.most_at_once == 3
    assert sorted(key for key, _ in server.landed) == sorted(f"k{i}" for i in range(10))


def test_a_write_that_crashes_does_not_stop_the_lane(caplog: pytest.LogCaptureFixture) -> None:
    async def crash() -> None:
        raise RuntimeError("bug")

    async def main() -> Server:
        server = Server()
        lane = KeyedLane(concurrency=1)
        lane.put("bad", crash)
        lane.put("good", server.write("good", 1))
        await lane.drain()
        return server

    server = asyncio.run(main())
    assert server.landed == [("good", 1)]
    assert "background write crashed" in caplog.text


def test_urgent_writes_go_before_refreshes_waiting_their_turn() -> None:
    async def main() -> Server:
        server = Server()
        lane = KeyedLane(concurrency=1)
        server.held["busy"] = asyncio.Event()
        lane.put("busy", server.write("busy", 1))
        await asyncio.sleep(0)
        lane.put("r1", server.write("r1", 1), urgent=False)
        lane.put("r2", server.write("r2", 1), urgent=False)
        lane.put("u", server.write("u", 1))
        server.held["busy"].set()
        await lane.drain()
        return server

    assert [key for key, _ in asyncio.run(main()).landed] == ["busy", "u", "r1", "r2"]


def test_an_objects_refresh_goes_once_per_refresh_period_the_newest_one() -> None:
    async def main() -> tuple[Server, list[float]]:
        server = Server()
        lane = KeyedLane(concurrency=4, refresh_seconds=0.2)
        loop = asyncio.get_running_loop()
        began = loop.time()
        times: list[float] = []
        lane.put("pg", server.write("pg", 1))
        await asyncio.sleep(0.01)
        for version in (2, 3, 4):  # three sessions' messages within one period
            lane.put("pg", server.write("pg", version), urgent=False)
        while len(server.landed) < 2:
            await asyncio.sleep(0.01)
        times.append(loop.time() - began)
        return server, times

    server, times = asyncio.run(main())
    assert server.landed == [("pg", 1), ("pg", 4)]
    assert times[0] >= 0.2


def test_an_urgent_write_does_not_wait_for_a_refresh_period() -> None:
    async def main() -> Server:
        server = Server()
        lane = KeyedLane(concurrency=4, refresh_seconds=3600)
        lane.put("pg", server.write("pg", 1))
        await asyncio.sleep(0.01)
        lane.put("pg", server.write("pg", 2), urgent=False)  # would wait an hour
        lane.put("pg", server.write("pg", 3))  # the phase changed: now
        while len(server.landed) < 2:
            await asyncio.sleep(0.01)
        return server

    assert asyncio.run(main()).landed == [("pg", 1), ("pg", 3)]


def test_drain_sends_refreshes_without_their_wait() -> None:
    async def main() -> Server:
        server = Server()
        lane = KeyedLane(concurrency=4, refresh_seconds=3600)
        lane.put("pg", server.write("pg", 1))
        await asyncio.sleep(0.01)
        lane.put("pg", server.write("pg", 2), urgent=False)
        await asyncio.wait_for(lane.drain(), timeout=5)
        return server

    assert asyncio.run(main()).landed == [("pg", 1), ("pg", 2)]


def test_a_refresh_left_behind_by_an_urgent_write_does_not_start_the_next_refresh_early() -> None:
    async def main() -> tuple[Server, list[tuple[str, int]]]:
        server = Server()
        lane = KeyedLane(concurrency=1, refresh_seconds=0.3)
        for key in ("busy", "y"):
            server.held[key] = asyncio.Event()
        lane.put("busy", server.write("busy", 1))
        await asyncio.sleep(0)
        lane.put("pg", server.write("pg", 1), urgent=False)  # due: waits in the refresh queue
        lane.put("pg", server.write("pg", 2))  # a verdict: moves to the urgent queue
        lane.put("y", server.write("y", 1))  # holds the lane's one slot after pg's write
        server.held["busy"].set()
        while ("pg", 2) not in server.landed:
            await asyncio.sleep(0.005)
        # A message changes right after: it waits its refresh_seconds, stale entry or not.
        lane.put("pg", server.write("pg", 3), urgent=False)
        server.held["y"].set()
        while ("y", 1) not in server.landed:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.05)
        early = list(server.landed)
        await lane.drain()
        return server, early

    server, early = asyncio.run(main())
    assert ("pg", 3) not in early
    assert server.landed[-1] == ("pg", 3)
    assert ("pg", 1) not in server.landed


class Binds:
    """Binds waiting to be sent, until `clear()`."""

    def __init__(self) -> None:
        self.cleared = asyncio.Event()

    def waiting(self) -> bool:
        return not self.cleared.is_set()

    async def wait_cleared(self) -> None:
        await self.cleared.wait()


def test_while_binds_wait_an_objects_writes_wait_and_only_the_newest_goes() -> None:
    async def main() -> tuple[list[tuple[str, int]], Server]:
        server = Server()
        binds = Binds()
        lane = KeyedLane(concurrency=4)
        lane.yield_to(binds.waiting, binds.wait_cleared, hold_seconds=60)
        for version in (1, 2, 3):
            lane.put("pg", server.write("pg", version))
            await asyncio.sleep(0.01)
        landed_while_binds_waited = list(server.landed)
        binds.cleared.set()
        for _ in range(10):
            await asyncio.sleep(0)
        return landed_while_binds_waited, server

    held, server = asyncio.run(main())
    assert held == []
    assert server.landed == [("pg", 3)]


def test_a_write_held_for_binds_goes_after_hold_seconds_even_while_binds_wait() -> None:
    async def main() -> Server:
        server = Server()
        binds = Binds()
        lane = KeyedLane(concurrency=4)
        lane.yield_to(binds.waiting, binds.wait_cleared, hold_seconds=0.05)
        lane.put("pg", server.write("pg", 1))
        await asyncio.sleep(0.2)
        return server

    server = asyncio.run(main())
    assert server.landed == [("pg", 1)]


def test_drain_sends_writes_held_for_binds() -> None:
    async def main() -> Server:
        server = Server()
        binds = Binds()
        lane = KeyedLane(concurrency=4)
        lane.yield_to(binds.waiting, binds.wait_cleared, hold_seconds=60)
        lane.put("pg", server.write("pg", 1))
        await lane.drain()
        return server

    server = asyncio.run(main())
    assert server.landed == [("pg", 1)]
