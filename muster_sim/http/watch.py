"""Watch streams: history replay or synthetic ADDED events, then live events and bookmarks."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import msgspec
from aiohttp import web

from muster_sim.apiserver.resources import Kind
from muster_sim.apiserver.store import Event, Store
from muster_sim.errors import ApiError
from muster_sim.selectors import Predicate

Obj = dict[str, Any]

_encode = msgspec.json.Encoder().encode
_TYPES = {t: f'{{"type":"{t}","object":'.encode() for t in ("ADDED", "MODIFIED", "DELETED")}


@dataclass
class WatchRequest:
    """What one watch connection asked for."""

    kind: Kind
    namespace: str | None
    resource_version: str
    predicate: Predicate | None
    bookmarks: bool
    timeout: float
    send_initial_events: bool = False


def _frame(event_type: str, obj_bytes: bytes) -> bytes:
    return _TYPES[event_type] + obj_bytes + b"}\n"


def _bookmark(kind: Kind, rv: int, initial_end: bool = False) -> bytes:
    meta: Obj = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    obj = {"kind": kind.kind, "apiVersion": kind.api_version, "metadata": meta}
    return _encode({"type": "BOOKMARK", "object": obj}) + b"\n"


def _filtered(event: Event, predicate: Predicate | None) -> str | None:
    """The event type this watcher sees: a selector turns entering/leaving into ADDED/DELETED."""
    if predicate is None:
        return event.type
    if event.type == "ADDED":
        return "ADDED" if predicate(event.obj) else None
    if event.type == "DELETED":
        return "DELETED" if predicate(event.prev or event.obj) else None
    now = predicate(event.obj)
    before = event.prev is not None and predicate(event.prev)
    if now and before:
        return "MODIFIED"
    if now:
        return "ADDED"
    return "DELETED" if before else None


class WatchStream:
    """Serves one watch connection from a Store subscription."""

    def __init__(
        self, store: Store, bookmark_interval: float, as_version: Callable[[Kind, Obj], Obj]
    ) -> None:
        self.store = store
        self.bookmark_interval = bookmark_interval
        self.as_version = as_version

    def _encoded(self, req: WatchRequest, event: Event) -> bytes:
        if req.kind.from_crd and event.obj.get("apiVersion") != req.kind.api_version:
            return _encode(self.as_version(req.kind, event.obj))
        return event.obj_bytes()

    async def serve(
        self, request: web.Request, req: WatchRequest, drop_after: float
    ) -> web.StreamResponse:
        """Stream events until the timeout, a dropped connection or a closed subscription."""
        store = self.store
        # subscribe before reading the backlog: both happen without an await in between,
        # so no event can fall between them
        watcher = store.watch(req.kind.key, req.namespace)
        try:
            initial: list[bytes] = []
            error: ApiError | None = None
            initial_end = False
            if req.resource_version in ("", "0") or req.send_initial_events:
                for obj in store.items(req.kind.key, req.namespace):
                    if req.predicate is None or req.predicate(obj):
                        initial.append(_frame("ADDED", _encode(self.as_version(req.kind, obj))))
                initial_end = req.send_initial_events
            else:
                try:
                    since = int(req.resource_version)
                    backlog = store.events_since(req.kind.key, since)
                except ValueError:
                    raise ApiError(
                        400, "BadRequest", f'invalid resource version "{req.resource_version}"'
                    ) from None
                except ApiError as expired:
                    error = expired
                    backlog = []
                for event in backlog:
                    if req.namespace is not None and event.namespace != req.namespace:
                        continue
                    seen = _filtered(event, req.predicate)
                    if seen is not None:
                        initial.append(_frame(seen, self._encoded(req, event)))
            response = web.StreamResponse(
                status=200,
                headers={"Content-Type": "application/json", "Cache-Control": "no-cache, private"},
            )
            response.enable_chunked_encoding()
            await response.prepare(request)
            if error is not None:
                # the real server answers 200 and sends the 410 as an ERROR event, then closes
                payload = {"type": "ERROR", "object": error.status()}
                await response.write(_encode(payload) + b"\n")
                await response.write_eof()
                return response
            if initial_end:
                initial.append(_bookmark(req.kind, store.rv, initial_end=True))
            if initial:
                await response.write(b"".join(initial))
            # the client may go away mid-stream; there is nothing left to tell it
            with contextlib.suppress(ConnectionResetError, aiohttp.ClientConnectionResetError):
                await self._stream(response, watcher, req, drop_after)
            return response
        finally:
            store.unwatch(watcher)

    async def _stream(
        self, response: web.StreamResponse, watcher: Any, req: WatchRequest, drop_after: float
    ) -> None:
        loop = asyncio.get_running_loop()
        limit = req.timeout if drop_after <= 0 else min(req.timeout, drop_after)
        deadline = loop.time() + limit
        next_bookmark = time.monotonic() + self.bookmark_interval
        while not watcher.closed:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            wait = (
                min(remaining, max(0.0, next_bookmark - time.monotonic()))
                if (req.bookmarks)
                else remaining
            )
            if not watcher.pending:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(watcher.wake.wait(), timeout=wait)
            frames = [
                _frame(seen, self._encoded(req, event))
                for event in watcher.take()
                if (seen := _filtered(event, req.predicate)) is not None
            ]
            if req.bookmarks and time.monotonic() >= next_bookmark:
                # taken synchronously after draining: every event up to store.rv is sent
                frames.append(_bookmark(req.kind, self.store.rv))
                next_bookmark = time.monotonic() + self.bookmark_interval
            if frames:
                await response.write(b"".join(frames))
        await response.write_eof()
