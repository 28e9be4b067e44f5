"""Binder: sends the bindings of committed gangs, in parallel and bounded.

Every pod of one commit is dispatched at once, so a gang's binds reach the API
server together. Before a bind is sent the cache counts the pod on its node
(Binding), so the next session cannot place it again; a bind that fails after
the client's retries returns the pod to pending, with an event, so the next
session places it again: a failed bind is never forgotten.

A bind that failed for a reason that passes (5xx, 429, a broken connection, after the
client's own retries; a 403, which a restarted kube-apiserver answers until its RBAC
authorizer has synced) is sent again to the same node, with backoff, for up to
RETRY_SECONDS: the pod keeps its room on that node meanwhile. Returning it to pending
instead would let other work take the room while the rest of its gang is bound, leaving
the gang short of minMember for good.

Before the binding, kube-scheduler's PreBind for the pod's unbound WaitForFirstConsumer
claims: a claim to provision gets `volume.kubernetes.io/selected-node`, a static volume
chosen for a claim gets its claimRef (conditional on the resourceVersion the session saw,
so two binds never take one volume). Then, as kube-scheduler, the bind waits until the
PV controller and the provisioner have bound every such claim (up to the bind's
claims_timeout, predicates' volumebinding.bindTimeoutSeconds, 600 s unless configured; in
a task of its own, not holding a worker), keeping its room: a
provisioner that gives up (it takes the selected-node annotation off, asking for another
node) or a claim deleted meanwhile fails the bind, and the pod returns to pending to be
placed again, rather than be bound to a node its volume will never reach. A failed
PreBind fails the bind.

A pod with ResourceClaims has its claims written first (effects/device_claims.py: the
delete-protection finalizer, then the allocation and the pod's reservation), as
kube-scheduler's DynamicResources PreBind writes them; from dispatch on the cache counts
them as written (World.assume_claimed). A claim that cannot be written fails the bind: the
pod is pending again and the devices of the claims not written are free again (those
written stay the API server's, and the next placement of the gang reuses or replaces them).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from scheduler.api.task import TaskStatus
from scheduler.cache.world import World
from scheduler.effects.device_claims import DeviceClaimFailed, DeviceClaimWriter
from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.framework.decisions import Bind, ClaimBinding, DeviceBind
from scheduler.health import BindProgress
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import Fenced, NotFound, StatusError, TransportError, is_retryable
from scheduler.metrics import Metrics

log = logging.getLogger(__name__)

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
# How long a bind failing for a passing reason keeps its node's room and is sent again.
RETRY_SECONDS = 60.0
RETRY_BASE = 0.5
RETRY_MAX = 5.0
# How often a bind waiting for its claims looks at the cache (kube: every second).
VOLUME_POLL = 0.5


class VolumeBindingFailed(Exception):
    """The claims of a pod being bound will not be bound on its node."""


class Binder:
    """Posts bindings; keeps the cache's assumptions in step with the answers."""

    def __init__(
        self,
        client: KubeClient,
        world: World,
        recorder: EventRecorder,
        metrics: Metrics,
        *,
        concurrency: int = 64,
        may_bind: Callable[[], bool] = lambda: True,
        progress: BindProgress | None = None,
    ) -> None:
        self.client = client
        # Which gangs wait for their binds (the readiness probe's stall check).
        self.progress = progress or BindProgress(time.monotonic)
        self.world = world
        self.recorder = recorder
        self.metrics = metrics
        # The series every bind that lands moves, looked up once: a labels() lookup takes a
        # lock and checks the values, a few µs on the hot path (10,000 binds, two each).
        self._bound = metrics.binds.labels("success")
        self._scheduled = metrics.schedule_attempts.labels("scheduled")
        self._may_bind = may_bind
        # Set on shutdown once the binds queued had their time (fence): none is begun after.
        self._fenced = False
        self.concurrency = concurrency
        # A fixed pool of workers on one queue: a 10,000-pod backlog costs no
        # 10,000 task objects, and the members of one gang leave together, in order.
        self._queue: asyncio.Queue[Bind] = asyncio.Queue()
        # Binds waiting to be sent again: when each was first tried, and its timer.
        self._first_tried: dict[str, tuple[float, int]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        # Binds whose PreBind is done, waiting for their claims to be bound; and those
        # whose claims are bound, to be sent now without their PreBind again.
        self._parked: dict[str, asyncio.Task[None]] = {}
        self._volumes_bound: set[str] = set()
        # The ResourceClaims of binds of pods with claims, and those written per pod so far.
        self.devices = DeviceClaimWriter(client, world, self.may_bind)
        self._claims_written: dict[str, tuple[DeviceBind, set[str]]] = {}
        self._workers: list[asyncio.Task[None]] = []
        # Set while no bind waits for a worker: the event writers hold their events until
        # then (EventRecorder.yield_to), and the status writer its writes (KeyedLane.yield_to),
        # so that a burst's binds have the API server first.
        self._no_backlog = asyncio.Event()
        self._no_backlog.set()
        self._unanswered = 0
        self._settled = asyncio.Event()
        self._settled.set()
        # Set once a bind dispatched since the last dispatch() was answered (or given up).
        self._first_answer = asyncio.Event()
        self._first_answer.set()
        # Told each bind's gang once the bind has its last answer (when_answered).
        self._on_answered: list[Callable[[str], None]] = []

    def may_bind(self) -> bool:
        """Whether a bind may be written now: this replica leads, and is not shutting down
        past its binds' time (fence)."""
        return not self._fenced and self._may_bind()

    def stop_retrying(self) -> None:
        """On shutdown: give up the binds waiting to be sent again and those waiting for
        their claims (their pods are pending again here; the next leader places them)."""
        for uid in list(self._timers):
            self._timers.pop(uid).cancel()
            self._first_tried.pop(uid, None)
            job = self._job_of(uid)
            self.world.forget_bound(uid)
            self._forget_devices(uid)
            self.progress.settled(uid)
            self._answered(job)
        for uid in list(self._parked):
            self._parked.pop(uid).cancel()
            self._volumes_bound.discard(uid)
            job = self._job_of(uid)
            self.world.forget_bound(uid)
            self._forget_devices(uid)
            self._answered(job)

    def fence(self) -> None:
        """On shutdown, once the queued binds had their time: begin no bind any more; those
        on the wire still get their answers, the rest are abandoned."""
        self._fenced = True

    @property
    def in_flight(self) -> int:
        """Binds dispatched and not yet answered."""
        return self._unanswered

    def dispatch(self, binds: list[Bind]) -> None:
        """Assume every bind in the cache now and send them all in the background."""
        if not binds:
            return
        if not self._workers:
            loop = asyncio.get_running_loop()
            self._workers = [loop.create_task(self._work()) for _ in range(self.concurrency)]
        for bind in binds:
            self.world.assume_bound(bind.uid, bind.node)
            if isinstance(bind, DeviceBind):
                self.devices.assume(bind)
                self._claims_written[bind.uid] = (bind, set())
            self.progress.sending(bind.uid, bind.job)
            self._enqueue(bind)
        self._unanswered += len(binds)
        self._settled.clear()
        self._first_answer.clear()

    async def drain(self) -> None:
        """Wait until every bind dispatched has its answer."""
        await self._settled.wait()

    async def first_answer(self) -> None:
        """Wait until a bind of the last dispatch has its answer (at once when it had none):
        the binds are on the wire, not waiting for the event loop."""
        await self._first_answer.wait()

    async def backlog_cleared(self) -> None:
        """Wait until no bind waits for a worker (each is sent, or being sent)."""
        await self._no_backlog.wait()

    def backlogged(self) -> bool:
        """Whether binds wait for a worker now."""
        return not self._no_backlog.is_set()

    async def close(self) -> None:
        """Stop the workers (after drain, on shutdown)."""
        self.stop_retrying()
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        self._no_backlog.set()  # what is still queued will not be sent: nothing to yield to

    async def _work(self) -> None:
        while True:
            bind = await self._queue.get()
            if self._queue.empty():
                self._no_backlog.set()
            try:
                await self._bind(bind)
            except Exception:
                # A bug in one bind must not stop the worker: the pod is returned to pending.
                log.exception("bind crashed", extra={"pod": f"{bind.namespace}/{bind.name}"})
                self.world.forget_bound(bind.uid)
                self._forget_devices(bind.uid)
                self.progress.settled(bind.uid, failed=True)
            finally:
                self._first_answer.set()
                if bind.uid not in self._timers and bind.uid not in self._parked:
                    self._answered(bind.job)

    def when_answered(self, callback: Callable[[str], None]) -> None:
        """Call `callback` with a bind's gang ("namespace/name") once the bind has its last
        answer: bound, failed for good, or given up (not while it is sent again)."""
        self._on_answered.append(callback)

    def _answered(self, job: str) -> None:
        self._unanswered -= 1
        if self._unanswered == 0:
            self._settled.set()
        for callback in self._on_answered:
            callback(job)

    def _job_of(self, uid: str) -> str:
        task = self.world.tasks.get(uid)
        return task.job if task is not None else ""

    async def _bind(self, bind: Bind) -> None:
        if not self.may_bind():
            self._abandoned(bind)
            return
        start = time.perf_counter()
        try:
            devices = self._claims_written.get(bind.uid)
            if devices is not None:
                await self.devices.write(*devices)
            if bind.claims and bind.uid not in self._volumes_bound:
                for claim in bind.claims:
                    await self._prebind(claim, bind.node)
                self._park(bind)
                return
            # The lease is asked again as each request is written (the gate), not only
            # here: a bind can wait for a connection, a retry or a SIGSTOP past the term.
            await self.client.bind(
                bind.namespace, bind.name, bind.uid, bind.node, gate=self.may_bind
            )
        except Fenced:
            self._abandoned(bind)
            return
        except DeviceClaimFailed as error:
            self.metrics.bind_duration.observe(time.perf_counter() - start)
            self._first_tried.pop(bind.uid, None)
            self._failed(bind, error)
            return
        except (StatusError, TransportError) as error:
            self.metrics.bind_duration.observe(time.perf_counter() - start)
            if not self._retry_later(bind, error):
                self._first_tried.pop(bind.uid, None)
                self._failed(bind, error)
            return
        self._first_tried.pop(bind.uid, None)
        self._volumes_bound.discard(bind.uid)
        self._claims_written.pop(bind.uid, None)
        self.metrics.bind_duration.observe(time.perf_counter() - start)
        self.world.confirm_bound(bind.uid)
        self.progress.settled(bind.uid, bound=True)
        self._bound.inc()
        self._scheduled.inc()
        self.recorder.record(
            _pod_ref(bind),
            "Normal",
            "Scheduled",
            f"Successfully assigned {bind.namespace}/{bind.name} to {bind.node}",
        )

    def _park(self, bind: Bind) -> None:
        # Waiting for the provisioner is not work muster could move.
        self.progress.settled(bind.uid)
        task = asyncio.get_running_loop().create_task(self._await_volumes(bind))
        self._parked[bind.uid] = task

    async def _await_volumes(self, bind: Bind) -> None:
        """Wait for the bind's claims to be bound, then send it; or fail it, saying why."""
        try:
            await self._wait_for_claims(bind)
        except Exception:
            # A bug here must not leave the bind unanswered for ever: the pod is pending again.
            log.exception(
                "waiting for claims crashed", extra={"pod": f"{bind.namespace}/{bind.name}"}
            )
            self._parked.pop(bind.uid, None)
            self._volumes_bound.discard(bind.uid)
            self.world.forget_bound(bind.uid)
            self._forget_devices(bind.uid)
            self._answered(bind.job)

    async def _wait_for_claims(self, bind: Bind) -> None:
        deadline = time.monotonic() + bind.claims_timeout
        problem: str | None = None
        # Claims seen in the cache with this bind's selected-node: our own PreBind patch
        # comes back through the watch, so its absence means "reset" only after that.
        annotated: set[str] = set()
        while True:
            problem = self._claims_unbindable(bind, annotated)
            if problem is not None or self._claims_bound(bind):
                break
            if time.monotonic() >= deadline:
                problem = (
                    f"the claims were not bound within {bind.claims_timeout:g}s "
                    "(no provisioner, or it is slow; predicates' "
                    "volumebinding.bindTimeoutSeconds)"
                )
                break
            if not self.may_bind() or not self._holds_room(bind):
                break  # the lease, the pod or its node went meanwhile: nothing to send
            await asyncio.sleep(VOLUME_POLL)
        self._parked.pop(bind.uid, None)
        if problem is not None:
            self._failed(bind, VolumeBindingFailed(f"binding volumes: {problem}"))
        elif not self.may_bind() or not self._holds_room(bind):
            self._abandoned(bind)
        else:
            self._volumes_bound.add(bind.uid)
            self.progress.sending(bind.uid, bind.job)
            self._enqueue(bind)
            return
        self._answered(bind.job)

    def _claims_bound(self, bind: Bind) -> bool:
        for wanted in bind.claims:
            claim = self.world.claim(wanted.namespace, wanted.claim)
            if claim is None or not claim.spec.volume_name or claim.status.phase != "Bound":
                return False
        return True

    def _claims_unbindable(self, bind: Bind, annotated: set[str]) -> str | None:
        # kube-scheduler's checkBindings: a claim gone, or one to provision whose
        # selected-node the provisioner took off (it could not provision there).
        for wanted in bind.claims:
            claim = self.world.claim(wanted.namespace, wanted.claim)
            name = f"{wanted.namespace}/{wanted.claim}"
            if claim is None or (wanted.claim_uid and claim.metadata.uid != wanted.claim_uid):
                return f"claim {name} was deleted"
            if claim.spec.volume_name or wanted.volume:
                continue
            if (claim.metadata.annotations or {}).get(SELECTED_NODE) == bind.node:
                annotated.add(name)
            elif name in annotated:
                return (
                    f"the provisioner gave claim {name} up on node {bind.node} "
                    f"(its {SELECTED_NODE} annotation was reset)"
                )
        return None

    async def _prebind(self, claim: ClaimBinding, node: str) -> None:
        if not claim.volume:
            path = f"/api/v1/namespaces/{claim.namespace}/persistentvolumeclaims/{claim.claim}"
            selected = {"metadata": {"annotations": {SELECTED_NODE: node}}}
            await self.client.patch(path, selected, gate=self.may_bind)
            return
        body = {
            "metadata": {
                "resourceVersion": claim.volume_resource_version,
                "annotations": {BOUND_BY_CONTROLLER: "yes"},
            },
            "spec": {
                "claimRef": {
                    "kind": "PersistentVolumeClaim",
                    "apiVersion": "v1",
                    "namespace": claim.namespace,
                    "name": claim.claim,
                    "uid": claim.claim_uid,
                }
            },
        }
        await self.client.patch(
            f"/api/v1/persistentvolumes/{claim.volume}", body, gate=self.may_bind
        )

    def _retry_later(self, bind: Bind, error: Exception) -> bool:
        """Send the bind again later, keeping its room, when the failure may pass."""
        passing = isinstance(error, TransportError) or (
            isinstance(error, StatusError) and (is_retryable(error.code) or error.code == 403)
        )
        now = time.monotonic()
        first, tries = self._first_tried.get(bind.uid, (now, 0))
        if not passing or now - first >= RETRY_SECONDS or not self._holds_room(bind):
            return False
        self._first_tried[bind.uid] = (first, tries + 1)
        delay = min(RETRY_MAX, RETRY_BASE * 2**tries)
        self.metrics.binds.labels("retried").inc()
        log.info(
            "bind failed, sending it again in %.1fs: %s",
            delay,
            error,
            extra={"pod": f"{bind.namespace}/{bind.name}", "node": bind.node},
        )
        self._timers[bind.uid] = asyncio.get_running_loop().call_later(
            delay, self._send_again, bind
        )
        return True

    def _holds_room(self, bind: Bind) -> bool:
        # Still ours to send: the pod is counted on that node, which still exists (a pod
        # deleted, or a node removed, meanwhile ends the retries).
        task = self.world.tasks.get(bind.uid)
        return (
            task is not None
            and task.status is TaskStatus.BINDING
            and task.node_name == bind.node
            and bind.node in self.world.live.nodes
        )

    def _send_again(self, bind: Bind) -> None:
        self._timers.pop(bind.uid, None)
        self._enqueue(bind)

    def _enqueue(self, bind: Bind) -> None:
        # Every bind waits for a worker through here: a bind queued is a backlog.
        self._queue.put_nowait(bind)
        self._no_backlog.clear()

    def _forget_devices(self, uid: str) -> None:
        devices = self._claims_written.pop(uid, None)
        if devices is not None:
            self.devices.forget(*devices)

    def _abandoned(self, bind: Bind) -> None:
        # Leadership was lost while this bind waited: another replica decides now, and
        # this pod is pending again in this replica's cache.
        self._volumes_bound.discard(bind.uid)
        self.world.forget_bound(bind.uid)
        self._forget_devices(bind.uid)
        self.progress.settled(bind.uid)
        self.metrics.binds.labels("abandoned").inc()

    def _failed(self, bind: Bind, error: Exception) -> None:
        self._volumes_bound.discard(bind.uid)
        self.world.forget_bound(bind.uid)
        self._forget_devices(bind.uid)
        self.progress.settled(bind.uid, failed=True)
        self.metrics.binds.labels("error").inc()
        self.metrics.schedule_attempts.labels("error").inc()
        if isinstance(error, NotFound):
            return  # the pod is gone; its deletion event follows
        log.warning(
            "bind failed: %s",
            error,
            extra={"pod": f"{bind.namespace}/{bind.name}", "node": bind.node},
        )
        self.recorder.record(
            _pod_ref(bind),
            "Warning",
            "FailedScheduling",
            f"Binding rejected: {error}; the pod returns to the queue",
        )


def _pod_ref(bind: Bind) -> ObjectRef:
    return ObjectRef("Pod", "v1", bind.namespace, bind.name, bind.uid)
