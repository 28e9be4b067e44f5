"""Effects: one leader session's result handed to the binder, the status writer and the evictor.

The session's decisions are frozen values; this is the one place they fan out to the
components that turn them into API calls, in the order the API server should see them:
bindings first (a gang's binds leave together), then evictions, then statuses.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection
from functools import partial
from typing import Protocol

from scheduler.cache.world import World
from scheduler.effects.binder import Binder
from scheduler.effects.evictor import Evictor
from scheduler.effects.recorder import EventRecorder
from scheduler.effects.status_writer import StatusWriter
from scheduler.framework.decisions import (
    Bind,
    Evict,
    FieldNotHonoured,
    HyperNodeStatusUpdate,
    InvalidObjectReport,
    PodGroupStatusUpdate,
    PodUnschedulable,
    QueueStatusUpdate,
    SessionResult,
)
from scheduler.kube.client import KubeClient
from scheduler.metrics import Metrics

log = logging.getLogger("muster.scheduler")

# How long shutdown waits for writes in flight, per component. Together (30 s) they stay
# within the scheduler pod's terminationGracePeriodSeconds (40, deploy/base/scheduler).
BIND_DRAIN_SECONDS = 20.0
STATUS_DRAIN_SECONDS = 5.0
EVENT_DRAIN_SECONDS = 5.0
# Connections of the status writer's lane, one write at a time on each: as many as its two
# keyed lanes (effects/lanes.py) write at once together.
STATUS_CONNECTIONS = 32


class BindDispatcher(Protocol):
    """What Effects needs of the binder."""

    def dispatch(self, binds: list[Bind]) -> None: ...

    async def drain(self) -> None: ...

    async def close(self) -> None: ...


class StatusSink(Protocol):
    """What Effects needs of the status writer."""

    def pod_placed(self, uid: str) -> None: ...

    def forget_gone(self, podgroups: Collection[str], pods: Collection[str]) -> None: ...

    def podgroups(self, updates: list[PodGroupStatusUpdate]) -> None: ...

    def pods(self, messages: list[PodUnschedulable]) -> None: ...

    def queues(self, updates: list[QueueStatusUpdate]) -> None: ...

    def invalid(self, reports: list[InvalidObjectReport]) -> None: ...

    def field_warnings(self, warnings: list[FieldNotHonoured]) -> None: ...

    def hypernodes(self, updates: list[HyperNodeStatusUpdate]) -> None: ...

    async def drain(self) -> None: ...


class PodEvictor(Protocol):
    """What Effects needs of the evictor."""

    async def evict_group(self, group: list[Evict]) -> list[bool]: ...


class ReleaseTracker(Protocol):
    """What Effects needs of the cache: the room of an evicted pod is going, or stays;
    why the Eviction API refused a preemptor's evictions."""

    def assume_releasing(self, uid: str) -> None: ...

    def forget_releasing(self, uid: str) -> None: ...

    def eviction_refused(self, preemptor: str, why: str, now: float) -> None: ...


class Drainable(Protocol):
    """Background writes that can be waited for, then stopped (the event recorder)."""

    async def drain(self) -> None: ...

    async def close(self) -> None: ...


class Closable(Protocol):
    """A connection pool of the effects' own (the status writer's lane)."""

    async def close(self) -> None: ...


class Effects:
    """Applies SessionResults through the binder, status writer and evictor; drains them."""

    def __init__(
        self,
        *,
        cache: ReleaseTracker,
        binder: BindDispatcher,
        writer: StatusSink,
        evictor: PodEvictor,
        recorder: Drainable,
        pools: tuple[Closable, ...] = (),
    ) -> None:
        self.cache = cache
        self.binder = binder
        self.writer = writer
        self.evictor = evictor
        self.recorder = recorder
        # Closed on shutdown, once the writes are drained.
        self.pools = pools
        # Evictions run in the background; held here so none is garbage-collected mid-way.
        self._evictions: set[asyncio.Task[None]] = set()

    @classmethod
    def connected(
        cls,
        client: KubeClient,
        world: World,
        recorder: EventRecorder,
        metrics: Metrics,
        *,
        may_bind: Callable[[], bool],
        bind_client: KubeClient | None = None,
        bind_workers: int = 64,
    ) -> Effects:
        """The effects of a scheduler process: its evictor on `client`, its binder on
        `bind_client` (a lane of its own, so no bind waits for a connection behind status
        writes; `client` when not given) with `bind_workers` binds in flight, its status
        writer on a lane of its own, and events and status writes held while binds wait to
        be sent."""
        # Status writes on the lean transport (kube/pipeline.py), one at a time on each
        # connection: through aiohttp each took as much CPU as four binds, and a gang of 8
        # costs one or two. A merge patch of a status is safe to send twice, as the
        # transport may after a broken connection.
        status_client = client.lane(STATUS_CONNECTIONS, depth=1)
        writer = StatusWriter(status_client, recorder)
        for lane in writer.waiting():
            metrics.status_writes_waiting.labels(lane).set_function(partial(_waiting, writer, lane))
        binder = Binder(
            bind_client or client,
            world,
            recorder,
            metrics,
            concurrency=bind_workers,
            may_bind=may_bind,
        )
        recorder.yield_to(binder.backlog_cleared)
        writer.yield_to(binder.backlogged, binder.backlog_cleared)
        return cls(
            cache=world,
            binder=binder,
            writer=writer,
            evictor=Evictor(
                client,
                recorder,
                may_evict=may_bind,
                on_refused=partial(_refused, world, metrics),
                on_sent=world.evictions_sent,
            ),
            recorder=recorder,
            pools=(status_client,),
        )

    def apply(self, result: SessionResult) -> None:
        """Send everything `result` decided; returns at once, the writes go in the background."""
        self.binder.dispatch(result.binds)
        for bind in result.binds:
            self.writer.pod_placed(bind.uid)
        groups: dict[str, list[Evict]] = {}
        for eviction in result.evictions:
            # Counted as going before the eviction is sent: the next session must not pick
            # victims again for the same preemptor while this one terminates.
            self.cache.assume_releasing(eviction.uid)
            groups.setdefault(eviction.preemptor, []).append(eviction)
        for group in groups.values():
            task = asyncio.get_running_loop().create_task(self._evict(group))
            self._evictions.add(task)
            task.add_done_callback(self._evictions.discard)
        self.writer.podgroups(result.podgroups)
        self.writer.pods(result.unschedulable)
        self.writer.queues(result.queues)
        self.writer.invalid(result.invalid)
        self.writer.field_warnings(result.field_warnings)
        self.writer.hypernodes(result.hypernodes)

    def forget_gone(self, podgroups: Collection[str], pods: Collection[str]) -> None:
        """Let the writers drop what they keep about PodGroups ("ns/name") and pods (uids)
        that no longer exist."""
        self.writer.forget_gone(podgroups, pods)

    @property
    def evictions_in_flight(self) -> frozenset[asyncio.Task[None]]:
        """The evictions sent and not yet answered."""
        return frozenset(self._evictions)

    async def finish(self) -> None:
        """On shutdown: wait a bounded time for binds, statuses and events in flight,
        then stop the binder. Evictions in flight are left to be cancelled: the next
        leader decides again over what the API server holds."""
        try:
            await asyncio.wait_for(self.binder.drain(), timeout=BIND_DRAIN_SECONDS)
            await asyncio.wait_for(self.writer.drain(), timeout=STATUS_DRAIN_SECONDS)
            await asyncio.wait_for(self.recorder.drain(), timeout=EVENT_DRAIN_SECONDS)
        except TimeoutError:
            log.warning("shutdown: some writes did not finish in time")
        await self.recorder.close()
        await self.binder.close()
        for pool in self.pools:
            await pool.close()

    async def _evict(self, group: list[Evict]) -> None:
        for eviction, gone in zip(group, await self.evictor.evict_group(group), strict=True):
            if not gone:
                # The pod keeps its room: the next session sees it as it is.
                self.cache.forget_releasing(eviction.uid)


def _refused(world: World, metrics: Metrics, preemptor: str, why: str) -> None:
    metrics.evictions_refused.inc()
    world.eviction_refused(preemptor, why, time.time())


def _waiting(writer: StatusWriter, lane: str) -> float:
    return float(writer.waiting()[lane])
