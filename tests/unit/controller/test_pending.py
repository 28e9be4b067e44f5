"""The grouping loop: a new pod is grouped while the list of existing ones is still paged in."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from scheduler.controller.pending import PendingPods
from scheduler.kube.errors import TransportError
from tests.unit.controller import workloads as w

Obj = dict[str, Any]


def pending(name: str, *, grouped: bool = False, created: str = "2026-01-01T00:00:00Z") -> Obj:
    made = w.with_uid(w.pod(name, "ns", None), uid=f"uid-{name}")
    made["metadata"]["resourceVersion"] = "1"
    made["metadata"]["creationTimestamp"] = created
    if grouped:
        made["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "g"
    return made


class SlowServer:
    """A KubeClient whose list pages come one at a time, when the test lets them."""

    def __init__(self, pages: list[list[Obj]]) -> None:
        self.pages = pages
        self.page_served = asyncio.Event()
        self.next_page = asyncio.Event()
        self.events: asyncio.Queue[Obj] = asyncio.Queue()
        self.selectors: list[str] = []

    async def request(
        self, method: str, path: str, *, params: Mapping[str, str] | None = None
    ) -> bytes:
        params = params or {}
        self.selectors.append(params.get("fieldSelector", ""))
        index = int(params.get("continue") or 0)
        if index:
            await self.next_page.wait()
            self.next_page.clear()
        more = index + 1 < len(self.pages)
        body = {
            "metadata": {"resourceVersion": "10", "continue": str(index + 1) if more else ""},
            "items": self.pages[index],
        }
        self.page_served.set()
        return json.dumps(body).encode()

    async def watch(
        self, path: str, params: Mapping[str, str], *, timeout: float
    ) -> AsyncIterator[bytes]:
        while True:
            event = await self.events.get()
            yield json.dumps(event).encode()


async def until(check: Any) -> None:
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met")


def test_a_new_pod_is_grouped_before_the_list_of_old_ones_ends() -> None:
    server = SlowServer([[pending("old-0")], [pending("old-1")], [pending("old-2")]])
    grouped: list[str] = []

    async def group(pod: Obj) -> None:
        grouped.append(pod["metadata"]["name"])

    async def scenario() -> None:
        loop = PendingPods(server, group, scheduler_names=("muster",), workers=1)  # type: ignore[arg-type]
        task = asyncio.create_task(loop.run())
        await until(lambda: grouped == ["old-0"])
        server.events.put_nowait({"type": "ADDED", "object": pending("new")})
        await until(lambda: "new" in grouped)
        assert not loop.listed.is_set(), "the list is still being paged in"
        server.next_page.set()
        await until(lambda: "old-1" in grouped)
        server.next_page.set()
        await until(lambda: loop.listed.is_set() and "old-2" in grouped)
        task.cancel()

    asyncio.run(scenario())
    assert grouped == ["old-0", "new", "old-1", "old-2"]
    assert set(server.selectors) == {"spec.nodeName=,spec.schedulerName=muster"}


def test_a_listed_pod_the_watch_saw_grouped_since_is_left_alone() -> None:
    server = SlowServer([[pending("a")], [pending("b"), pending("c")]])
    grouped: list[str] = []

    async def group(pod: Obj) -> None:
        grouped.append(pod["metadata"]["name"])

    async def scenario() -> None:
        loop = PendingPods(server, group, scheduler_names=("muster",), workers=1)  # type: ignore[arg-type]
        task = asyncio.create_task(loop.run())
        await until(lambda: grouped == ["a"])
        # another replica grouped b meanwhile: its newer state comes through the watch
        server.events.put_nowait({"type": "MODIFIED", "object": pending("b", grouped=True)})
        await asyncio.sleep(0.05)
        server.next_page.set()
        await until(lambda: loop.listed.is_set() and "c" in grouped)
        task.cancel()

    asyncio.run(scenario())
    assert grouped == ["a", "c"]


def test_several_scheduler_names_list_every_unbound_pod_and_filter_here() -> None:
    theirs = pending("theirs")
    theirs["spec"]["schedulerName"] = "default-scheduler"
    server = SlowServer([[theirs, pending("ours")]])
    grouped: list[str] = []

    async def group(pod: Obj) -> None:
        grouped.append(pod["metadata"]["name"])

    async def scenario() -> None:
        loop = PendingPods(server, group, scheduler_names=("muster", "volcano"), workers=2)  # type: ignore[arg-type]
        task = asyncio.create_task(loop.run())
        await until(lambda: loop.listed.is_set() and grouped)
        task.cancel()

    asyncio.run(scenario())
    assert grouped == ["ours"]
    assert set(server.selectors) == {"spec.nodeName="}


def test_listed_pods_are_grouped_newest_first() -> None:
    server = SlowServer(
        [
            [
                pending("old", created="2026-01-01T00:00:00Z"),
                pending("newest", created="2026-01-01T00:05:00Z"),
                pending("newer", created="2026-01-01T00:01:00Z"),
            ]
        ]
    )
    grouped: list[str] = []

    async def group(pod: Obj) -> None:
        grouped.append(pod["metadata"]["name"])

    async def scenario() -> None:
        loop = PendingPods(server, group, scheduler_names=("muster",), workers=1)  # type: ignore[arg-type]
        task = asyncio.create_task(loop.run())
        await until(lambda: len(grouped) == 3)
        task.cancel()

    asyncio.run(scenario())
    assert grouped == ["newest", "newer", "old"]


class DroppingServer(SlowServer):
    """Its first watch connection drops before any event."""

    def __init__(self, pages: list[list[Obj]]) -> None:
        super().__init__(pages)
        self.watches: list[str] = []

    async def watch(
        self, path: str, params: Mapping[str, str], *, timeout: float
    ) -> AsyncIterator[bytes]:
        self.watches.append(params["resourceVersion"])
        if len(self.watches) == 1:
            raise TransportError("WATCH: connection reset")
        async for line in super().watch(path, params, timeout=timeout):
            yield line


def test_a_dropped_watch_resumes_where_it_was_without_listing_again() -> None:
    server = DroppingServer([[pending("old")]])
    grouped: list[str] = []

    async def group(pod: Obj) -> None:
        grouped.append(pod["metadata"]["name"])

    async def scenario() -> None:
        loop = PendingPods(server, group, scheduler_names=("muster",), workers=1)  # type: ignore[arg-type]
        task = asyncio.create_task(loop.run())
        await until(lambda: len(server.watches) == 2)
        server.events.put_nowait({"type": "ADDED", "object": pending("new")})
        await until(lambda: "new" in grouped)
        task.cancel()

    asyncio.run(scenario())
    assert grouped == ["old", "new"]
    assert server.watches == ["10", "10"]
    assert len(server.selectors) == 1, "one list: the watch resumed"
