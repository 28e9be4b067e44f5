"""The reflector survives what would freeze the cache: unreadable objects, bugs, broken watches."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import msgspec
import pytest

from scheduler.cache import reflector as reflector_module
from scheduler.cache.reflector import Kind, Reflector
from scheduler.kube.errors import Gone, StatusError, TransportError


class Item(msgspec.Struct):
    metadata: dict[str, str]
    size: int


class FakeClient:
    """Serves one list, then the scripted watches, one per call; no sockets."""

    def __init__(
        self, items: list[Any], watches: list[list[Any] | Exception | Callable[[], list[Any]]]
    ) -> None:
        self.items = items
        self.watches = watches
        self.lists = 0

    async def request(
        self, method: str, path: str, params: Mapping[str, str] | None = None, **_: Any
    ) -> bytes:
        if path == "/readyz":
            return b"ok"
        self.lists += 1
        body = {"metadata": {"resourceVersion": "5"}, "items": self.items}
        return json.dumps(body).encode()

    async def watch(
        self,
        path: str,
        params: Mapping[str, str],
        *,
        timeout: float,
    ) -> AsyncIterator[bytes]:
        if not self.watches:
            await asyncio.sleep(3600)
        script = self.watches.pop(0)
        if isinstance(script, Exception):
            raise script
        if callable(script):
            script = script()
        for event in script:
            yield json.dumps(event).encode()


def item(name: str, size: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "size": size}


def reflector_for(
    client: FakeClient,
    store: dict[str, int],
    clock: Callable[[], float] = lambda: 0.0,
    **options: Any,
) -> tuple[Reflector[Item], list[str]]:
    """A reflector of things into `store`, naming what it skips; `options` go to Reflector."""
    skipped: list[str] = []
    kind = Kind(
        "thing",
        "/things",
        Item,
        lambda o: o.metadata["name"],
        lambda o: store.__setitem__(o.metadata["name"], o.size),
        lambda key: store.pop(key, None),  # type: ignore[arg-type,return-value]
    )
    reflector = Reflector(client, kind, on_undecodable=skipped.append, clock=clock, **options)  # type: ignore[arg-type]
    return reflector, skipped


async def polled(done: Callable[[], bool], tries: int = 3000) -> None:
    """Return once `done()` holds, or after `tries` milliseconds or so (the caller asserts)."""
    for _ in range(tries):
        if done():
            return
        await asyncio.sleep(0.001)


async def run_until(reflector: Reflector[Item], done: Callable[[], bool]) -> None:
    task = asyncio.get_running_loop().create_task(reflector.run())
    await polled(done)
    assert not task.done(), "the reflector task must never end"
    task.cancel()


def test_an_unreadable_object_in_the_list_is_skipped_and_named() -> None:
    store: dict[str, int] = {}
    client = FakeClient([item("a", 1), item("bad", "huge"), item("c", 3)], [])
    reflector, skipped = reflector_for(client, store)
    asyncio.run(run_until(reflector, reflector.is_synced))
    assert store == {"a": 1, "c": 3}
    assert len(skipped) == 1 and "thing bad cannot be read" in skipped[0]


def test_an_unreadable_watch_event_is_skipped_and_the_watch_goes_on() -> None:
    store: dict[str, int] = {}
    events = [
        {"type": "ADDED", "object": item("bad", [1])},
        {"type": "ADDED", "object": item("after", 7)},
    ]
    client = FakeClient([], [events])
    reflector, skipped = reflector_for(client, store)
    asyncio.run(run_until(reflector, lambda: "after" in store))
    assert store == {"after": 7}
    assert skipped and "thing bad" in skipped[0]


def test_an_unexpected_error_lists_again_instead_of_ending_the_task() -> None:
    store: dict[str, int] = {}
    client = FakeClient([item("a", 1)], [RuntimeError("a bug"), []])
    reflector, _ = reflector_for(client, store)
    asyncio.run(run_until(reflector, lambda: client.lists >= 2))
    assert client.lists >= 2 and store == {"a": 1}


def test_a_failing_watch_is_broken_until_the_kind_is_listed_again() -> None:
    now = [100.0]
    client = FakeClient([], [TransportError("refused"), []])
    reflector, _ = reflector_for(client, {}, clock=lambda: now[0])
    seen: list[float | None] = []

    async def scenario() -> None:
        task = asyncio.get_running_loop().create_task(reflector.run())
        for _ in range(2000):
            if reflector.broken_since() is not None and not seen:
                seen.append(reflector.broken_since())
            if seen and reflector.broken_since() is None:
                break
            await asyncio.sleep(0.001)
        task.cancel()

    asyncio.run(scenario())
    assert seen == [100.0]
    assert reflector.broken_since() is None
    assert client.lists == 2


@pytest.mark.parametrize(
    "failure",
    [TransportError("connection reset"), Gone(410, "Expired", "too old", "WATCH", "/things")],
    ids=["transport", "gone"],
)
def test_what_was_written_while_the_watch_was_down_is_in_the_cache_once_it_works(
    failure: Exception,
) -> None:
    """A session runs only while no reflector is broken: so whenever it counts as working
    after a failure, the cache must already hold what another writer did meanwhile (a pod
    bound by someone else), not get it later from a resumed watch's replay."""
    store: dict[str, int] = {}
    client = FakeClient([item("a", 1), item("gone", 0)], [])
    failed = asyncio.Event()

    def fail() -> list[Any]:
        # Written while the watch is down: a changed object, a new one, a deleted one.
        client.items = [item("a", 2), item("b", 3)]
        failed.set()
        raise failure

    client.watches = [fail, []]
    reflector, _ = reflector_for(client, store)
    # What a session would see, asked between any two steps of the reflector.
    seen_working: list[dict[str, int]] = []

    async def scenario() -> None:
        task = asyncio.get_running_loop().create_task(reflector.run())
        await failed.wait()
        while client.lists < 2 or reflector.broken_since() is not None:
            if reflector.broken_since() is None:
                seen_working.append(dict(store))
            await asyncio.sleep(0)
        seen_working.append(dict(store))
        task.cancel()

    asyncio.run(asyncio.wait_for(scenario(), timeout=30))
    assert seen_working and all(seen == {"a": 2, "b": 3} for seen in seen_working)


def test_failures_back_off_longer_each_time_and_a_working_watch_starts_again_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pause after a failure grows with the failures in a row (so a server that is down
    is not hammered), and a watch that worked resets it (so the next blip is retried at
    once); each failure is counted by its answer's code and each restart by its reason."""
    pauses: list[int] = []
    monkeypatch.setattr(reflector_module, "_backoff", lambda failures: pauses.append(failures) or 0)
    expired = Gone(410, "Expired", "too old", "WATCH", "/things")
    unavailable = StatusError(503, "ServiceUnavailable", "busy", "WATCH", "/things")
    refused = TransportError("refused")
    bug = RuntimeError("a bug")
    client = FakeClient([], [refused, unavailable, refused, [], refused, expired, bug, []])
    failures: list[str] = []
    restarts: list[str] = []
    reflector, _ = reflector_for(client, {}, on_failure=failures.append, on_restart=restarts.append)
    asyncio.run(run_until(reflector, lambda: not client.watches))
    # An expired watch is listed again at once, with no pause and no reset.
    assert pauses == [1, 2, 3, 1, 2]
    assert failures == ["none", "503", "none", "none", "410"]
    assert restarts == ["error", "error", "error", "error", "relist", "crash"]
