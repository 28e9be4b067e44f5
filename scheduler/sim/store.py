"""Object storage with etcd's versioning: one global resourceVersion, an event history, watchers.

Stored objects are never mutated after `put`: every write stores a new dict, so an
event can hand the same object to every watcher and list without copying it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from scheduler.sim.errors import too_old

Obj = dict[str, Any]
Listener = Callable[["Event"], None]

_encode = msgspec.json.Encoder().encode


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


class Store:
    """Objects by resource, namespace and name, plus the history watchers resume from."""

    def __init__(self, history_size: int = 50_000) -> None:
        self.rv = 1
        # events with rv <= compacted_rv are gone: watching or listing from before is a 410
        self.compacted_rv = 1
        self.history_size = history_size
        self._objects: dict[str, dict[str, dict[str, Obj]]] = {}
        self._history: list[Event] = []
        self._watchers: dict[str, set[Watcher]] = {}
        self._listeners: dict[str, list[Listener]] = {}
        # owner uid -> dependents, for garbage collection through ownerReferences
        self._dependents: dict[str, set[tuple[str, str, str]]] = {}

    # -- reads ---------------------------------------------------------------

    def get(self, key: str, namespace: str, name: str) -> Obj | None:
        """The stored object, or None."""
        return self._objects.get(key, {}).get(namespace, {}).get(name)

    def items(self, key: str, namespace: str | None = None) -> list[Obj]:
        """Current objects of a resource in key order (namespace, then name), as etcd lists."""
        by_ns = self._objects.get(key, {})
        if namespace is not None:
            objs = by_ns.get(namespace, {})
            return [objs[n] for n in sorted(objs)]
        return [by_ns[ns][n] for ns in sorted(by_ns) for n in sorted(by_ns[ns])]

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
        state: dict[tuple[str, str], Obj] = {(namespace_of(o), name_of(o)): o for o in current}
        for event in reversed(self._history):
            if event.rv <= rv:
                break
            if event.key != key or (namespace is not None and event.namespace != namespace):
                continue
            ident = (event.namespace, name_of(event.obj))
            if event.type == "ADDED" or event.prev is None:
                state.pop(ident, None)
            else:
                state[ident] = event.prev
        return [state[k] for k in sorted(state)]

    def events_since(self, key: str, rv: int) -> list[Event]:
        """Every event of a resource after `rv`, oldest first; 410 if history no longer has them."""
        if rv < self.compacted_rv:
            raise too_old(rv, self.compacted_rv)
        events: list[Event] = []
        for event in reversed(self._history):
            if event.rv <= rv:
                break
            if event.key == key:
                events.append(event)
        events.reverse()
        return events

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
        """Forget the whole history, as an etcd compaction at the current revision does."""
        self._history.clear()
        self.compacted_rv = self.rv

    def _emit(self, event: Event) -> None:
        self._history.append(event)
        if len(self._history) > 2 * self.history_size:
            drop = len(self._history) - self.history_size
            self.compacted_rv = self._history[drop - 1].rv
            del self._history[:drop]
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
