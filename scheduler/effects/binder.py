"""Binder: sends the bindings of committed gangs, in parallel and bounded.

Every pod of one commit is dispatched at once, so a gang's binds reach the API
server together. Before a bind is sent the cache counts the pod on its node
(Binding), so the next session cannot place it again; a bind that fails after
the client's retries returns the pod to pending, with an event, so the next
session places it again: a failed bind is never forgotten.

Before the binding, kube-scheduler's PreBind for the pod's unbound WaitForFirstConsumer
claims: a claim to provision gets `volume.kubernetes.io/selected-node`, a static volume
chosen for a claim gets its claimRef (conditional on the resourceVersion the session saw,
so two binds never take one volume). A failed PreBind fails the bind. Unlike
kube-scheduler, the binder does not wait for the PV controller to finish binding the
claims before binding the pod: the kubelet waits for them to be bound.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from scheduler.cache.world import World
from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.framework.decisions import Bind, ClaimBinding
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import NotFound, StatusError, TransportError
from scheduler.metrics import Metrics

log = logging.getLogger(__name__)

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"


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
    ) -> None:
        self.client = client
        self.world = world
        self.recorder = recorder
        self.metrics = metrics
        self.may_bind = may_bind
        self.concurrency = concurrency
        # A fixed pool of workers on one queue: a 10,000-pod backlog costs no
        # 10,000 task objects, and the members of one gang leave together, in order.
        self._queue: asyncio.Queue[Bind] = asyncio.Queue()
        self._workers: list[asyncio.Task[None]] = []
        self._unanswered = 0
        self._settled = asyncio.Event()
        self._settled.set()

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
            self._queue.put_nowait(bind)
        self._unanswered += len(binds)
        self._settled.clear()

    async def drain(self) -> None:
        """Wait until every bind dispatched has its answer."""
        await self._settled.wait()

    async def close(self) -> None:
        """Stop the workers (after drain, on shutdown)."""
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []

    async def _work(self) -> None:
        while True:
            bind = await self._queue.get()
            try:
                await self._bind(bind)
            except Exception:
                # A bug in one bind must not stop the worker: the pod is returned to pending.
                log.exception("bind crashed", extra={"pod": f"{bind.namespace}/{bind.name}"})
                self.world.forget_bound(bind.uid)
            finally:
                self._unanswered -= 1
                if self._unanswered == 0:
                    self._settled.set()

    async def _bind(self, bind: Bind) -> None:
        if not self.may_bind():
            # Leadership was lost while this bind waited: another replica decides now.
            self.world.forget_bound(bind.uid)
            self.metrics.binds.labels("abandoned").inc()
            return
        start = time.perf_counter()
        try:
            for claim in bind.claims:
                await self._prebind(claim, bind.node)
            await self.client.bind(bind.namespace, bind.name, bind.uid, bind.node)
        except (StatusError, TransportError) as error:
            self.metrics.bind_duration.observe(time.perf_counter() - start)
            self._failed(bind, error)
            return
        self.metrics.bind_duration.observe(time.perf_counter() - start)
        self.world.confirm_bound(bind.uid)
        self.metrics.binds.labels("success").inc()
        self.metrics.schedule_attempts.labels("scheduled").inc()
        self.recorder.record(
            _pod_ref(bind),
            "Normal",
            "Scheduled",
            f"Successfully assigned {bind.namespace}/{bind.name} to {bind.node}",
        )

    async def _prebind(self, claim: ClaimBinding, node: str) -> None:
        if not claim.volume:
            path = f"/api/v1/namespaces/{claim.namespace}/persistentvolumeclaims/{claim.claim}"
            await self.client.patch(path, {"metadata": {"annotations": {SELECTED_NODE: node}}})
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
        await self.client.patch(f"/api/v1/persistentvolumes/{claim.volume}", body)

    def _failed(self, bind: Bind, error: Exception) -> None:
        self.world.forget_bound(bind.uid)
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
