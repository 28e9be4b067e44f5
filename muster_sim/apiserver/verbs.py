"""The API verbs with kube-apiserver's semantics, independent of HTTP: the one entry every
write goes through (HTTP handlers, the simulated kubelet, the controllers), so metadata,
admission, validation and deletion rules hold for all of them.

ApiServer names the verbs; the parts do the work, one concern each: reads.py (get, list,
pages), writes.py (create, update, patch) with write_rules.py (what every write's object
meets), admission.py (webhooks around writes), deletion.py (deletes, finalizers, garbage
collection, namespaces), subresources.py (pods/binding, pods/eviction) and crds.py (CRDs
served and dropped).
"""

from __future__ import annotations

from typing import Any

from muster_sim.apiserver.admission import AdmittedWrites
from muster_sim.apiserver.admission_plugins import system_priority_classes
from muster_sim.apiserver.deletion import Deletion
from muster_sim.apiserver.options import DeleteOptions, ListOptions, WriteOptions
from muster_sim.apiserver.reads import Reads
from muster_sim.apiserver.resources import NAMESPACES, Kind, Registry
from muster_sim.apiserver.store import Store
from muster_sim.apiserver.subresources import Subresources
from muster_sim.apiserver.webhooks import WebhookDispatcher
from muster_sim.apiserver.writes import Writes

Obj = dict[str, Any]

# What every real cluster has from its start.
_SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class ApiServer:
    """Create, read, update, patch, delete, bind and evict objects the way kube-apiserver does."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self.store = store
        self.registry = registry
        self.webhooks = WebhookDispatcher(store)
        self._reads = Reads(store)
        self._deletion = Deletion(store, registry, self._reads)
        self._writes = Writes(store, registry, self._deletion)
        self._admitted = AdmittedWrites(store, self._writes, self.webhooks)
        self._subresources = Subresources(store, registry, self._deletion)
        for name in _SYSTEM_NAMESPACES:
            self.create(self.kind("", "v1", NAMESPACES), None, {"metadata": {"name": name}})
        pc_kind = self.kind("scheduling.k8s.io", "v1", "priorityclasses")
        for pc in system_priority_classes():
            self.create(pc_kind, None, pc)
        # the watch caches start here, as a real server's start after its first list:
        # a watch from before (resourceVersion=1 included) is 410 Expired
        store.start_watch_cache()

    def kind(self, group: str, version: str, plural: str) -> Kind:
        """The served kind, or 404 for a path that names none."""
        return self.registry.kind(group, version, plural)

    # -- reads ---------------------------------------------------------------

    def get(self, kind: Kind, namespace: str | None, name: str) -> Obj:
        """One object, or 404."""
        return self._reads.get(kind, namespace, name)

    def list(self, kind: Kind, namespace: str | None, options: ListOptions) -> Obj:
        """A `<Kind>List` with the list's resourceVersion, filtered and paginated."""
        return self._reads.list(kind, namespace, options)

    # -- writes --------------------------------------------------------------

    def create(
        self, kind: Kind, namespace: str | None, body: Any, options: WriteOptions | None = None
    ) -> Obj:
        """Store a new object: names, metadata, defaults, admission; 409 if the name is taken."""
        return self._writes.create(kind, namespace, body, options)

    def update(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        body: Any,
        subresource: str | None = None,
        options: WriteOptions | None = None,
    ) -> Obj:
        """PUT: replace an object; 409 on a stale resourceVersion."""
        return self._writes.update(kind, namespace, name, body, subresource, options)

    def patch(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        content_type: str,
        patch: Any,
        subresource: str | None = None,
        options: WriteOptions | None = None,
    ) -> Obj:
        """PATCH with a merge, strategic-merge or JSON patch."""
        return self._writes.patch(kind, namespace, name, content_type, patch, subresource, options)

    # -- writes with the admission webhooks (what HTTP clients get) ----------

    async def create_admitted(
        self, kind: Kind, namespace: str | None, body: Any, options: WriteOptions
    ) -> Obj:
        """create, with the admission webhooks called between defaulting and storing."""
        return await self._admitted.create(kind, namespace, body, options)

    async def update_admitted(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        body: Any,
        subresource: str | None,
        options: WriteOptions,
    ) -> Obj:
        """update, with the admission webhooks called before storing."""
        return await self._admitted.update(kind, namespace, name, body, subresource, options)

    async def patch_admitted(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        content_type: str,
        patch: Any,
        subresource: str | None,
        options: WriteOptions,
    ) -> Obj:
        """patch, with the admission webhooks called before storing."""
        return await self._admitted.patch(
            kind, namespace, name, content_type, patch, subresource, options
        )

    async def admit_other(
        self,
        kind: Kind,
        operation: str,
        namespace: str | None,
        name: str,
        subresource: str | None,
        obj: Obj | None,
        options: WriteOptions,
        object_kind: tuple[str, str, str] | None = None,
    ) -> None:
        """Webhook admission for a write stored elsewhere (delete, pods/binding, eviction)."""
        await self._admitted.admit_other(
            kind, operation, namespace, name, subresource, obj, options, object_kind
        )

    # -- subresources --------------------------------------------------------

    def bind(self, namespace: str, name: str, body: Any) -> None:
        """pods/binding: set spec.nodeName and PodScheduled=True; 409 if already bound."""
        self._subresources.bind(namespace, name, body)

    def evict(self, namespace: str, name: str, body: Any, *, dry_run: bool = False) -> None:
        """pods/eviction, its PodDisruptionBudget asked first; `dry_run` checks only."""
        self._subresources.evict(namespace, name, body, dry_run=dry_run)

    # -- delete --------------------------------------------------------------

    def delete(
        self, kind: Kind, namespace: str | None, name: str, options: DeleteOptions | None = None
    ) -> tuple[Obj, bool]:
        """Delete (gracefully for bound pods); returns the object and whether it is gone."""
        return self._deletion.delete(kind, namespace, name, options)

    def delete_collection(
        self, kind: Kind, namespace: str | None, options: ListOptions, delete_options: DeleteOptions
    ) -> Obj:
        """Delete every object a list with the same selectors would return."""
        return self._deletion.delete_collection(kind, namespace, options, delete_options)
