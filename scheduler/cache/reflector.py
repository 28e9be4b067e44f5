"""Reflector: list a kind, then watch it from the list's resourceVersion, forever.

On 410 Gone (the resourceVersion fell out of the server's history) it lists
again and deletes what disappeared meanwhile; on an API or transport error it
backs off (capped at BACKOFF_CAP, so it is back within seconds of a server that
returns) and lists again too; on any other error (a bug) it logs it, backs off
and lists again, so the task never ends while the process lives. A watch that
ends normally (its timeout) is resumed from the last resourceVersion it saw.

After a failure the kind counts as broken until that list is in: the list is
what the server holds then, so what was written while the watch was down is in
the cache before the scheduler runs a session again. Resuming the watch instead
would replay it only after the watch opened, and a session in between would
place pods on room another scheduler had taken meanwhile.

Every failed list or watch is reported with the answer's HTTP code
(`on_failure`). One object that does not decode is skipped and reported, never
the whole list or watch. How long the kind has been broken, and when it last
delivered anything (an event, a bookmark or a list), are kept for the readiness
probe (scheduler/health.py).

An answer is read for what it is. A 403 or a 404 on a kind muster needs is an error
retried with backoff, never "there are none": a restarting kube-apiserver answers 403
while its RBAC authorizer warms up and 404 on custom resources until their CRDs are
served again. An optional kind (one whose CRD most clusters lack, as HyperNodes) is not
served only when it answers 404 from a server whose /readyz says it is ready: then the
reflector counts as synced with no objects, says so once in the log, and lists again
every `absent_recheck` seconds, so a CRD installed later is picked up.

A kind served at whichever version the server has (Kubernetes' own gang API, api/native.py)
asks discovery which before each list: at none, it counts as synced with no objects, as an
optional kind not served; a 404 on the version in use (an upgrade that dropped it) sends it
to discovery again at once.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from scheduler.api import wire
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import Gone, NotFound, StatusError, TransportError

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


# an object that fails to decode is named by its metadata, decoded alone
_metadata_decoder = msgspec.json.Decoder(_Bookmark)


@dataclass(frozen=True)
class Kind(Generic[T]):
    """How to list, key, store and forget one kind of object."""

    name: str
    path: str
    wire_type: type[T]
    key: Callable[[T], str]
    upsert: Callable[[T], None]
    delete: Callable[[str], None]
    # A decoder of the kind's own (pods: one that names spec fields newer than muster's
    # list, api/pod_fields.py); None decodes into wire_type.
    decode: Callable[[msgspec.Raw], T] | None = None
    # A kind the cluster may not serve at all (its CRD not installed): a 404 means "none
    # of them", not a broken watch (see the module docstring).
    optional: bool = False
    # A labelSelector: only the objects it selects are listed and watched (an object that
    # stops matching is seen deleted, as the API server tells a watch).
    selector: str = ""
    # A kind served at whichever version the server has (scheduling.k8s.io's): the path to
    # list and watch, found before each list, or None when no version muster reads is
    # served (then none of it, as an optional kind's 404). A 404 on the path in use (an
    # upgrade dropped its version) asks again at once.
    discover: Callable[[KubeClient], Awaitable[str | None]] | None = None


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
        on_undecodable: Callable[[str], None] = lambda message: None,
        clock: Callable[[], float] = time.monotonic,
        absent_recheck: float = 60.0,
        on_failure: Callable[[str], None] = lambda code: None,
    ) -> None:
        self.client = client
        self.kind = kind
        # The collection listed and watched: the kind's, or the one discovery found.
        self.path = kind.path
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.on_restart = on_restart
        self.on_undecodable = on_undecodable
        self.clock = clock
        self.absent_recheck = absent_recheck
        self.synced = asyncio.Event()
        self.resource_version = ""
        self.on_failure = on_failure
        self._known: set[str] = set()
        self._broken_since: float | None = None
        # When the list or watch last delivered anything (an object, an event, a bookmark).
        self._last_heard: float | None = None
        # Whether the optional kind answered 404 last time (said once per change).
        self._absent = False
        self._decoder: Callable[[msgspec.Raw], T] = (
            kind.decode or msgspec.json.Decoder(kind.wire_type).decode
        )
        self._page_decoder = msgspec.json.Decoder(ObjectList[msgspec.Raw])
        self._event_decoder = msgspec.json.Decoder(_Event)

    @property
    def name(self) -> str:
        """The kind this reflector keeps."""
        return self.kind.name

    def is_synced(self) -> bool:
        """Whether the first list finished."""
        return self.synced.is_set()

    def broken_since(self) -> float | None:
        """When the watch last stopped working (clock time), or None while it works."""
        return self._broken_since

    def broken_for(self) -> float:
        """Seconds the list or watch has been failing; 0 while it works."""
        since = self._broken_since
        return 0.0 if since is None else max(0.0, self.clock() - since)

    def last_heard(self) -> float | None:
        """When a working watch last delivered an event or a bookmark, or its list came
        (clock time); None when there is nothing to hear (not listed yet, broken, or an
        optional kind the server does not serve)."""
        if self._broken_since is not None or self._absent:
            return None
        return self._last_heard

    async def run(self) -> None:
        """List and watch until cancelled."""
        failures = 0
        while True:
            try:
                if not self.resource_version:
                    if self.kind.discover is not None and not await self._discover():
                        await asyncio.sleep(self.absent_recheck)
                        continue
                    await self._list()
                    self.synced.set()
                await self._watch()
                failures = 0
            except Gone:
                log.info("watch expired; listing again", extra={"resource": self.kind.name})
                self._broken()
                self.resource_version = ""
                self.on_failure("410")
                self.on_restart("relist")
            except (TransportError, StatusError) as error:
                if (
                    self.kind.discover is not None
                    and isinstance(error, NotFound)
                    and await self._server_ready()
                ):
                    # The version in use is gone (an upgrade dropped it): ask which is served.
                    failures += 1
                    self.resource_version = ""
                    log.info(
                        "%s is not served any more; asking which version is",
                        self.path,
                        extra={"resource": self.kind.name},
                    )
                    await asyncio.sleep(_backoff(failures))
                    continue
                if (
                    self.kind.optional
                    and isinstance(error, NotFound)
                    and await self._server_ready()
                ):
                    failures = 0
                    self._not_served()
                    await asyncio.sleep(self.absent_recheck)
                    continue
                failures += 1
                self._broken()
                self.resource_version = ""
                self.on_failure(str(error.code) if isinstance(error, StatusError) else "none")
                log.warning(
                    "list/watch failed, trying again: %s%s",
                    error,
                    _hint(error),
                    extra={"resource": self.kind.name},
                )
                self.on_restart("error")
                await asyncio.sleep(_backoff(failures))
            except Exception:
                # A bug here must not end the task: the cache would freeze while the
                # process looks alive. List again from scratch, after a pause.
                failures += 1
                self._broken()
                log.exception("reflector failed; listing again", extra={"resource": self.name})
                self.resource_version = ""
                self.on_restart("crash")
                await asyncio.sleep(_backoff(failures))

    async def _discover(self) -> bool:
        """Find the path the kind is served at; False (and none of it) when it is not."""
        assert self.kind.discover is not None
        path = await self.kind.discover(self.client)
        if path is None:
            self._not_served()
            return False
        if path != self.path and self.path:
            log.info("%s is served at %s now", self.path, path, extra={"resource": self.name})
        self.path = path
        return True

    async def _server_ready(self) -> bool:
        """Whether the API server says it is ready (GET /readyz answers 200): only then is a
        404 on an optional kind its CRD missing, not a server still starting."""
        try:
            await self.client.request("GET", "/readyz", retry=False)
        except (StatusError, TransportError) as error:
            log.info(
                "%s answered 404 while the API server is not ready (%s): trying again",
                self.path,
                error,
                extra={"resource": self.kind.name},
            )
            return False
        return True

    def _not_served(self) -> None:
        # The kind is not served: there are none of it, which is a synced, working cache.
        if not self._absent:
            why = (
                "no version muster reads is served"
                if self.kind.discover is not None
                else "its CRD is not installed"
            )
            log.info(
                "%s is not served by the API server (%s): none are used; checking again"
                " every %.0fs",
                self.path or self.kind.name,
                why,
                self.absent_recheck,
                extra={"resource": self.kind.name},
            )
        self._absent = True
        self.resource_version = ""
        for key in self._known:
            self._safely(self.kind.delete, key)
        self._known = set()
        self._working()
        self.synced.set()

    def _broken(self) -> None:
        if self._broken_since is None:
            self._broken_since = self.clock()

    def _working(self) -> None:
        self._broken_since = None

    async def _list(self) -> None:
        seen: set[str] = set()
        loop = asyncio.get_running_loop()
        pending = loop.create_task(self._page({"limit": str(self.page_size)}))
        try:
            while True:
                page = await pending
                if page.metadata.next_page:
                    # Ask for the next page before applying this one: the server reads and
                    # encodes it while this process decodes (on its own core, where there
                    # are two), so a 50,000-pod start waits for the longer of the two, not
                    # their sum. The yield lets the request go out before the work below.
                    pending = loop.create_task(
                        self._page(
                            {"limit": str(self.page_size), "continue": page.metadata.next_page}
                        )
                    )
                    await asyncio.sleep(0)
                for raw in page.items:
                    item = self._decode(raw)
                    if item is None:
                        continue
                    seen.add(self.kind.key(item))
                    self._apply_upsert(item)
                if not page.metadata.next_page:
                    self.resource_version = page.metadata.resource_version
                    break
        finally:
            # A list that fails (a page gone stale, 410) or is cancelled leaves no request.
            pending.cancel()
        if self._absent:
            log.info("%s is served now", self.path, extra={"resource": self.kind.name})
            self._absent = False
        for key in self._known - seen:
            self.kind.delete(key)
        self._known = seen
        self._working()
        self._last_heard = self.clock()

    async def _page(self, params: dict[str, str]) -> ObjectList[msgspec.Raw]:
        if self.kind.selector:
            params = {**params, "labelSelector": self.kind.selector}
        body = await self.client.request("GET", self.path, params=params)
        return self._page_decoder.decode(body)

    async def _watch(self) -> None:
        params = {
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(self.watch_timeout),
        }
        if self.kind.selector:
            params["labelSelector"] = self.kind.selector
        async for line in self.client.watch(self.path, params, timeout=self.watch_timeout):
            self._last_heard = self.clock()
            event = self._event_decoder.decode(line)
            if event.type == "ERROR":
                status = msgspec.json.decode(event.object, type=_Status)
                if status.code == 410:
                    raise Gone(410, status.reason, status.message, "WATCH", self.path)
                raise StatusError(status.code, status.reason, status.message, "WATCH", self.path)
            if event.type == "BOOKMARK":
                mark = msgspec.json.decode(event.object, type=_Bookmark)
                self.resource_version = mark.metadata.resource_version or self.resource_version
                continue
            item = self._decode(event.object)
            if item is None:
                continue
            if event.type == "DELETED":
                key = self.kind.key(item)
                self._known.discard(key)
                self._safely(self.kind.delete, key)
            else:
                self._apply_upsert(item)
            version = _resource_version(item)
            if version:
                self.resource_version = version

    def _decode(self, raw: msgspec.Raw) -> T | None:
        try:
            item: T = self._decoder(raw)
        except msgspec.ValidationError as error:
            # The API server's schema let it through, ours does not: skip this one object
            # (the rest of the cluster keeps scheduling) and say which and why.
            meta = _metadata_of(raw)
            message = f"{self.name} {meta} cannot be read and is ignored: {error}"
            log.warning(message, extra={"resource": self.name})
            self.on_undecodable(message)
            return None
        return item

    def _apply_upsert(self, item: T) -> None:
        self._known.add(self.kind.key(item))
        self._safely(self.kind.upsert, item)

    def _safely(self, handler: Callable[[Any], None], argument: Any) -> None:
        # One object that breaks a handler must not stop the watch for the others.
        try:
            handler(argument)
        except Exception:
            log.exception("could not apply %s event", self.kind.name)


def _metadata_of(raw: msgspec.Raw) -> str:
    try:
        meta = _metadata_decoder.decode(raw).metadata
    except msgspec.ValidationError:
        return "(no readable metadata)"
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def _resource_version(item: Any) -> str:
    metadata = getattr(item, "metadata", None)
    return str(getattr(metadata, "resource_version", "") or "")


# The longest pause between two tries of a failing list or watch: a server back from a
# long outage is listed again within seconds, and one request per kind every few seconds
# costs it nothing.
BACKOFF_CAP = 8.0


def any_broken(reflectors: Iterable[Reflector[Any]]) -> bool:
    """Whether a reflector's list or watch is failing now. No session runs then: what was
    written since it broke (a pod another leader bound while the API server restarted) is
    not in the cache until the watch resumes or lists anew, and a session would place pods
    on room that is taken."""
    return any(reflector.broken_since() is not None for reflector in reflectors)


def _backoff(failures: int) -> float:
    return float(random.uniform(0.5, 1.0) * min(BACKOFF_CAP, 0.2 * 2 ** min(failures, 8)))


def _hint(error: Exception) -> str:
    """What a 403 or a 404 on a needed kind means, for the operator reading the log."""
    if isinstance(error, StatusError) and error.code == 403:
        return (
            " (an API server that just started answers 403 until its RBAC authorizer has"
            " synced; if it lasts, the scheduler's ServiceAccount lacks the RBAC of deploy/)"
        )
    if isinstance(error, StatusError) and error.code == 404:
        return (
            " (an API server that just started answers 404 on custom resources until their"
            " CRDs are served; if it lasts, install muster's CRDs: crds/)"
        )
    return ""
