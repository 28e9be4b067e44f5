"""Reflector: list a kind, then watch it from the list's resourceVersion, forever.

On 410 Gone (the resourceVersion fell out of the server's history) it lists
again and deletes what disappeared meanwhile; on any other error it backs
off and resumes the watch from the last resourceVersion it saw.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from scheduler.api import wire
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import Gone, StatusError, TransportError

log = logging.getLogger(__name__)

T = TypeVar("T")


class _ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    # "continue" is a Python keyword.
    next_page: str = msgspec.field(default="", name="continue")


class ObjectList(msgspec.Struct, Generic[T]):
    """A list response: its metadata and items."""

    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[T] = msgspec.field(default_factory=list)


class _Event(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _Status(msgspec.Struct):
    code: int = 0
    reason: str = ""
    message: str = ""


class _Bookmark(msgspec.Struct):
    metadata: wire.ObjectMeta = msgspec.field(default_factory=wire.ObjectMeta)


@dataclass(frozen=True)
class Kind(Generic[T]):
    """How to list, key, store and forget one kind of object."""

    name: str
    path: str
    wire_type: type[T]
    key: Callable[[T], str]
    upsert: Callable[[T], None]
    delete: Callable[[str], None]


class Reflector(Generic[T]):
    """Keeps one kind of the World in step with the API server."""

    def __init__(
        self,
        client: KubeClient,
        kind: Kind[T],
        *,
        page_size: int = 500,
        watch_timeout: int = 300,
        on_restart: Callable[[str], None] = lambda reason: None,
    ) -> None:
        self.client = client
        self.kind = kind
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.on_restart = on_restart
        self.synced = asyncio.Event()
        self.resource_version = ""
        self._known: set[str] = set()
        self._list_type: Any = ObjectList[kind.wire_type]  # type: ignore[name-defined]
        self._decoder = msgspec.json.Decoder(kind.wire_type)
        self._event_decoder = msgspec.json.Decoder(_Event)

    async def run(self) -> None:
        """List and watch until cancelled."""
        failures = 0
        while True:
            try:
                if not self.resource_version:
                    await self._list()
                    self.synced.set()
                await self._watch()
                failures = 0
            except Gone:
                log.info("watch expired; listing again", extra={"resource": self.kind.name})
                self.resource_version = ""
                self.on_restart("relist")
            except (TransportError, StatusError) as error:
                failures += 1
                log.warning("list/watch failed: %s", error, extra={"resource": self.kind.name})
                self.on_restart("error")
                await asyncio.sleep(_backoff(failures))

    async def _list(self) -> None:
        seen: set[str] = set()
        params = {"limit": str(self.page_size)}
        while True:
            body = await self.client.request("GET", self.kind.path, params=params)
            page: ObjectList[T] = msgspec.json.decode(body, type=self._list_type)
            for item in page.items:
                key = self.kind.key(item)
                seen.add(key)
                self._apply_upsert(item)
            if not page.metadata.next_page:
                self.resource_version = page.metadata.resource_version
                break
            params = {"limit": str(self.page_size), "continue": page.metadata.next_page}
        for key in self._known - seen:
            self.kind.delete(key)
        self._known = seen

    async def _watch(self) -> None:
        params = {
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(self.watch_timeout),
        }
        async for line in self.client.watch(self.kind.path, params, timeout=self.watch_timeout):
            event = self._event_decoder.decode(line)
            if event.type == "ERROR":
                status = msgspec.json.decode(event.object, type=_Status)
                if status.code == 410:
                    raise Gone(410, status.reason, status.message, "WATCH", self.kind.path)
                raise StatusError(
                    status.code, status.reason, status.message, "WATCH", self.kind.path
                )
            if event.type == "BOOKMARK":
                mark = msgspec.json.decode(event.object, type=_Bookmark)
                self.resource_version = mark.metadata.resource_version or self.resource_version
                continue
            item = self._decoder.decode(event.object)
            if event.type == "DELETED":
                key = self.kind.key(item)
                self._known.discard(key)
                self._safely(self.kind.delete, key)
            else:
                self._apply_upsert(item)
            version = _resource_version(item)
            if version:
                self.resource_version = version

    def _apply_upsert(self, item: T) -> None:
        self._known.add(self.kind.key(item))
        self._safely(self.kind.upsert, item)

    def _safely(self, handler: Callable[[Any], None], argument: Any) -> None:
        # One object that breaks a handler must not stop the watch for the others.
        try:
            handler(argument)
        except Exception:
            log.exception("could not apply %s event", self.kind.name)


def _resource_version(item: Any) -> str:
    metadata = getattr(item, "metadata", None)
    return str(getattr(metadata, "resource_version", "") or "")


def _backoff(failures: int) -> float:
    return float(random.uniform(0.5, 1.0) * min(30.0, 0.2 * 2 ** min(failures, 8)))
