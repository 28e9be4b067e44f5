"""ScaleUpWriter: the ProvisioningRequests, PodTemplates and pod annotations that sessions
decide (framework/scaleup.py), written in the background.

A request is created as Kueue creates its own: its PodTemplates first, owned by the
PodGroup (an autoscaler that reads the request before a template exists fails it), then
the request, owned by the PodGroup, then each template's owner is made the request, so
deleting the request deletes its templates. Every step may have happened before (a
session decides again until the watch shows the result, a leader may have died half-way):
an object that exists already (409) is taken as written, one that is gone (404) as
deleted. What cannot be written is said in a Warning event on the PodGroup
(ScaleUpRequestFailed), naming the object and the API server's answer; the next session
decides again.

The same write decided by consecutive sessions while the first is in flight is sent once;
one that failed is not sent again for RETRY_AFTER_FAILURE seconds (a missing CRD must not
cost a failed request and a log line every period).
A pod's PodScheduled=False goes after its consume-provisioning-request annotation (the
`then` of `annotate`): cluster-autoscaler scales up for a pod it sees unschedulable and not
annotated, one pod at a time, which is what asking for the whole gang is to prevent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

import msgspec

from scheduler.api import paths, provisioning
from scheduler.api.names import GROUP, VERSION
from scheduler.api.provisioning import (
    ATTEMPT_LABEL,
    CLASS_ANNOTATION,
    CONSUME_ANNOTATION,
    MANAGED_BY,
    MANAGED_BY_LABEL,
)
from scheduler.api.reasons import SCALE_UP_WRITE_FAILED
from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.framework.decisions import (
    AnnotatePod,
    CreateProvisioningRequest,
    DeleteProvisioningRequest,
)
from scheduler.kube.client import JSON, MERGE_PATCH, KubeClient
from scheduler.kube.errors import Conflict, Fenced, NotFound, StatusError, TransportError

log = logging.getLogger(__name__)

_PODGROUP_API_VERSION = f"{GROUP}/{VERSION}"
# How long a write that failed is not sent again, however often sessions decide it.
RETRY_AFTER_FAILURE = 30.0


class _Meta(msgspec.Struct):
    uid: str = ""


class _Created(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


_created = msgspec.json.Decoder(_Created)


def request_path(namespace: str, name: str = "") -> str:
    """A ProvisioningRequest's path (its namespace's collection when `name` is "")."""
    base = f"/apis/{provisioning.API_VERSION}/namespaces/{namespace}/{provisioning.PLURAL}"
    return f"{base}/{name}" if name else base


def template_path(namespace: str, name: str = "") -> str:
    """A PodTemplate's path (its namespace's collection when `name` is "")."""
    base = f"/api/v1/namespaces/{namespace}/podtemplates"
    return f"{base}/{name}" if name else base


class ScaleUpWriter:
    """Creates and deletes ProvisioningRequests and annotates pods, in the background."""

    def __init__(
        self,
        client: KubeClient,
        recorder: EventRecorder,
        *,
        may_write: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.may_write = may_write
        self.clock = clock
        # Writes that failed, by what they write: not sent again before this time.
        self._resting: dict[tuple[str, ...], float] = {}
        # Writes in flight by what they write, and what runs once each is done.
        self._running: dict[tuple[str, ...], asyncio.Task[None]] = {}
        self._then: dict[tuple[str, ...], list[Callable[[], None]]] = {}

    @property
    def in_flight(self) -> int:
        """Writes sent and not yet answered."""
        return len(self._running)

    def create(self, decision: CreateProvisioningRequest) -> None:
        """Create a request and its templates (unless that is under way)."""
        key = ("create", decision.namespace, decision.name)
        self._start(key, lambda: self._create(decision))

    def delete(self, decision: DeleteProvisioningRequest) -> None:
        """Delete a request and its templates (unless that is under way)."""
        key = ("delete", decision.namespace, decision.name)
        self._start(key, lambda: self._delete(decision))

    def annotate(self, decision: AnnotatePod, then: Callable[[], None] | None = None) -> None:
        """Set (or remove) a pod's annotations; `then` runs once that is done or failed."""
        key = ("annotate", decision.uid, decision.request)
        if then is not None:
            self._then.setdefault(key, []).append(then)
        self._start(key, lambda: self._annotate(decision))

    async def drain(self) -> None:
        """Wait for every write in flight."""
        while self._running:
            await asyncio.gather(*self._running.values(), return_exceptions=True)

    def _start(self, key: tuple[str, ...], write: Callable[[], Coroutine[Any, Any, bool]]) -> None:
        if key in self._running:
            return
        if self._resting.get(key, 0.0) > self.clock():
            # Failed lately: what waits for it goes on without it.
            for then in self._then.pop(key, []):
                then()
            return
        self._resting.pop(key, None)
        task = asyncio.get_running_loop().create_task(self._run(key, write))
        self._running[key] = task
        task.add_done_callback(lambda _: self._finished(key))

    async def _run(
        self, key: tuple[str, ...], write: Callable[[], Coroutine[Any, Any, bool]]
    ) -> None:
        if not await write():
            self._resting[key] = self.clock() + RETRY_AFTER_FAILURE

    def _finished(self, key: tuple[str, ...]) -> None:
        self._running.pop(key, None)
        for then in self._then.pop(key, []):
            then()

    # The writes ------------------------------------------------------------------
    async def _create(self, decision: CreateProvisioningRequest) -> bool:
        namespace = decision.namespace
        podgroup = _owner(
            decision.podgroup_api_version or _PODGROUP_API_VERSION,
            "PodGroup",
            decision.podgroup,
            decision.podgroup_uid,
        )
        labels = {MANAGED_BY_LABEL: MANAGED_BY}
        try:
            for pod_set in decision.pod_sets:
                template = {
                    "apiVersion": "v1",
                    "kind": "PodTemplate",
                    "metadata": {
                        "name": pod_set.name,
                        "labels": labels,
                        "ownerReferences": [podgroup],
                    },
                    "template": pod_set.template,
                }
                await self._create_once(template_path(namespace), template)
            spec: dict[str, Any] = {
                "provisioningClassName": decision.class_name,
                "podSets": [
                    {"podTemplateRef": {"name": p.name}, "count": p.count}
                    for p in decision.pod_sets
                ],
            }
            if decision.parameters:
                spec["parameters"] = dict(decision.parameters)
            body = {
                "apiVersion": provisioning.API_VERSION,
                "kind": provisioning.KIND,
                "metadata": {
                    "name": decision.name,
                    "labels": {**labels, ATTEMPT_LABEL: str(decision.attempt)},
                    "ownerReferences": [podgroup],
                },
                "spec": spec,
            }
            uid = await self._create_once(request_path(namespace), body, decision.name)
            owner = _owner(provisioning.API_VERSION, provisioning.KIND, decision.name, uid)
            for pod_set in decision.pod_sets:
                await self._write(
                    "PATCH",
                    template_path(namespace, pod_set.name),
                    {"metadata": {"ownerReferences": [owner]}},
                )
            log.info(
                "asked for room for %d pods: ProvisioningRequest %s/%s",
                sum(p.count for p in decision.pod_sets),
                namespace,
                decision.name,
                extra={"podgroup": f"{namespace}/{decision.podgroup}"},
            )
        except (StatusError, TransportError) as error:
            self._failed(
                decision.namespace,
                decision.podgroup,
                decision.podgroup_api_version,
                f"creating {decision.name}",
                error,
            )
            return False
        except Fenced:
            pass  # the lease was lost: the next leader decides again
        return True

    async def _create_once(self, collection: str, body: Any, name: str = "") -> str:
        """POST; an object of that name that exists already counts as created. The uid of
        the object (read back when it existed)."""
        try:
            return _created.decode(await self._write("POST", collection, body)).metadata.uid
        except Conflict:
            if not name:
                return ""
            return _created.decode(await self._write("GET", f"{collection}/{name}")).metadata.uid

    async def _delete(self, decision: DeleteProvisioningRequest) -> bool:
        namespace = decision.namespace
        try:
            await self._delete_once(request_path(namespace, decision.name))
            for template in decision.templates:
                await self._delete_once(template_path(namespace, template))
            log.info(
                "deleted ProvisioningRequest %s/%s: %s",
                namespace,
                decision.name,
                decision.reason,
                extra={"podgroup": f"{namespace}/{decision.podgroup}"},
            )
        except (StatusError, TransportError) as error:
            self._failed(
                namespace,
                decision.podgroup,
                decision.podgroup_api_version,
                f"deleting {decision.name}",
                error,
            )
            return False
        except Fenced:
            pass
        return True

    async def _delete_once(self, path: str) -> None:
        with contextlib.suppress(NotFound):
            await self._write("DELETE", path)

    async def _annotate(self, decision: AnnotatePod) -> bool:
        value = decision.request or None
        annotations = {
            CONSUME_ANNOTATION: value,
            CLASS_ANNOTATION: decision.class_name if value is not None else None,
        }
        try:
            await self._write(
                "PATCH",
                paths.pod(decision.namespace, decision.name),
                {"metadata": {"annotations": annotations}},
            )
        except NotFound:
            pass  # the pod is gone
        except (StatusError, TransportError) as error:
            log.warning(
                "annotating pod %s/%s for %s failed: %s",
                decision.namespace,
                decision.name,
                decision.request or "no request",
                error,
                extra={"podgroup": decision.job},
            )
            return False
        except Fenced:
            pass
        return True

    async def _write(self, method: str, path: str, body: Any = None) -> bytes:
        content_type = MERGE_PATCH if method == "PATCH" else JSON
        return await self.client.request(
            method, path, body=body, content_type=content_type, gate=self.may_write
        )

    def _failed(
        self, namespace: str, podgroup: str, api_version: str, what: str, error: Exception
    ) -> None:
        hint = ""
        if isinstance(error, NotFound) and provisioning.PLURAL in str(error):
            hint = (
                f"; the API server does not serve {provisioning.API_VERSION} "
                f"{provisioning.PLURAL}: install cluster-autoscaler's ProvisioningRequest CRD "
                "(or crds/provisioningrequest.yaml)"
            )
        elif isinstance(error, StatusError) and error.code == 403:
            hint = "; the scheduler's ServiceAccount lacks the RBAC of deploy/ for it"
        message = f"{what} failed: {error}{hint}"
        log.warning(message, extra={"podgroup": f"{namespace}/{podgroup}"})
        self.recorder.record(
            ObjectRef("PodGroup", api_version or _PODGROUP_API_VERSION, namespace, podgroup),
            "Warning",
            SCALE_UP_WRITE_FAILED,
            message,
        )


def _owner(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}
