"""A paged list asks for each next page before it applies the one it has, and a list that
fails midway leaves no request behind."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping

import pytest

from scheduler.cache.reflector import Kind, Reflector
from scheduler.kube.errors import Gone
from tests.unit.cache.test_reflector import Item, item


class PagedClient:
    """Serves `pages` by continue token ("1", "2", ...); a page given as an exception fails
    its request. Each answer waits until the test lets it go, as a server takes time to
    read and encode a page."""

    def __init__(
        self,
        pages: list[list[dict[str, object]] | Exception],
        on_ask: Callable[[str], None] = lambda token: None,
    ) -> None:
        self.pages = pages
        self.on_ask = on_ask
        self.asked: list[str] = []
        self.answered: list[str] = []
        self.cancelled: list[str] = []

    async def request(self, method: str, path: str, params: Mapping[str, str]) -> bytes:
        token = params.get("continue", "0")
        self.asked.append(token)
        self.on_ask(token)
        try:
            await asyncio.sleep(0.001)
        except asyncio.CancelledError:
            self.cancelled.append(token)
            raise
        self.answered.append(token)
        page = self.pages[int(token)]
        if isinstance(page, Exception):
            raise page
        following = str(int(token) + 1) if int(token) + 1 < len(self.pages) else ""
        body = {"metadata": {"resourceVersion": "9", "continue": following}, "items": page}
        return json.dumps(body).encode()


def paged_reflector(
    client: PagedClient, store: dict[str, int], asked_when_applied: dict[str, list[str]]
) -> Reflector[Item]:
    def upsert(obj: Item) -> None:
        asked_when_applied[obj.metadata["name"]] = list(client.asked)
        store[obj.metadata["name"]] = obj.size

    kind = Kind("thing", "/things", Item, lambda o: o.metadata["name"], upsert, store.pop)
    return Reflector(client, kind, page_size=2)  # type: ignore[arg-type]


def test_each_next_page_is_asked_for_before_the_page_in_hand_is_applied() -> None:
    pages: list[list[dict[str, object]] | Exception] = [
        [item("a", 1), item("b", 2)],
        [item("c", 3), item("d", 4)],
        [item("e", 5)],
    ]
    client = PagedClient(pages)
    store: dict[str, int] = {}
    asked_when_applied: dict[str, list[str]] = {}
    reflector = paged_reflector(client, store, asked_when_applied)

    asyncio.run(reflector._list())

    assert store == {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}
    assert reflector.resource_version == "9"
    # Page 0's items were applied with page 1 already asked for, page 1's with page 2.
    assert asked_when_applied["a"] == ["0", "1"]
    assert asked_when_applied["c"] == ["0", "1", "2"]
    # The last page asks for nothing more.
    assert client.asked == ["0", "1", "2"]


def test_a_page_that_fails_fails_the_list_after_the_pages_before_it() -> None:
    pages: list[list[dict[str, object]] | Exception] = [
        [item("a", 1), item("b", 2)],
        Gone(410, "Expired", "the continue token is too old", "GET", "/things"),
        [item("e", 5)],
    ]
    client = PagedClient(pages)
    store: dict[str, int] = {}
    reflector = paged_reflector(client, store, {})

    with pytest.raises(Gone):
        asyncio.run(reflector._list())

    assert store == {"a": 1, "b": 2}
    assert reflector.resource_version == "", "a failed list must not start a watch"
    assert client.asked == ["0", "1"]


def test_a_list_cancelled_midway_cancels_the_page_it_asked_for() -> None:
    pages: list[list[dict[str, object]] | Exception] = [[item("a", 1)], [item("b", 2)]]
    listing: list[asyncio.Task[None]] = []
    # Cancelled the moment it asks for page 1, before it applies page 0 (a shutdown then).
    client = PagedClient(pages, on_ask=lambda token: token == "1" and listing[0].cancel())
    store: dict[str, int] = {}
    reflector = paged_reflector(client, store, {})

    async def scenario() -> None:
        listing.append(asyncio.get_running_loop().create_task(reflector._list()))
        with pytest.raises(asyncio.CancelledError):
            await listing[0]
        await asyncio.sleep(0.01)  # time for an orphaned request to be answered

    asyncio.run(scenario())
    assert client.asked == ["0", "1"]
    assert client.cancelled == ["1"] and client.answered == ["0"]
