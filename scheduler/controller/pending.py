"""The pods that may need a PodGroup, listed and watched, and the workers that group them.

Only pending pods can need one (the scheduler binds none without its group), so the list
and watch ask the API server for unbound pods (`fieldSelector=spec.nodeName=`, and the
scheduler name when there is one): a cluster's running pods never reach this process. Each
pod is decoded into the few fields that say whether it needs a group (or, when it joins a
native PodGroup, whether that group may need a queue: controller/native.py); only those
that do are kept, for the workers, with their latest state.

From the first second: the watch starts from the resourceVersion of the list's first page,
and the rest of the list is paged in beside it. A pod created after the start is handled
as soon as its event arrives, not after every existing pod has been listed; a listed pod
whose event the watch already brought is left to that newer state. A watch event goes
before listed pods in the workers' queue, so a new pod never waits behind a replay; and
listed pods go newest first, so the pods created just before the start (as new to their
users as those after) do not wait behind ones left from long before.

A pod whose grouping fails for a passing reason (the API server answered 5xx or not at
all) is tried again after a backoff; one that cannot be grouped as written gets an
InvalidObject event and waits for its next change.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from scheduler.cache.reflector import ObjectList
from scheduler.controller.podgroups import PodHead, Retry, needs_podgroup
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import Gone, StatusError, TransportError

# Which pending pods the loop hands on (a pod, muster's scheduler names).
Wanted = Callable[[PodHead, frozenset[str]], bool]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
PAGE = 500
WATCH_TIMEOUT = 300
FRESH, LISTED = 0, 1


class _Event(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _Status410(msgspec.Struct):
    code: int = 0
    message: str = ""


_head = msgspec.json.Decoder(PodHead).decode
_page = msgspec.json.Decoder(ObjectList[msgspec.Raw]).decode
_event = msgspec.json.Decoder(_Event).decode
_document = msgspec.json.Decoder(dict[str, Any]).decode


class PendingPods:
    """Hands every pending pod of ours that names no PodGroup to `group`, one at a time each."""

    def __init__(
        self,
        client: KubeClient,
        group: Callable[[Obj], Awaitable[None]],
        *,
        scheduler_names: tuple[str, ...],
        namespaces: tuple[str, ...] = (),
        workers: int = 16,
        wanted: Wanted = needs_podgroup,
    ) -> None:
        self.client = client
        self.group = group
        self.wanted = wanted
        self.scheduler_names = frozenset(scheduler_names)
        self.namespaces = namespaces
        self.workers = workers
        # the pods waiting for a worker, by uid: their latest raw state
        self._queued: dict[str, msgspec.Raw] = {}
        # (lane, -created, arrival, uid): watch events (lane 0, in arrival order) before
        # listed pods (lane 1, newest first)
        self._order: asyncio.PriorityQueue[tuple[int, float, int, str]] = asyncio.PriorityQueue()
        self._arrivals = 0
        self._busy: set[str] = set()
        self.listed = asyncio.Event()

    def streams(self) -> list[tuple[str, dict[str, str]]]:
        """(path, params) of each list and watch: per namespace, per scheduler name."""
        scopes = [f"/api/v1/namespaces/{ns}/pods" for ns in self.namespaces] or ["/api/v1/pods"]
        selectors = ["spec.nodeName="]
        if len(self.scheduler_names) == 1:
            selectors = [f"spec.nodeName=,spec.schedulerName={next(iter(self.scheduler_names))}"]
        return [(path, {"fieldSelector": s}) for path in scopes for s in selectors]

    async def run(self) -> None:
        """Stream and group until cancelled."""
        streams = self.streams()
        done = [asyncio.Event() for _ in streams]
        tasks = [
            self._stream(path, params, listed)
            for (path, params), listed in zip(streams, done, strict=True)
        ]
        tasks += [self._work() for _ in range(self.workers)]
        tasks.append(self._all_listed(done))
        await asyncio.gather(*tasks)

    async def _all_listed(self, done: list[asyncio.Event]) -> None:
        for event in done:
            await event.wait()
        self.listed.set()

    # -- the list and the watch ------------------------------------------------

    async def _stream(self, path: str, params: dict[str, str], listed: asyncio.Event) -> None:
        failures = 0
        while True:
            seen: set[str] = set()
            watch: asyncio.Task[None] | None = None
            try:
                first = _page(
                    await self.client.request("GET", path, params={**params, "limit": str(PAGE)})
                )
                watch = asyncio.create_task(
                    self._watch(path, params, first.metadata.resource_version, seen, listed)
                )
                self._take_listed(first.items, seen)
                token = first.metadata.next_page
                while token:
                    page = _page(
                        await self.client.request(
                            "GET", path, params={**params, "limit": str(PAGE), "continue": token}
                        )
                    )
                    self._take_listed(page.items, seen)
                    token = page.metadata.next_page
                    await asyncio.sleep(0)
                listed.set()
                seen.clear()  # what the watch saw counts only while the list is paged in
                failures = 0
                await watch
            except Gone:
                log.info("pod watch expired; listing again", extra={"resource": path})
            except (TransportError, StatusError) as error:
                failures += 1
                log.warning("pod list/watch failed: %s", error, extra={"resource": path})
                await asyncio.sleep(_backoff(failures))
            except Exception:
                # a bug here must not end the loop: nothing would be grouped any more
                failures += 1
                log.exception("pod list/watch failed; listing again")
                await asyncio.sleep(_backoff(failures))
            finally:
                if watch is not None and not watch.done():
                    watch.cancel()

    async def _watch(
        self,
        path: str,
        params: dict[str, str],
        version: str,
        seen: set[str],
        listed: asyncio.Event,
    ) -> None:
        """Watch from `version`, resuming from the last one seen when the connection drops
        (a 410 ends it: the caller lists again)."""
        failures = 0
        while True:
            query = {
                **params,
                "resourceVersion": version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": str(WATCH_TIMEOUT),
            }
            try:
                async for line in self.client.watch(path, query, timeout=WATCH_TIMEOUT):
                    version = self._watched(line, path, version, seen, listed)
                failures = 0
            except TransportError as error:
                failures += 1
                log.warning("pod watch dropped: %s; resuming", error, extra={"resource": path})
                await asyncio.sleep(_backoff(failures))

    def _watched(
        self, line: bytes, path: str, version: str, seen: set[str], listed: asyncio.Event
    ) -> str:
        """Take one watch event; the resourceVersion to resume from."""
        event = _event(line)
        if event.type == "ERROR":
            status = msgspec.json.decode(event.object, type=_Status410)
            if status.code == 410:
                raise Gone(410, "Expired", status.message, "WATCH", path)
            raise StatusError(status.code, "", status.message, "WATCH", path)
        head = _head(event.object)
        if event.type == "BOOKMARK":
            return head.metadata.resource_version or version
        if not listed.is_set():
            seen.add(head.metadata.uid)
        if event.type == "DELETED" or not self.wanted(head, self.scheduler_names):
            self._queued.pop(head.metadata.uid, None)
        else:
            self._offer(head.metadata.uid, event.object, FRESH)
        return head.metadata.resource_version or version

    def _take_listed(self, items: list[msgspec.Raw], seen: set[str]) -> None:
        for raw in items:
            head = _head(raw)
            uid = head.metadata.uid
            if uid in seen or uid in self._queued or not self.wanted(head, self.scheduler_names):
                continue
            self._offer(uid, raw, LISTED, -_epoch(head.metadata.creation_timestamp))

    def _offer(self, uid: str, raw: msgspec.Raw, lane: int, order: float = 0.0) -> None:
        known = uid in self._queued
        # a copy: the page or event buffer it points into is let go
        self._queued[uid] = msgspec.Raw(bytes(raw))
        if not known:
            self._arrivals += 1
            self._order.put_nowait((lane, order, self._arrivals, uid))

    # -- the workers -------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            *_, uid = await self._order.get()
            raw = self._queued.pop(uid, None)
            if raw is None:
                continue
            if uid in self._busy:
                # being grouped now: its newer state waits for that to finish
                asyncio.get_running_loop().call_later(0.05, self._again, uid, raw)
                continue
            self._busy.add(uid)
            try:
                await self.group(_document(raw))
            except Retry:
                asyncio.get_running_loop().call_later(
                    random.uniform(0.5, 2.0), self._again, uid, raw
                )
            except Exception:
                log.exception("grouping a pod failed")
            finally:
                self._busy.discard(uid)

    def _again(self, uid: str, raw: msgspec.Raw) -> None:
        if uid not in self._queued:
            self._offer(uid, raw, FRESH)


def _epoch(stamp: str) -> float:
    try:
        return datetime.datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0


def _backoff(failures: int) -> float:
    return float(random.uniform(0.5, 1.0) * min(30.0, 0.2 * 2 ** min(failures, 8)))
