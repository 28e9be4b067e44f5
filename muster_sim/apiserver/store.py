"""Object storage with etcd's versioning: one global resourceVersion, an event history, watchers.

Stored objects are never mutated after `put`: every write stores a new dict, so an
event can hand the same object to every watcher and list without copying it.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from muster_sim.errors import too_old

Obj = dict[str, Any]
Listener = Callable[["Event"], None]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


def clone(obj: Any) -> Any:
    """A deep copy, for a writer to change (stored objects are never mutated): a msgspec
    round trip is several times faster than copy.deepcopy."""
    return _decode(_encode(obj))


@dataclass(slots=True)
class Event:
    """One change to one object, at the resourceVersion it was made."""

    rv: int
    key: str
    type: str
    obj: Obj
    prev: Obj | None
    namespace: str
    # the object's JSON, encoded once and shared by every watcher that sends it
    encoded: bytes | None = field(default=None)

    def obj_bytes(self) -> bytes:
        """The object's JSON encoding, computed on first use."""
        if self.encoded is None:
            self.encoded = _encode(self.obj)
        return self.encoded


# kube-apiserver's watch cache (staging/src/k8s.io/apiserver/pkg/storage/cacher): a ring
# per resource that grows from 100 to 100*1024 events so as to keep 75 s of history
WATCH_CACHE_LOWER_BOUND = 100
WATCH_CACHE_UPPER_BOUND = 100 * 1024
WATCH_CACHE_FRESH_SECONDS = 75.0


@dataclass(frozen=True)
class WatchWindow:
    """How much history each resource's watch cache keeps for watches that resume.

    `events` set: exactly the last N events per resource. Unset: kube-apiserver's sizing,
    every event of the last `fresh_seconds`, never fewer than `lower` nor more than `upper`.
    """

    events: int | None = None
    fresh_seconds: float = WATCH_CACHE_FRESH_SECONDS
    lower: int = WATCH_CACHE_LOWER_BOUND
    upper: int = WATCH_CACHE_UPPER_BOUND

    @classmethod
    def parse(cls, text: str) -> WatchWindow:
        """`500` (events per resource) or `75s` (seconds, kube's sizing); ValueError otherwise."""
        value = text.strip()
        try:
            if value.endswith("s"):
                seconds = float(value[:-1])
                if seconds <= 0:
                    raise ValueError
                return cls(fresh_seconds=seconds)
            events = int(value)
            if events < 1:
                raise ValueError
            return cls(events=events)
        except ValueError:
            raise ValueError(
                f"--watch-window {text!r}: give a number of events per resource (e.g. 500) or "
                "seconds of history with an s suffix (e.g. 75s)"
            ) from None


class _ResourceWindow:
    """One resource's watch cache history: recent events and the oldest RV a watch may resume."""

    __slots__ = ("events", "rvs", "stamps", "start_rv", "trimmed")

    def __init__(self, start_rv: int) -> None:
        # every event after start_rv is here until the first one is dropped
        self.start_rv = start_rv
        self.events: deque[Event] = deque()
        self.rvs: deque[int] = deque()
        self.stamps: deque[float] = deque()
        self.trimmed = False

    def oldest_resumable(self) -> int:
        """The smallest RV a watch can resume from (kube's `oldest-1`)."""
        if not self.trimmed or not self.events:
            return self.start_rv
        return self.events[0].rv - 1

    def append(self, event: Event, policy: WatchWindow) -> None:
        self.events.append(event)
        self.rvs.append(event.rv)
        if policy.events is not None:
            while len(self.events) > policy.events:
                self._drop()
            return
        now = time.monotonic()
        self.stamps.append(now)
        while len(self.events) > policy.upper or (
            len(self.events) > policy.lower and now - self.stamps[0] > policy.fresh_seconds
        ):
            self._drop()

    def _drop(self) -> None:
        self.events.popleft()
        self.rvs.popleft()
        if self.stamps:
            self.stamps.popleft()
        self.trimmed = True

    def since(self, rv: int) -> list[Event]:
        first = bisect.bisect_right(self.rvs, rv)
        return [self.events[i] for i in range(first, len(self.events))]


class Watcher:
    """A subscription to one resource's events, drained by one watch connection."""

    __slots__ = ("closed", "key", "namespace", "pending", "wake")

    def __init__(self, key: str, namespace: str | None) -> None:
        self.key = key
        self.namespace = namespace
        self.pending: list[Event] = []
        self.wake = asyncio.Event()
        self.closed = False

    def push(self, event: Event) -> None:
        """Queue an event and wake the connection that drains this watcher."""
        self.pending.append(event)
        self.wake.set()

    def take(self) -> list[Event]:
        """Every event queued since the last call."""
        events, self.pending = self.pending, []
        self.wake.clear()
        return events

    def close(self) -> None:
        """End the subscription (a fault, a compaction or shutdown); the connection stops."""
        self.closed = True
        self.wake.set()


def name_of(obj: Obj) -> str:
    """metadata.name."""
    return str(obj["metadata"]["name"])


def namespace_of(obj: Obj) -> str:
    """metadata.namespace, "" for cluster-scoped objects."""
    return str(obj["metadata"].get("namespace") or "")


def etcd_key(namespace: str, name: str) -> str:
    """Where etcd keeps an object under its resource's prefix, and so the order it lists in
    (names are ASCII, so code-point order is byte order)."""
    return f"{namespace}/{name}"


def key_of(obj: Obj) -> str:
    """An object's etcd key: what a list is ordered by and a continue token resumes after."""
    return etcd_key(namespace_of(obj), name_of(obj))


def _first(pair: tuple[str, Obj]) -> str:
    return pair[0]


class Store:
    """Objects by resource, namespace and name, plus the history watchers resume from."""

    def __init__(self, history_size: int = 50_000, watch_window: WatchWindow | None = None) -> None:
        self.rv = 1
        # etcd's history: an Exact list or a continue token from before compacted_rv is a 410
        self.compacted_rv = 1
        self.history_size = history_size
        self.watch_window = watch_window or WatchWindow()
        # the watch caches: a watch resuming from before its resource's window is a 410
        self.cache_start_rv = 1
        self._windows: dict[str, _ResourceWindow] = {}
        self._objects: dict[str, dict[str, dict[str, Obj]]] = {}
        self._history: list[Event] = []
        self._watchers: dict[str, set[Watcher]] = {}
        self._listeners: dict[str, list[Listener]] = {}
        # owner uid -> dependents, for garbage collection through ownerReferences
        self._dependents: dict[str, set[tuple[str, str, str]]] = {}
        # called on every committed change, before watchers hear of it (sim's audit log)
        self.on_write: Listener | None = None

    # -- reads ---------------------------------------------------------------

    def get(self, key: str, namespace: str, name: str) -> Obj | None:
        """The stored object, or None."""
        return self._objects.get(key, {}).get(namespace, {}).get(name)

    def items(self, key: str, namespace: str | None = None) -> list[Obj]:
        """Current objects of a resource in etcd's key order: the bytes of "namespace/name".
        Not (namespace, name): "a-b/x" sorts before "a/x" in etcd, as '-' is below '/'."""
        by_ns = self._objects.get(key, {})
        if namespace is not None:
            objs = by_ns.get(namespace, {})
            return [objs[n] for n in sorted(objs)]
        keyed = [(etcd_key(ns, n), o) for ns, objs in by_ns.items() for n, o in objs.items()]
        keyed.sort(key=_first)
        return [o for _, o in keyed]

    def count(self, key: str) -> int:
        """How many objects of a resource exist."""
        return sum(len(v) for v in self._objects.get(key, {}).values())

    def iter_all(self, key: str) -> Iterator[Obj]:
        """Every object of a resource, unordered."""
        for objs in self._objects.get(key, {}).values():
            yield from objs.values()

    def snapshot(self, key: str, namespace: str | None, rv: int) -> list[Obj]:
        """The resource's objects as they were at `rv`, rebuilt from the history."""
        if rv < self.compacted_rv:
            raise too_old(rv, self.compacted_rv)
        current = self.items(key, namespace)
        if rv >= self.rv:
            return current
        state: dict[str, Obj] = {key_of(o): o for o in current}
        for event in reversed(self._history):
            if event.rv <= rv:
                break
            if event.key != key or (namespace is not None and event.namespace != namespace):
                continue
            ident = etcd_key(event.namespace, name_of(event.obj))
            if event.type == "ADDED" or event.prev is None:
                state.pop(ident, None)
            else:
                state[ident] = event.prev
        return [state[k] for k in sorted(state)]

    def events_since(self, key: str, rv: int) -> list[Event]:
        """Every event of a resource after `rv`, oldest first; 410 if its watch cache lacks them."""
        window = self._window(key)
        oldest = window.oldest_resumable()
        if rv < oldest:
            raise too_old(rv, oldest)
        return window.since(rv)

    def _window(self, key: str) -> _ResourceWindow:
        window = self._windows.get(key)
        if window is None:
            # no event of this resource since the caches started: they hold all its history
            window = self._windows[key] = _ResourceWindow(self.cache_start_rv)
        return window

    def start_watch_cache(self, key: str | None = None) -> None:
        """Start the watch caches (one resource's, or all) at the current RV, as kube-apiserver's
        cacher starts from a list: watches from any earlier RV get 410 Expired."""
        if key is None:
            self.cache_start_rv = self.rv
            self._windows.clear()
        else:
            self._windows[key] = _ResourceWindow(self.rv)

    def drop_watch_cache(self, key: str) -> None:
        """Forget a resource's watch cache (its CRD is gone)."""
        self._windows.pop(key, None)

    def dependents(self, uid: str) -> list[tuple[str, str, str]]:
        """(key, namespace, name) of every object that names `uid` in its ownerReferences."""
        return sorted(self._dependents.get(uid, ()))

    # -- writes --------------------------------------------------------------

    def put(self, key: str, obj: Obj, event_type: str) -> Obj:
        """Store `obj` (a dict the caller gives up) at the next resourceVersion; emit its event."""
        meta = obj["metadata"]
        namespace = str(meta.get("namespace") or "")
        name = str(meta["name"])
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        objs = self._objects.setdefault(key, {}).setdefault(namespace, {})
        prev = objs.get(name)
        objs[name] = obj
        self._index_owners(key, namespace, name, prev, obj)
        self._emit(Event(self.rv, key, event_type, obj, prev, namespace))
        return obj

    def remove(self, key: str, namespace: str, name: str) -> Obj | None:
        """Delete an object; its DELETED event carries a new resourceVersion, as etcd's does."""
        objs = self._objects.get(key, {}).get(namespace)
        if objs is None or name not in objs:
            return None
        prev = objs.pop(name)
        if not objs:
            del self._objects[key][namespace]
        self.rv += 1
        gone = dict(prev)
        gone["metadata"] = dict(prev["metadata"], resourceVersion=str(self.rv))
        self._index_owners(key, namespace, name, prev, None)
        self._emit(Event(self.rv, key, "DELETED", gone, prev, namespace))
        return gone

    def compact(self) -> None:
        """Forget the whole history, as an etcd compaction at the current revision does.

        The watch caches restart too (a real cache outlives a compaction, but this is how
        tests force every resuming watch to 410 and relist).
        """
        self._history.clear()
        self.compacted_rv = self.rv
        self.start_watch_cache()

    def _emit(self, event: Event) -> None:
        if self.on_write is not None:
            self.on_write(event)
        self._history.append(event)
        if len(self._history) > 2 * self.history_size:
            drop = len(self._history) - self.history_size
            self.compacted_rv = self._history[drop - 1].rv
            del self._history[:drop]
        self._window(event.key).append(event, self.watch_window)
        for watcher in self._watchers.get(event.key, ()):
            if watcher.namespace is None or watcher.namespace == event.namespace:
                watcher.push(event)
        for listener in self._listeners.get(event.key, ()):
            listener(event)

    def _index_owners(
        self, key: str, namespace: str, name: str, prev: Obj | None, obj: Obj | None
    ) -> None:
        before = _owner_uids(prev)
        after = _owner_uids(obj)
        if before == after:
            return
        ident = (key, namespace, name)
        for uid in before - after:
            deps = self._dependents.get(uid)
            if deps is not None:
                deps.discard(ident)
                if not deps:
                    del self._dependents[uid]
        for uid in after - before:
            self._dependents.setdefault(uid, set()).add(ident)

    # -- subscriptions -------------------------------------------------------

    def watch(self, key: str, namespace: str | None) -> Watcher:
        """Subscribe to a resource's future events (optionally one namespace's)."""
        watcher = Watcher(key, namespace)
        self._watchers.setdefault(key, set()).add(watcher)
        return watcher

    def unwatch(self, watcher: Watcher) -> None:
        """End a subscription."""
        self._watchers.get(watcher.key, set()).discard(watcher)

    def close_watchers(self) -> None:
        """Close every watch connection (a fault, or shutdown)."""
        for watchers in self._watchers.values():
            for watcher in list(watchers):
                watcher.close()

    def listen(self, key: str, listener: Listener) -> None:
        """Call `listener` synchronously on every event of a resource (kubelet, controllers)."""
        self._listeners.setdefault(key, []).append(listener)


def _owner_uids(obj: Obj | None) -> set[str]:
    if obj is None:
        return set()
    refs = obj["metadata"].get("ownerReferences")
    if not refs:
        return set()
    return {str(r.get("uid")) for r in refs if r.get("uid")}
