"""The reads and writes the controller makes, behind a small protocol that tests fake.

Handlers never talk HTTP themselves: they ask a `ClusterObjects` for a pod's
owner, a namespace's default queue, or to create a PodGroup, and it answers
through the scheduler's `KubeClient` (plain requests on the official client's
authentication, retried on 429, 5xx and dropped connections).

Every request made here has its grant in deploy/base/controller/rbac.yaml, and
tests/manifests/test_rbac.py lists them by method: a new request needs both.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

from scheduler.api import paths
from scheduler.api.errors import ApiError
from scheduler.api.names import QUEUE_NAME_ANNOTATION
from scheduler.api.native import GROUP as NATIVE_GROUP
from scheduler.api.native import PODGROUPS as NATIVE_PODGROUPS
from scheduler.api.native import VERSIONS as NATIVE_VERSIONS
from scheduler.api.native import WORKLOADS as NATIVE_WORKLOADS
from scheduler.effects.queues import create_queue_if_missing
from scheduler.effects.recorder import event_name
from scheduler.kube.client import KubeClient
from scheduler.kube.clock import now_rfc3339
from scheduler.kube.discovery import served_version
from scheduler.kube.errors import Conflict, NotFound, StatusError

log = logging.getLogger(__name__)

Obj = dict[str, Any]

# Where the controller's grants live; named in messages about a missing one.
RBAC_FILE = "deploy/base/controller/rbac.yaml"
CLUSTER_ROLE = "muster-controller"
# kopf's peering object, in the CRD that deploy/base/controller/peering.yaml installs.
PEERING_PATH = "/apis/kopf.dev/v1/clusterkopfpeerings"
# The component the controller's events name.
COMPONENT = "muster-controller"
# How long an owner's or a namespace's read is reused: a gang's pods arrive together and
# share them, and a scale change is followed through the owner's watch (follow.py) anyway.
READ_TTL = 2.0
# How long the version of Kubernetes' own gang API found by discovery is reused.
VERSION_TTL = 60.0

T = TypeVar("T")


class RecentReads(Generic[T]):
    """Reads of the last READ_TTL seconds, by key: concurrent reads of one key share one
    request, and a failed read is not kept."""

    def __init__(self, ttl: float = READ_TTL, limit: int = 10_000) -> None:
        self.ttl = ttl
        self.limit = limit
        self._reads: dict[str, tuple[float, asyncio.Future[T]]] = {}

    async def get(self, key: str, read: Callable[[], Awaitable[T]]) -> T:
        """The recent read of `key`, or a new one."""
        now = asyncio.get_running_loop().time()
        cached = self._reads.get(key)
        if cached is not None and now - cached[0] < self.ttl:
            return await asyncio.shield(cached[1])
        if len(self._reads) >= self.limit:
            self._reads = {k: v for k, v in self._reads.items() if now - v[0] < self.ttl}
        future = asyncio.ensure_future(read())
        self._reads[key] = (now, future)
        try:
            return await asyncio.shield(future)
        except BaseException:
            if self._reads.get(key, (0.0, None))[1] is future:
                del self._reads[key]
            raise


class OwnerForbidden(ApiError):
    """403 on reading a pod's owner: the controller's ClusterRole does not grant its kind.

    Owners are read kind by kind (no wildcard in the ClusterRole), so an owner of a
    kind nobody listed is refused; the message names the rule that would allow it.
    """

    def __init__(self, kind: str, name: str, group: str, resource: str) -> None:
        self.kind = kind
        self.name = name
        self.group = group
        self.resource = resource
        self.rule = f'{{apiGroups: ["{group}"], resources: [{resource}], verbs: [get]}}'
        granted = f"{resource}.{group}" if group else resource
        super().__init__(
            f"{kind} {name} cannot be read: the ClusterRole {CLUSTER_ROLE} grants no get on"
            f" {granted}; add the rule {self.rule} to it ({RBAC_FILE}) so that its"
            " gang rule is read (docs/workloads.md)"
        )


class ClusterObjects(Protocol):
    """What the handlers need from the API server."""

    async def owner(self, namespace: str, reference: Obj) -> Obj | None:
        """The object an ownerReference points to, or None when it is gone or unknown.

        Raises OwnerForbidden when RBAC does not let the controller read that kind.
        """

    async def namespace_queue(self, namespace: str) -> str:
        """The namespace's `scheduling.volcano.sh/queue-name` annotation ("" when none)."""

    async def exists(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        """Whether the object exists (a kind the server does not serve: False)."""

    async def create_podgroup(self, namespace: str, body: Obj) -> bool:
        """Create a PodGroup; False when one of that name already exists."""

    async def patch_podgroup(self, namespace: str, name: str, patch: Obj) -> None:
        """Merge-patch a PodGroup (one that is gone is no error)."""

    async def annotate_pod(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        """Merge annotations into a pod's metadata (a pod that is gone is no error)."""

    async def native_podgroup(self, namespace: str, name: str) -> Obj | None:
        """A native PodGroup (podgroups.scheduling.k8s.io, at the version served), or None
        when it does not exist or the API is not served."""

    async def native_workload(self, namespace: str, name: str) -> Obj | None:
        """A native Workload, or None (as native_podgroup)."""

    async def native_podgroups_in(self, namespace: str) -> list[Obj]:
        """Every native PodGroup of a namespace (none when the API is not served)."""

    async def annotate_native_podgroup(
        self, namespace: str, name: str, annotations: dict[str, str]
    ) -> None:
        """Merge annotations into a native PodGroup's metadata (gone: no error)."""

    async def warn(self, pod: Obj, reason: str, message: str) -> None:
        """A Warning event on the pod, once per pod and reason."""

    async def set_queue_state(self, name: str, state: str) -> None:
        """Write a Queue's status.state."""

    async def ensure_queue(self, name: str) -> None:
        """Create the Queue (weight 1, reclaimable) if it does not exist."""

    async def ensure_peering(self, name: str) -> None:
        """Create kopf's ClusterKopfPeering if its CRD is installed and it does not exist."""


class ApiObjects:
    """ClusterObjects over the API server."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        # (apiVersion, kind) -> (path prefix, plural, namespaced), from discovery
        self._resources: dict[tuple[str, str], tuple[str, str, bool]] = {}
        self._owners: RecentReads[Obj | None] = RecentReads()
        self._namespaces: RecentReads[str] = RecentReads()
        self._versions: RecentReads[str] = RecentReads(ttl=VERSION_TTL)
        self._native_lists: RecentReads[list[Obj]] = RecentReads()

    async def owner(self, namespace: str, reference: Obj) -> Obj | None:
        uid = str(reference.get("uid", ""))
        return await self._owners.get(uid, lambda: self._read_owner(namespace, reference))

    async def _read_owner(self, namespace: str, reference: Obj) -> Obj | None:
        api_version = str(reference.get("apiVersion", ""))
        kind = str(reference.get("kind", ""))
        resource = await self._resource(api_version, kind)
        if resource is None:
            return None
        prefix, plural, namespaced = resource
        scope = f"/namespaces/{namespace}" if namespaced else ""
        try:
            found: Obj = await self.client.get_json(
                f"{prefix}{scope}/{plural}/{reference.get('name', '')}"
            )
        except NotFound:
            return None
        except StatusError as error:
            if error.code != 403:
                raise
            name = str(reference.get("name", ""))
            shown = f"{namespace}/{name}" if namespaced else name
            group = api_version.rpartition("/")[0]
            raise OwnerForbidden(kind, shown, group, plural) from None
        # A new object under the old name is another owner, not ours.
        if found.get("metadata", {}).get("uid") != reference.get("uid"):
            return None
        return found

    async def namespace_queue(self, namespace: str) -> str:
        return await self._namespaces.get(namespace, lambda: self._read_queue(namespace))

    async def _read_queue(self, namespace: str) -> str:
        try:
            found = await self.client.get_json(f"/api/v1/namespaces/{namespace}")
        except NotFound:
            return ""
        annotations = (found.get("metadata") or {}).get("annotations") or {}
        return str(annotations.get(QUEUE_NAME_ANNOTATION, ""))

    async def exists(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        resource = await self._resource(api_version, kind)
        if resource is None:
            return False
        prefix, plural, namespaced = resource
        scope = f"/namespaces/{namespace}" if namespaced else ""
        try:
            await self.client.get_json(f"{prefix}{scope}/{plural}/{name}")
        except NotFound:
            return False
        return True

    async def create_podgroup(self, namespace: str, body: Obj) -> bool:
        try:
            await self.client.create(f"{paths.GROUP_PATH}/namespaces/{namespace}/podgroups", body)
        except Conflict:
            return False
        return True

    async def patch_podgroup(self, namespace: str, name: str, patch: Obj) -> None:
        with contextlib.suppress(NotFound):
            await self.client.patch(paths.podgroup(namespace, name), patch)

    async def warn(self, pod: Obj, reason: str, message: str) -> None:
        meta = pod.get("metadata") or {}
        namespace, name, uid = meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", "")
        # a name of the pod and the reason: said again, it is a 409, which is done
        suffix = hashlib.sha256(f"{uid}/{reason}".encode()).hexdigest()[:16]
        stamp = now_rfc3339()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": event_name(str(name), suffix), "namespace": namespace},
            "involvedObject": {
                "kind": "Pod",
                "apiVersion": "v1",
                "namespace": namespace,
                "name": name,
                "uid": uid,
            },
            "reason": reason,
            "message": message[:1024],
            "type": "Warning",
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": COMPONENT,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        with contextlib.suppress(Conflict):
            await self.client.create(paths.events(namespace), body)

    async def annotate_pod(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        try:
            await self.client.patch(
                paths.pod(namespace, name), {"metadata": {"annotations": annotations}}
            )
        except NotFound:
            log.info("pod is gone before it could be annotated", extra={"pod": name})

    async def native_podgroup(self, namespace: str, name: str) -> Obj | None:
        return await self._native(NATIVE_PODGROUPS, namespace, name)

    async def native_workload(self, namespace: str, name: str) -> Obj | None:
        return await self._native(NATIVE_WORKLOADS, namespace, name)

    async def native_podgroups_in(self, namespace: str) -> list[Obj]:
        return await self._native_lists.get(namespace, lambda: self._list_native(namespace))

    async def _list_native(self, namespace: str) -> list[Obj]:
        version = await self._native_version()
        if not version:
            return []
        path = paths.native_namespaced(namespace, version, NATIVE_PODGROUPS)
        listed: Obj = await self.client.get_json(path)
        return list(listed.get("items") or [])

    async def annotate_native_podgroup(
        self, namespace: str, name: str, annotations: dict[str, str]
    ) -> None:
        version = await self._native_version()
        if not version:
            return
        with contextlib.suppress(NotFound):
            await self.client.patch(
                paths.native_podgroup(namespace, name, version),
                {"metadata": {"annotations": annotations}},
            )

    async def _native(self, plural: str, namespace: str, name: str) -> Obj | None:
        version = await self._native_version()
        if not version:
            return None
        try:
            found: Obj = await self.client.get_json(
                paths.native_object(namespace, name, version, plural)
            )
        except NotFound:
            return None
        return found

    async def _native_version(self) -> str:
        """The version of Kubernetes' own gang API the server serves ("" for none), asked
        again now and then: an upgrade moves it."""
        return await self._versions.get(NATIVE_PODGROUPS, self._discover_native)

    async def _discover_native(self) -> str:
        found = await served_version(self.client, NATIVE_GROUP, NATIVE_PODGROUPS, NATIVE_VERSIONS)
        return found or ""

    async def set_queue_state(self, name: str, state: str) -> None:
        # A queue deleted meanwhile has no state to keep.
        with contextlib.suppress(NotFound):
            await self.client.patch(paths.queue(name) + "/status", {"status": {"state": state}})

    async def ensure_queue(self, name: str) -> None:
        await create_queue_if_missing(self.client, name)

    async def ensure_peering(self, name: str) -> None:
        # Made here rather than shipped in deploy/: `kubectl apply` cannot create an object
        # in the same run as the CRD that defines its kind (no REST mapping yet).
        body = {
            "apiVersion": "kopf.dev/v1",
            "kind": "ClusterKopfPeering",
            "metadata": {"name": name},
        }
        try:
            await self.client.create(PEERING_PATH, body)
            log.info("created the peering object", extra={"peering": name})
        except Conflict:
            pass
        except NotFound:
            log.info(
                "no ClusterKopfPeering CRD (deploy/base/controller/peering.yaml): every replica"
                " acts, which is safe, as every write the controller makes is idempotent"
            )
        except StatusError as error:
            if error.code != 403:
                raise
            log.warning(
                "cannot create the peering object %s: the ClusterRole %s grants no create on"
                " clusterkopfpeerings.kopf.dev (%s); until it exists every replica acts",
                name,
                CLUSTER_ROLE,
                RBAC_FILE,
            )

    async def _resource(self, api_version: str, kind: str) -> tuple[str, str, bool] | None:
        key = (api_version, kind)
        if key not in self._resources:
            found = await self._discover(api_version, kind)
            if found is None:
                return None  # not cached: a CRD installed later serves it
            self._resources[key] = found
        return self._resources[key]

    async def _discover(self, api_version: str, kind: str) -> tuple[str, str, bool] | None:
        prefix = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        try:
            listing = await self.client.get_json(prefix)
        except NotFound:
            return None
        for resource in listing.get("resources") or []:
            if resource.get("kind") == kind and "/" not in str(resource.get("name", "")):
                return prefix, str(resource["name"]), bool(resource.get("namespaced"))
        return None
