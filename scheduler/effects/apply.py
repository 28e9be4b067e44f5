"""Effects: one leader session's result handed to the binder, the status writer and the evictor.

The session's decisions are frozen values; this is the one place they fan out to the
components that turn them into API calls, in the order the API server should see them:
bindings first (a gang's binds leave together), then evictions, then statuses and the
events that go with them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from functools import partial
from typing import Protocol

from scheduler.api.names import GROUP, VERSION
from scheduler.api.podgroup import PodGroupPhase
from scheduler.cache.world import World
from scheduler.effects.binder import Binder
from scheduler.effects.evictor import Evictor
from scheduler.effects.fence import LeaderFence
from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.effects.scale_up import ScaleUpWriter
from scheduler.effects.status_writer import StatusWriter
from scheduler.framework.decisions import (
    AnnotatePod,
    Bind,
    CreateProvisioningRequest,
    DeleteProvisioningRequest,
    Evict,
    FieldNotHonoured,
    HyperNodeStatusUpdate,
    InvalidObjectReport,
    PodGroupStatusUpdate,
    PodUnschedulable,
    QueueStatusUpdate,
    SessionResult,
)
from scheduler.health import BindProgress
from scheduler.kube.client import KubeClient
from scheduler.metrics import Metrics

log = logging.getLogger("muster.scheduler")

# How long shutdown waits, in turn, while this replica still holds its lease: for the binds
# queued to go out; then (none begun any more) for the answers of those on the wire; then for
# the status writes, scale-up writes and events queued (together). Then the leader's fence
# closes and the lease is released: nothing of the leader's is sent after a successor may
# lead. The lease is held until all that is done, so each part is kept short: a standby
# takes over only after it (a bind retried after a 5xx could hold it for a minute, and the
# kubelet kills a pod past its grace). The writes get the least: what they leave unsent, the
# successor's first session writes anew (its status writer has written nothing yet), while
# each second they take (429s and their retries) delays the hand-over. Together (8 s) they
# stay within the scheduler pod's terminationGracePeriodSeconds (40, deploy/base/scheduler).
BIND_DRAIN_SECONDS = 2.0
BIND_ANSWER_SECONDS = 5.0
WRITE_DRAIN_SECONDS = 1.0
# How long, once the fence is closed, the writes already on the wire get for their answers.
WRITE_ANSWER_SECONDS = 5.0
# Connections of the status writer's lane, one write at a time on each: as many as its two
# keyed lanes (effects/lanes.py) write at once together.
STATUS_CONNECTIONS = 32
_PODGROUP_API = f"{GROUP}/{VERSION}"


class BindDispatcher(Protocol):
    """What Effects needs of the binder."""

    def dispatch(self, binds: list[Bind]) -> None: ...

    def when_answered(self, callback: Callable[[str], None]) -> None: ...

    def stop_retrying(self) -> None: ...

    def fence(self) -> None: ...

    async def drain(self) -> None: ...

    async def first_answer(self) -> None: ...

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
    why the Eviction API refused a preemptor's evictions; whether a gang's binds were
    answered."""

    def assume_releasing(self, uid: str) -> None: ...

    def forget_releasing(self, uid: str) -> None: ...

    def awaits_binds(self, key: str) -> bool: ...

    def bound_whole(self, key: str) -> bool: ...

    def eviction_refused(self, preemptor: str, why: str, now: float) -> None: ...


class ScaleUpSink(Protocol):
    """What Effects needs of the scale-up writer (effects/scale_up.py)."""

    def create(self, decision: CreateProvisioningRequest) -> None: ...

    def delete(self, decision: DeleteProvisioningRequest) -> None: ...

    def annotate(self, decision: AnnotatePod, then: Callable[[], None] | None = None) -> None: ...

    async def drain(self) -> None: ...


class _NoScaleUp:
    """A scale-up sink for effects that write no scale-up (tests of the other writers)."""

    def create(self, decision: CreateProvisioningRequest) -> None:
        raise AssertionError(f"no scale-up writer to create {decision.name}")

    def delete(self, decision: DeleteProvisioningRequest) -> None:
        raise AssertionError(f"no scale-up writer to delete {decision.name}")

    def annotate(self, decision: AnnotatePod, then: Callable[[], None] | None = None) -> None:
        raise AssertionError(f"no scale-up writer to annotate {decision.name}")

    async def drain(self) -> None:
        return None


class EventSink(Protocol):
    """What Effects needs of the event recorder: events recorded in the background, waited
    for, then stopped."""

    def record(self, ref: ObjectRef, event_type: str, reason: str, message: str) -> None: ...

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
        recorder: EventSink,
        pools: tuple[Closable, ...] = (),
        scale_up: ScaleUpSink | None = None,
        progress: BindProgress | None = None,
        fence: LeaderFence | None = None,
    ) -> None:
        self.cache = cache
        # Closed on shutdown once the writes had their time (finish_writes).
        self.fence = fence if fence is not None else LeaderFence(lambda: True)
        self.progress = progress
        self.binder = binder
        self.writer = writer
        self.evictor = evictor
        self.recorder = recorder
        # Closed on shutdown, once the writes are drained.
        self.pools = pools
        self.scale_up: ScaleUpSink = scale_up if scale_up is not None else _NoScaleUp()
        # Evictions run in the background; held here so none is garbage-collected mid-way.
        self._evictions: set[asyncio.Task[None]] = set()
        # A gang's first Running, held until its binds are answered (by gang key).
        self._unbound: dict[str, PodGroupStatusUpdate] = {}
        binder.when_answered(self._bind_answered)

    @classmethod
    def connected(
        cls,
        client: KubeClient,
        world: World,
        recorder: EventRecorder,
        metrics: Metrics,
        *,
        fence: LeaderFence,
        bind_client: KubeClient | None = None,
        bind_workers: int = 64,
        progress: BindProgress | None = None,
    ) -> Effects:
        """The effects of a scheduler process: its evictor on `client`, its binder on
        `bind_client` (a lane of its own, so no bind waits for a connection behind status
        writes; `client` when not given) with `bind_workers` binds in flight, its status
        writer on a lane of its own, and events and status writes held while binds wait to
        be sent. Every write of theirs asks `fence` (the recorder's too, given it when it
        was made) as it is sent."""
        # Status writes on the lean transport (kube/pipeline.py), one at a time on each
        # connection: through aiohttp each took as much CPU as four binds, and a gang of 8
        # costs one or two. A merge patch of a status is safe to send twice, as the
        # transport may after a broken connection.
        status_client = client.lane(STATUS_CONNECTIONS, depth=1)
        writer = StatusWriter(
            status_client,
            recorder,
            is_ours=world.owns,
            is_pending=world.is_pending,
            on_unwritten=world.status_unwritten,
            on_written=lambda kind, result: metrics.status_writes.labels(kind, result).inc(),
            fence=fence,
        )
        for lane in writer.waiting():
            metrics.status_writes_waiting.labels(lane).set_function(partial(_waiting, writer, lane))
        binder = Binder(
            bind_client or client,
            world,
            recorder,
            metrics,
            concurrency=bind_workers,
            may_bind=fence,
            progress=progress,
        )
        metrics.placeable_gangs.set_function(lambda: binder.progress.placeable)
        recorder.yield_to(binder.backlog_cleared)
        writer.yield_to(binder.backlogged, binder.backlog_cleared)
        return cls(
            cache=world,
            binder=binder,
            progress=binder.progress,
            writer=writer,
            evictor=Evictor(
                client,
                recorder,
                may_evict=fence,
                on_refused=partial(_refused, world, metrics),
                on_sent=world.evictions_sent,
            ),
            recorder=recorder,
            pools=(status_client,),
            scale_up=ScaleUpWriter(client, recorder, may_write=fence),
            fence=fence,
        )

    def apply(self, result: SessionResult) -> None:
        """Send everything `result` decided; returns at once, the writes go in the background."""
        if self.progress is not None:
            self.progress.session_applied((bind.uid, bind.job) for bind in result.binds)
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
        self.writer.podgroups(self._running_once_bound(result.podgroups))
        for event in result.events:
            ref = ObjectRef("PodGroup", _PODGROUP_API, event.namespace, event.name, event.uid)
            self.recorder.record(ref, event.type, event.reason, event.message)
            # A gang bound in part is rare and matters: the log says it too.
            log.info(
                "%s: %s",
                event.reason,
                event.message,
                extra={"podgroup": f"{event.namespace}/{event.name}"},
            )
        self._scale_up(result)
        self.writer.queues(result.queues)
        self.writer.invalid(result.invalid)
        self.writer.field_warnings(result.field_warnings)
        self.writer.hypernodes(result.hypernodes)

    def _running_once_bound(
        self, updates: list[PodGroupStatusUpdate]
    ) -> list[PodGroupStatusUpdate]:
        """The updates to write now. A gang's first Running waits until its binds are
        answered: a session says Running as it commits the binds, and were it written before
        they land, a leader stopped between two of them would leave a gang the API server
        calls Running with members unbound; the next leader would take it for a running
        gang that lost members (api/gang_state.py's partly_bound) and neither complete it
        first nor undo it. A newer status of the gang replaces the one waiting."""
        now: list[PodGroupStatusUpdate] = []
        for update in updates:
            key = update.key
            self._unbound.pop(key, None)
            if update.phase is PodGroupPhase.RUNNING and self.cache.awaits_binds(key):
                self._unbound[key] = update
            else:
                now.append(update)
        return now

    def _bind_answered(self, job: str) -> None:
        """A bind of gang `job` has its last answer: its Running waiting for that is written
        once no bind of the gang waits, if the gang is ready on them; else it is dropped
        (a bind failed: the next session, which the failure asks for, decides again)."""
        update = self._unbound.get(job)
        if update is None or self.cache.awaits_binds(job):
            return
        del self._unbound[job]
        if self.cache.bound_whole(job):
            self.writer.podgroups([update])

    def _scale_up(self, result: SessionResult) -> None:
        """Hand over the scale-up writes, and the pods' PodScheduled conditions: a pod being
        annotated for a request gets its condition once the annotation is written."""
        for deletion in result.provisioning_deletions:
            self.scale_up.delete(deletion)
        for creation in result.provisioning_requests:
            self.scale_up.create(creation)
        messages = {message.uid: message for message in result.unschedulable}
        for annotation in result.pod_annotations:
            message = messages.pop(annotation.uid, None) if annotation.request else None
            then = partial(self.writer.pods, [message]) if message is not None else None
            self.scale_up.annotate(annotation, then)
        self.writer.pods(list(messages.values()))

    def forget_gone(self, podgroups: Collection[str], pods: Collection[str]) -> None:
        """Let the writers drop what they keep about PodGroups (gang keys) and pods (uids)
        that no longer exist."""
        self.writer.forget_gone(podgroups, pods)

    async def first_bind_answered(self) -> None:
        """Wait until a bind of the last session's has its answer (at once when it made
        none): its binds are on the wire before the next session holds the event loop."""
        await self.binder.first_answer()

    @property
    def evictions_in_flight(self) -> frozenset[asyncio.Task[None]]:
        """The evictions sent and not yet answered."""
        return frozenset(self._evictions)

    async def finish_binds(self) -> bool:
        """On shutdown, before the lease is released: binds waiting to be sent again are
        given up, those queued get BIND_DRAIN_SECONDS to go out, then none is begun and
        those on the wire get their answers. What is given up is pending again, and the
        next leader places it (a gang part bound is finished by it, on the room it has).
        Whether every bind begun was answered (else the lease is left to expire: one on
        the wire may still land)."""
        self.binder.stop_retrying()
        try:
            await asyncio.wait_for(self.binder.drain(), timeout=BIND_DRAIN_SECONDS)
            return True
        except TimeoutError:
            self.binder.fence()
        try:
            await asyncio.wait_for(self.binder.drain(), timeout=BIND_ANSWER_SECONDS)
            return True
        except TimeoutError:
            log.warning("shutdown: some binds were not answered in time")
            return False

    async def finish_writes(self) -> bool:
        """On shutdown, after finish_binds and before the lease is released: the status
        writes, scale-up writes and events queued get WRITE_DRAIN_SECONDS to go out, then
        the fence closes: none is begun after the lease is given up, so none can land over a
        successor's. Those already on the wire, and evictions in flight (they ask the fence
        at each call), get WRITE_ANSWER_SECONDS for their answers: a write the API server
        has not answered may still land. Whether all were answered: only then is the lease
        given up at once (server.py); else it is left to expire."""
        try:
            await asyncio.wait_for(self._writes_drained(), timeout=WRITE_DRAIN_SECONDS)
        except TimeoutError:
            log.warning("shutdown: some writes did not go out in time; the next leader makes them")
        self.fence.close()
        # What has not begun is fenced at once now; what is on the wire gets its answer.
        evictions = asyncio.gather(*self._evictions, return_exceptions=True)
        try:
            await asyncio.wait_for(
                asyncio.gather(self._writes_drained(), evictions), timeout=WRITE_ANSWER_SECONDS
            )
            return True
        except TimeoutError:
            log.warning("shutdown: some writes were not answered in time")
            return False

    async def _writes_drained(self) -> None:
        await asyncio.gather(self.writer.drain(), self.scale_up.drain(), self.recorder.drain())

    async def close(self) -> None:
        """On shutdown, after finish_writes: stop the event writers and the binder, and close
        the effects' own connection pools."""
        await self.recorder.close()
        await self.binder.close()
        for pool in self.pools:
            await pool.close()

    async def finish(self, release: Callable[[bool], Awaitable[None]] | None = None) -> None:
        """On shutdown, in order: finish_binds, finish_writes, `release` the lease (told
        whether every bind and write begun was answered: only then may it be given up at
        once, else it is left to expire), close."""
        answered = await self.finish_binds()
        answered = await self.finish_writes() and answered
        if release is not None:
            await release(answered)
        await self.close()

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
