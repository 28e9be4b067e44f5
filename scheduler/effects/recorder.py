"""EventRecorder: core/v1 Events, deduplicated and rate limited.

An unschedulable 1,000-pod gang must not write 1,000 events every second: an
event with the same object, reason and message as one written within the
window is skipped, and a token bucket per reason caps the rate. Per reason, so
that a flood of one kind (Scheduled at 500 binds a second) never silences
another (the InvalidObject event that explains a bad object: found by the chaos
fuzz, where the explanations of the last bad objects never got a token).

What passes both waits in a bounded queue for a few workers, one per connection of the
event lane. When the API server takes events slower than they come, the queue fills and
new events are dropped (and counted), as client-go's broadcaster drops them when its
queue is full: events are a courtesy, the conditions on PodGroups and pods are the
record. Before, each event was a task of its own: the chaos soak found 8,000 of them
queued for the lane's 4 connections, timing out after 30 s, the leader's memory growing
by 80 MiB in ten minutes and its loop too busy to renew the lease.

Binds come first (`yield_to`): while binds wait for the binder's workers, a writer holds
its event, up to HOLD_SECONDS from when it was recorded, then writes it stamped with that
time. An API server binding a burst is the bound on a whole cluster, and every event
written meanwhile is a write a bind waited behind: a 10,000-pod burst wrote some 600
Scheduled events, 6% as many writes as its binds.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from scheduler.api import paths
from scheduler.kube.client import KubeClient
from scheduler.kube.clock import now_rfc3339
from scheduler.kube.errors import Fenced, StatusError, TransportError
from scheduler.metrics import Metrics

log = logging.getLogger(__name__)

COMPONENT = "muster"
# Events waiting to be written at most; client-go's broadcaster queues 1,000 too.
QUEUE_SIZE = 1000
# How often events older than the deduplication window are forgotten. The table was pruned
# only past 50,000 entries, which an hour of the chaos soak's binds fills: some 20 MiB (about
# 400 bytes an entry, with its message) of the Scheduled and FailedScheduling events of pods
# long gone.
PRUNE_EVERY = 60.0
# How long at most an event waits for the binds before it (yield_to).
HOLD_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """The object an event is about."""

    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str = ""


@dataclass(frozen=True, slots=True)
class _Event:
    ref: ObjectRef
    event_type: str
    reason: str
    message: str
    # When it was recorded: by the recorder's clock (how long it may be held), and as the
    # event's timestamps say it.
    recorded: float
    stamp: str
    # Whether it is the leader's to write (asks the fence), not the process's own.
    as_leader: bool


def own_pod(environ: Mapping[str, str]) -> ObjectRef | None:
    """The pod this process runs in, from the downward-API variables POD_NAMESPACE,
    POD_NAME and POD_UID (deploy/base/scheduler/deployment.yaml); None outside a pod."""
    namespace = environ.get("POD_NAMESPACE")
    name = environ.get("POD_NAME")
    if not (namespace and name):
        return None
    return ObjectRef("Pod", "v1", namespace, name, environ.get("POD_UID", ""))


@dataclass(slots=True)
class _Bucket:
    """A token bucket: `burst` tokens, refilled at `per_second`."""

    tokens: float
    stamp: float

    def take(self, now: float, per_second: float, burst: int) -> bool:
        self.tokens = min(burst, self.tokens + (now - self.stamp) * per_second)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class EventRecorder:
    """Writes events in the background; never blocks the scheduling loop."""

    def __init__(
        self,
        client: KubeClient,
        metrics: Metrics,
        *,
        window: float = 300.0,
        per_second: float = 50.0,
        burst: int = 200,
        queue_size: int = QUEUE_SIZE,
        workers: int,
        clock: Callable[[], float] = time.monotonic,
        fence: Callable[[], bool] | None = None,
    ) -> None:
        if queue_size < 1 or workers < 1:
            raise ValueError(f"queue_size {queue_size} and workers {workers} must be at least 1")
        self.client = client
        self.metrics = metrics
        self.window = window
        self.per_second = per_second
        self.burst = burst
        self.queue_size = queue_size
        self.workers = workers
        self._buckets: dict[str, _Bucket] = {}
        self._recent: dict[tuple[str, str, str, str, str], float] = {}
        self._clock = clock
        # Asked as each of the leader's events is written (effects/fence.py); None: always.
        self.fence = fence
        self._pruned_at = clock()
        # Made on the first event, on the loop that records it.
        self._queue: asyncio.Queue[_Event] | None = None
        self._workers: list[asyncio.Task[None]] = []
        self._binds_first: Callable[[], Awaitable[None]] | None = None
        self.instance = os.environ.get("HOSTNAME", "muster")

    def yield_to(self, cleared: Callable[[], Awaitable[None]]) -> None:
        """Hold each event until `cleared()` returns (no bind waits to be sent), or
        HOLD_SECONDS after it was recorded."""
        self._binds_first = cleared

    def record(
        self,
        ref: ObjectRef,
        event_type: str,
        reason: str,
        message: str,
        *,
        as_leader: bool = True,
    ) -> None:
        """Queue an event unless an identical one went out within the window. `as_leader`:
        the leader's event, written only while the fence is open; else the process's own."""
        now = self._clock()
        if now - self._pruned_at >= PRUNE_EVERY:
            self._forget_old(now)
        key = (ref.kind, ref.namespace, ref.name, reason, message)
        last = self._recent.get(key)
        if last is not None and now - last < self.window:
            self.metrics.events_dropped.inc()
            return
        bucket = self._buckets.get(reason)
        if bucket is None:
            bucket = self._buckets[reason] = _Bucket(float(self.burst), now)
        if not bucket.take(now, self.per_second, self.burst):
            self.metrics.events_dropped.inc()
            return
        try:
            event = _Event(ref, event_type, reason, message, now, now_rfc3339(), as_leader)
            self._started().put_nowait(event)
        except asyncio.QueueFull:
            # Not marked as sent: the same situation offers the event again later.
            self.metrics.events_dropped.inc()
            return
        self._recent[key] = now

    def queued(self) -> int:
        """Events waiting for a worker."""
        return 0 if self._queue is None else self._queue.qsize()

    def _started(self) -> asyncio.Queue[_Event]:
        queue = self._queue
        if queue is None:
            queue = self._queue = asyncio.Queue(self.queue_size)
            self._workers = [self._writer(queue, index) for index in range(self.workers)]
        elif any(worker.done() for worker in self._workers):
            # A writer ends only by cancellation, which close() alone does; one cancelled
            # from elsewhere would leave the queue filling with nobody to write it, so it
            # is replaced (and said) rather than lost quietly.
            for index, worker in enumerate(self._workers):
                if worker.done():
                    log.warning("event writer %d had stopped; starting it again", index)
                    self._workers[index] = self._writer(queue, index)
        return queue

    def _writer(self, queue: asyncio.Queue[_Event], index: int) -> asyncio.Task[None]:
        loop = asyncio.get_running_loop()
        return loop.create_task(self._work(queue), name=f"event-writer-{index}")

    async def _work(self, queue: asyncio.Queue[_Event]) -> None:
        while True:
            event = await queue.get()
            try:
                await self._wait_turn(event)
                await self._write(event)
            except Exception:
                # A bug in writing one event must not stop the events after it.
                log.exception("event %s on %s: not written", event.reason, event.ref.name)
            finally:
                queue.task_done()

    def forget(self, ref: ObjectRef) -> None:
        """Allow the object's events again (its situation changed)."""
        for key in [k for k in self._recent if k[:3] == (ref.kind, ref.namespace, ref.name)]:
            del self._recent[key]

    async def drain(self) -> None:
        """Wait for the events queued and in flight."""
        if self._queue is not None:
            await self._queue.join()

    async def close(self) -> None:
        """Stop the workers (events still queued are not written)."""
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        self._queue = None

    def remembered(self) -> int:
        """Events remembered for deduplication (those of the last window, and up to a
        minute's more)."""
        return len(self._recent)

    def _forget_old(self, now: float) -> None:
        self._pruned_at = now
        for key in [k for k, t in self._recent.items() if now - t >= self.window]:
            del self._recent[key]

    async def _wait_turn(self, event: _Event) -> None:
        if self._binds_first is None:
            return
        may_wait = event.recorded + HOLD_SECONDS - self._clock()
        if may_wait <= 0:
            return
        try:
            await asyncio.wait_for(self._binds_first(), may_wait)
        except TimeoutError:
            # Held as long as an event may be: written now, binds waiting or not.
            log.debug(
                "event %s on %s held %gs; written now", event.reason, event.ref.name, HOLD_SECONDS
            )

    async def _write(self, event: _Event) -> None:
        ref, reason = event.ref, event.reason
        stamp = event.stamp
        namespace = ref.namespace or "default"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": event_name(ref.name, secrets.token_hex(8)),
                "namespace": namespace,
            },
            "involvedObject": {
                "kind": ref.kind,
                "apiVersion": ref.api_version,
                "namespace": ref.namespace,
                "name": ref.name,
                "uid": ref.uid,
            },
            "reason": reason,
            "message": event.message[:1024],
            "type": event.event_type,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        gate = self.fence if event.as_leader else None
        try:
            await self.client.create(paths.events(namespace), body, gate=gate)
        except Fenced:
            # The lease went while it waited: the next leader says what it finds.
            self.metrics.events_dropped.inc()
            log.debug("event %s on %s/%s: not the leader any more", reason, namespace, ref.name)
        except StatusError as error:
            if error.code == 409:
                # The name is ours and random: an attempt the client retried (its answer
                # lost to a timeout) had written the event already.
                return
            log.warning("could not write event %s on %s/%s: %s", reason, namespace, ref.name, error)
        except TransportError as error:
            log.warning("could not write event %s on %s/%s: %s", reason, namespace, ref.name, error)


# An Event's name is a DNS subdomain of at most 253 characters.
MAX_NAME = 253


def event_name(object_name: str, suffix: str) -> str:
    """`<object>.<suffix>`, the object's name cut short enough for the whole to be a valid
    name (client-go does not cut, and an object named near the limit then gets no event)."""
    room = MAX_NAME - len(suffix) - 1
    stem = object_name[:room].rstrip("-.") or "object"
    return f"{stem}.{suffix}"
