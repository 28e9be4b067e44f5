"""An optional kind (a CRD most clusters lack, as HyperNodes): a 404 is "none of them",
synced and working, said once in the log; the kind is listed again later, so a CRD
installed after start brings its objects in. No sockets."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.cache.reflector import Kind, Reflector
from scheduler.kube.errors import NotFound, Retryable, StatusError
from tests.unit.cache.test_reflector import FakeClient, Item, item, run_until


def not_served(method: str = "GET") -> NotFound:
    return NotFound(
        404, "NotFound", "the server could not find the requested resource", method, "/things"
    )


class CrdLaterClient(FakeClient):
    """Answers each list as `served` says (True: the items; False: 404), its last answer
    for every list after; the watches as FakeClient plays them."""

    def __init__(
        self,
        served: list[bool],
        items: list[Any],
        watches: list[list[Any] | Exception] | None = None,
        ready: list[bool] | None = None,
    ) -> None:
        super().__init__(items, watches or [])
        self.served = served
        # /readyz's answers in turn (True: 200), the last for every question after
        self.ready = ready or [True]
        self.readiness_asked = 0

    async def request(
        self, method: str, path: str, params: Mapping[str, str] | None = None, **_: Any
    ) -> bytes:
        if path == "/readyz":
            answer = self.ready[min(self.readiness_asked, len(self.ready) - 1)]
            self.readiness_asked += 1
            if not answer:
                raise Retryable(500, "", "readyz check failed", "GET", "/readyz")
            return b"ok"
        answer = self.served[min(self.lists, len(self.served) - 1)]
        if not answer:
            self.lists += 1
            raise not_served()
        return await super().request(method, path, params)


NEVER_SERVED = [False]


def reflector_for(
    client: CrdLaterClient,
    store: dict[str, int],
    *,
    optional: bool = True,
    deleted: list[str] | None = None,
    failed: list[str] | None = None,
) -> tuple[Reflector[Item], list[str]]:
    restarts: list[str] = []
    forgotten = deleted if deleted is not None else []
    failures = failed if failed is not None else []

    def delete(key: str) -> None:
        forgotten.append(key)
        store.pop(key, None)

    kind = Kind(
        "thing",
        "/things",
        Item,
        lambda o: o.metadata["name"],
        lambda o: store.__setitem__(o.metadata["name"], o.size),
        delete,
        optional=optional,
    )
    fake: Any = client
    reflector = Reflector(
        fake,
        kind,
        on_restart=restarts.append,
        on_failure=failures.append,
        absent_recheck=0.001,
    )
    return reflector, restarts


def test_an_optional_kind_not_served_is_synced_with_nothing_and_not_broken() -> None:
    store: dict[str, int] = {}
    client = CrdLaterClient(NEVER_SERVED, [item("a", 1)])
    reflector, restarts = reflector_for(client, store)
    asyncio.run(run_until(reflector, lambda: client.lists >= 3))
    assert reflector.is_synced()
    assert reflector.broken_since() is None
    assert store == {}
    assert restarts == [], "a kind that is not served is not a failing watch"


def test_an_optional_kind_is_said_to_be_not_served_once_however_often_it_is_checked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = CrdLaterClient(NEVER_SERVED, [])
    reflector, _ = reflector_for(client, {})
    with caplog.at_level(logging.INFO, logger="scheduler.cache.reflector"):
        asyncio.run(run_until(reflector, lambda: client.lists >= 5))
    said = [r for r in caplog.records if "is not served" in r.getMessage()]
    assert len(said) == 1
    assert "/things" in said[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_objects_arrive_when_the_crd_is_installed_later() -> None:
    store: dict[str, int] = {}
    events = [{"type": "ADDED", "object": item("b", 2)}]
    client = CrdLaterClient([False, False, False, True], [item("a", 1)], [events])
    reflector, _ = reflector_for(client, store)
    asyncio.run(run_until(reflector, lambda: "b" in store))
    assert store == {"a": 1, "b": 2}
    assert client.lists == 4
    assert reflector.resource_version == "5"


def test_objects_leave_when_the_crd_is_removed_and_come_back_with_it() -> None:
    store: dict[str, int] = {}
    deleted: list[str] = []
    # Served, then the watch answers 404 (the CRD was deleted), two lists answer 404,
    # then the CRD is back.
    client = CrdLaterClient([True, False, False, True], [item("a", 1)], [not_served("WATCH")])
    reflector, _ = reflector_for(client, store, deleted=deleted)
    asyncio.run(run_until(reflector, lambda: client.lists >= 4 and "a" in store))
    assert deleted == ["a"], "the objects of a kind no longer served are forgotten"
    assert store == {"a": 1}, "and listed again once it is served again"
    assert reflector.is_synced() and reflector.broken_since() is None


def test_a_kind_that_is_not_optional_answering_404_is_a_broken_watch() -> None:
    client = CrdLaterClient(NEVER_SERVED, [])
    reflector, restarts = reflector_for(client, {}, optional=False)

    async def scenario() -> None:
        task = asyncio.get_running_loop().create_task(reflector.run())
        for _ in range(2000):
            if restarts:
                break
            await asyncio.sleep(0.001)
        task.cancel()

    asyncio.run(scenario())
    assert not reflector.is_synced()
    assert reflector.broken_since() is not None
    assert restarts[:1] == ["error"]


@pytest.fixture
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("scheduler.cache.reflector._backoff", lambda failures: 0.001)


@pytest.mark.usefixtures("quick_backoff")
def test_a_404_from_a_server_not_ready_yet_keeps_what_is_known_and_is_counted() -> None:
    store: dict[str, int] = {}
    deleted: list[str] = []
    failed: list[str] = []
    # Listed; then three watches answer 404 while /readyz says "not ready" (a restarted
    # server whose CRDs are not served yet); then the watch works again.
    gone = not_served("WATCH")
    client = CrdLaterClient(
        [True], [item("a", 1)], [gone, gone, gone, []], ready=[False, False, False, True]
    )
    reflector, _ = reflector_for(client, store, deleted=deleted, failed=failed)
    asyncio.run(run_until(reflector, lambda: len(failed) >= 3 and not client.watches))
    assert deleted == [], "a server still starting emptied the cache of an optional kind"
    assert store == {"a": 1}
    assert failed == ["404", "404", "404"]
    assert reflector.broken_since() is None, "the watch that works again is not broken"


@pytest.mark.usefixtures("quick_backoff")
def test_a_403_on_a_needed_kind_is_retried_and_never_means_none() -> None:
    store: dict[str, int] = {}
    deleted: list[str] = []
    failed: list[str] = []
    forbidden = StatusError(403, "Forbidden", "pods is forbidden", "WATCH", "/things")
    client = CrdLaterClient([True], [item("a", 1)], [forbidden, forbidden, []])
    reflector, _ = reflector_for(client, store, optional=False, deleted=deleted, failed=failed)
    asyncio.run(run_until(reflector, lambda: len(failed) >= 2 and reflector.broken_since() is None))
    assert store == {"a": 1} and deleted == []
    assert failed == ["403", "403"]
