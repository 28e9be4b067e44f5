"""StatusWriter: PodGroup and Queue status, pod PodScheduled conditions, and their events.

Each is written only when it differs from what this process last wrote (or
what the cache saw), so a steady cluster costs no writes; the writes go out
in the background, a bounded number at a time, and only the newest of each
object waits its turn (effects/lanes.py). While binds wait to be sent, the writes
wait too (up to HOLD_SECONDS), so that a gang placed, bound and started in one burst
gets one status write rather than one per step. A PodGroup status waiting its turn is
written only if the PodGroup is still muster's when its turn comes (cache/ownership.py):
another scheduler's pods may have arrived meanwhile. A 404 on a PodGroup or Queue is not
taken as "gone": a restarting API server answers 404 on custom resources until their CRDs
are served again, so the write is tried again by the next session, and the cache's delete
event, when the object is truly gone, ends the retries.

Every write is the leader's: it asks the leader's fence (effects/fence.py) once it has its
connection, so a write that waited in a lane while this replica lost its lease is not sent
(counted as `fenced`), and the replica writes it again should it lead again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection
from functools import partial
from typing import Any

from scheduler.api import paths
from scheduler.api.hypernode import API_VERSION as HYPERNODE_API_VERSION
from scheduler.api.names import ALLOCATED_HYPERNODE_ANNOTATION, GROUP, VERSION
from scheduler.api.native import GROUP as NATIVE_GROUP
from scheduler.api.native import SCHEDULED_CONDITION
from scheduler.api.reasons import (
    FIELD_NOT_HONOURED,
    INVALID_OBJECT,
    NOT_HONOURED_REASON,
    NOT_HONOURED_TYPE,
    SCHEDULED,
    UNSCHEDULABLE,
)
from scheduler.effects.lanes import KeyedLane
from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.framework.decisions import (
    FieldNotHonoured,
    GroupCondition,
    HyperNodeStatusUpdate,
    InvalidObjectReport,
    NativeObjectReport,
    NativeStatusUpdate,
    PodGroupStatusUpdate,
    PodUnschedulable,
    QueueStatusUpdate,
)
from scheduler.kube.client import STRATEGIC_MERGE_PATCH, KubeClient
from scheduler.kube.clock import now_rfc3339
from scheduler.kube.errors import Fenced, NotFound, StatusError, TransportError

log = logging.getLogger(__name__)

_API_VERSION = f"{GROUP}/{VERSION}"
# The apiVersion of each kind whose objects get events, but core's "v1".
_API_VERSIONS = {
    "PodGroup": _API_VERSION,
    "Queue": _API_VERSION,
    "HyperNode": HYPERNODE_API_VERSION,
}
# How long at most a status write waits for the binds queued before it (yield_to): a
# PodGroup's phase shows at most this late while a burst of binds goes out.
HOLD_SECONDS = 10.0


class StatusWriter:
    """Writes what sessions conclude about objects."""

    def __init__(
        self,
        client: KubeClient,
        recorder: EventRecorder,
        concurrency: int = 16,
        *,
        is_ours: Callable[[str], bool] = lambda key: True,
        on_written: Callable[[str, str], None] = lambda kind, result: None,
        is_pending: Callable[[str], bool] = lambda uid: True,
        on_unwritten: Callable[[], None] = lambda: None,
        fence: Callable[[], bool] | None = None,
    ) -> None:
        self.client = client
        # Asked as each write is sent (effects/fence.py); None: always open.
        self.fence = fence
        self.recorder = recorder
        # Whether the PodGroup of a gang key is still muster's (World.owns).
        self.is_ours = is_ours
        # Each write's kind (podgroup, queue, pod) and result (success, error, fenced), for
        # metrics.
        self.on_written = on_written
        # Whether the pod (uid) still waits for a node (World.is_pending): a condition queued
        # behind a backlog is not written once its pod has been bound meanwhile.
        self.is_pending = is_pending
        # A write was not done: ask for a session to make it again (World.status_unwritten),
        # rather than wait for something else to change.
        self.on_unwritten = on_unwritten
        # Two lanes: PodGroup and Queue status (what operators and clients such as
        # Kubeflow wait on) never queue behind a backlog of pods' PodScheduled conditions
        # (thousands of them when a new leader takes over a full queue).
        self._group_lane = KeyedLane(concurrency)
        self._pod_lane = KeyedLane(concurrency)
        # By gang key (a Volcano PodGroup's and a native one's of one name differ).
        self._podgroups: dict[str, PodGroupStatusUpdate] = {}
        # Pods' PodScheduled condition as last queued: (reason, message).
        self._pods: dict[str, tuple[str, str]] = {}
        self._queues: dict[str, dict[str, Any]] = {}
        # Not-honoured warnings already recorded: each goes out once per process.
        self._warned: set[tuple[str, str, str, str]] = set()
        # Pods already warned that a field of theirs is not honoured (by uid).
        self._field_warned: set[str] = set()
        # HyperNodes' status.nodeCount as last queued.
        self._hypernodes: dict[str, int] = {}

    def yield_to(self, waiting: Callable[[], bool], cleared: Callable[[], Awaitable[None]]) -> None:
        """Hold writes while `waiting()` (binds wait to be sent), until `cleared()` returns
        or HOLD_SECONDS after the object was queued; a newer status replaces a held one."""
        for lane in (self._group_lane, self._pod_lane):
            lane.yield_to(waiting, cleared, HOLD_SECONDS)

    def waiting(self) -> dict[str, int]:
        """Writes waiting for their turn, by lane ("podgroup": PodGroups and Queues)."""
        return {"podgroup": self._group_lane.backlog, "pod": self._pod_lane.backlog}

    async def drain(self) -> None:
        """Wait for the writes queued and in flight."""
        await self._group_lane.drain()
        await self._pod_lane.drain()

    def podgroups(self, updates: list[PodGroupStatusUpdate]) -> None:
        """Write PodGroup statuses that changed, with an event when the verdict changes."""
        for update in updates:
            key = update.key
            previous = self._podgroups.get(key)
            if previous == update:
                continue
            self._podgroups[key] = update
            urgent = previous is None or _verdict(previous) != _verdict(update)
            self._group_lane.put(key, partial(self._write_podgroup, update), urgent=urgent)
            self._podgroup_event(update, previous)

    def hypernodes(self, updates: list[HyperNodeStatusUpdate]) -> None:
        """Write HyperNodes' status.nodeCount that changed (once per value)."""
        for update in updates:
            if self._hypernodes.get(update.name) == update.node_count:
                continue
            self._hypernodes[update.name] = update.node_count
            self._group_lane.put(
                ("HyperNode", update.name), partial(self._write_hypernode, update), urgent=False
            )

    async def _write_hypernode(self, update: HyperNodeStatusUpdate) -> None:
        body = {"status": {"nodeCount": update.node_count}}
        if not await self._patch(
            paths.hypernode_status(update.name), body, "hypernode", gone_is_done=False
        ):
            self._hypernodes.pop(update.name, None)

    def pods(self, messages: list[PodUnschedulable]) -> None:
        """Set PodScheduled=False on pods that stay pending, with a FailedScheduling event."""
        for message in messages:
            previous = self._pods.get(message.uid)
            if previous == (message.reason, message.message):
                continue
            self._pods[message.uid] = (message.reason, message.message)
            urgent = previous is None or previous[0] != message.reason
            self._pod_lane.put(message.uid, partial(self._write_pod, message), urgent=urgent)
            if message.reason == "Unschedulable":
                self.recorder.record(
                    ObjectRef("Pod", "v1", message.namespace, message.name, message.uid),
                    "Warning",
                    "FailedScheduling",
                    message.message,
                )

    def pod_placed(self, uid: str) -> None:
        """Forget what was written for a pod that got a node (its message may come back)."""
        self._pods.pop(uid, None)

    def forget_gone(self, podgroups: Collection[str], pods: Collection[str]) -> None:
        """Drop what was written for PodGroups (gang keys) and pods (uids) that no longer
        exist: a scheduler running for weeks must not keep every object it ever saw."""
        self._podgroups = {
            key: update for key, update in self._podgroups.items() if key in podgroups
        }
        self._pods = {uid: written for uid, written in self._pods.items() if uid in pods}
        self._field_warned = {uid for uid in self._field_warned if uid in pods}
        self._warned = {key for key in self._warned if key[0] != "PodGroup" or key[1] in podgroups}

    def queues(self, updates: list[QueueStatusUpdate]) -> None:
        """Write queue figures that changed."""
        for update in updates:
            allocated: dict[str, str | None] = dict(update.allocated.to_list())
            previous = self._queues.get(update.name)
            # A merge patch only adds keys: a resource no longer allocated is set to null.
            stale = set(update.observed_allocated)
            if previous is not None:
                stale |= set(previous["allocated"])
            for key in stale - set(allocated):
                allocated[key] = None
            status: dict[str, Any] = {
                "allocated": allocated,
                **{phase: count for phase, count in update.podgroups.items()},
            }
            if previous == status:
                continue
            self._queues[update.name] = status
            self._group_lane.put(
                ("Queue", update.name),
                partial(self._write_queue, update.name, status),
            )

    def invalid(self, reports: list[InvalidObjectReport]) -> None:
        """A Warning event on each object muster cannot use (deduplicated by the recorder),
        or uses without honouring a field (once per process: the field stays as written)."""
        for report in reports:
            if report.reason != INVALID_OBJECT:
                key = (report.kind, report.name, report.reason, report.message)
                if key in self._warned:
                    continue
                self._warned.add(key)
            namespace, _, name = report.name.rpartition("/")
            kind, api_version = report.kind, _API_VERSIONS.get(report.kind, "v1")
            if isinstance(report, NativeObjectReport):
                kind, api_version = "PodGroup", f"{NATIVE_GROUP}/{report.version}"
            self.recorder.record(
                ObjectRef(kind, api_version, namespace, name),
                "Warning",
                report.reason,
                report.message,
            )

    def field_warnings(self, warnings: list[FieldNotHonoured]) -> None:
        """A Warning event FieldNotHonoured on each pod placed without honouring a field of
        its spec, once per pod for the life of the process."""
        for warning in warnings:
            if warning.uid in self._field_warned:
                continue
            self._field_warned.add(warning.uid)
            self.recorder.record(
                ObjectRef("Pod", "v1", warning.namespace, warning.name, warning.uid),
                "Warning",
                FIELD_NOT_HONOURED,
                warning.message,
            )

    # Internals -------------------------------------------------------------
    async def _write_queue(self, name: str, status: dict[str, Any]) -> None:
        path = paths.queue(name) + "/status"
        if not await self._patch(path, {"status": status}, "queue", gone_is_done=False):
            # Not written: let the next session try again.
            self._queues.pop(name, None)
            self.on_unwritten()

    async def _write_podgroup(self, update: PodGroupStatusUpdate) -> None:
        if not self.is_ours(update.key):
            # Another scheduler's now (or gone): its status is not ours to write.
            self._podgroups.pop(update.key, None)
            return
        if isinstance(update, NativeStatusUpdate):
            await self._write_native(update)
            return
        stamp = now_rfc3339()
        status = {
            "phase": update.phase.value,
            "running": update.running,
            "succeeded": update.succeeded,
            "failed": update.failed,
            "conditions": [_condition(c, stamp) for c in update.conditions],
        }
        # Volcano's PodGroup has no status subresource: status goes with the object, and
        # with it the HyperNode a topology gang was placed in (Volcano's annotation).
        body: dict[str, Any] = {"status": status}
        if update.allocated_hypernode:
            body["metadata"] = {
                "annotations": {ALLOCATED_HYPERNODE_ANNOTATION: update.allocated_hypernode}
            }
        path = paths.podgroup(update.namespace, update.name)
        if not await self._patch(path, body, "podgroup", gone_is_done=False):
            # Not written: let the next session try again.
            self._podgroups.pop(update.key, None)
            self.on_unwritten()

    async def _write_native(self, update: NativeStatusUpdate) -> None:
        """A native PodGroup's conditions, as kube-scheduler writes them: a strategic merge
        patch of podgroups/status (conditions is a list keyed by type), which leaves the
        conditions and claim statuses others write alone; muster's own conditions it no
        longer wants are deleted by key."""
        stamp = now_rfc3339()
        conditions: list[dict[str, Any]] = [_condition(c, stamp) for c in update.conditions]
        conditions += [{"type": kind, "$patch": "delete"} for kind in update.removed]
        body = {"status": {"conditions": conditions}}
        path = paths.native_podgroup_status(update.namespace, update.name, update.version)
        if not await self._patch(path, body, "podgroup", STRATEGIC_MERGE_PATCH, gone_is_done=False):
            self._podgroups.pop(update.key, None)
            self.on_unwritten()

    async def _write_pod(self, message: PodUnschedulable) -> None:
        if not self.is_pending(message.uid):
            self._pods.pop(message.uid, None)
            return
        body = {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": message.reason,
                        "message": message.message,
                        "lastTransitionTime": now_rfc3339(),
                    }
                ]
            }
        }
        path = paths.pod(message.namespace, message.name) + "/status"
        if not await self._patch(path, body, "pod", STRATEGIC_MERGE_PATCH):
            self._pods.pop(message.uid, None)
            self.on_unwritten()

    async def _patch(
        self,
        path: str,
        body: dict[str, Any],
        kind: str,
        content_type: str = "application/merge-patch+json",
        *,
        gone_is_done: bool = True,
    ) -> bool:
        """Whether the write is done. `gone_is_done`: a 404 means the object is gone (a
        pod), not a custom resource whose CRD a restarting API server does not serve yet."""
        try:
            await self.client.patch(path, body, content_type=content_type, gate=self.fence)
        except Fenced:
            # The lease went while the write waited: not sent, and forgotten (by the caller)
            # so that this replica writes it again if it leads again.
            self.on_written(kind, "fenced")
            return False
        except NotFound as error:
            if not gone_is_done:
                log.info("status write not done, tried again later: %s", error)
                self.on_written(kind, "error")
            return gone_is_done
        except (StatusError, TransportError) as error:
            log.warning("status write failed: %s", error)
            self.on_written(kind, "error")
            return False
        self.on_written(kind, "success")
        return True

    def _podgroup_event(
        self, update: PodGroupStatusUpdate, previous: PodGroupStatusUpdate | None
    ) -> None:
        native = isinstance(update, NativeStatusUpdate)
        api_version = _API_VERSION
        scheduled = SCHEDULED
        if isinstance(update, NativeStatusUpdate):
            api_version = f"{NATIVE_GROUP}/{update.version}"
            scheduled = SCHEDULED_CONDITION.get(update.version, SCHEDULED)
        ref = ObjectRef("PodGroup", api_version, update.namespace, update.name, update.uid)
        for condition in update.conditions:
            old = (
                next((c for c in previous.conditions if c.type == condition.type), None)
                if previous
                else None
            )
            if old == condition:
                continue
            if native and condition.type == scheduled and condition.status == "False":
                # A native PodGroup waits (kube-scheduler's condition is never True twice).
                self.recorder.record(ref, "Warning", condition.reason, condition.message)
            if condition.status != "True":
                continue
            if condition.type == UNSCHEDULABLE:
                self.recorder.record(ref, "Warning", "Unschedulable", condition.message)
            elif condition.type == scheduled:
                self.recorder.record(ref, "Normal", "Scheduled", condition.message)
            elif condition.type == NOT_HONOURED_TYPE:
                # Never silence: the event says which field is ignored and what muster does.
                self.recorder.record(ref, "Warning", NOT_HONOURED_REASON, condition.message)


def _condition(condition: GroupCondition, stamp: str) -> dict[str, str]:
    """A PodGroup condition as written. An empty message is left out, which reads back the
    same (the field is optional): kube-apiserver before 1.20 turns an empty string in a
    merge patch of a custom resource into null and then refuses it as not a string."""
    written = {
        "type": condition.type,
        "status": condition.status,
        "reason": condition.reason,
        "lastTransitionTime": condition.last_transition_time or stamp,
    }
    if condition.message:
        written["message"] = condition.message
    return written


def _verdict(update: PodGroupStatusUpdate) -> tuple[object, ...]:
    """What of a PodGroup status is its verdict: a change here is written at once, a change
    of messages alone at most once a refresh (effects/lanes.py)."""
    return (
        update.phase,
        update.running,
        update.succeeded,
        update.failed,
        tuple((c.type, c.status, c.reason) for c in update.conditions),
    )
