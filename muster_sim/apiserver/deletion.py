"""Deletion as kube-apiserver and kube-controller-manager's garbage collector do it:
preconditions, graceful deletion of pods on a node, finalizers, propagation (orphan,
background, foreground), dependents whose every owner is gone, and namespaces that go once
emptied."""

from __future__ import annotations

import contextlib
from typing import Any

from muster_sim.apiserver.crds import drop_crd
from muster_sim.apiserver.options import DeleteOptions, ListOptions
from muster_sim.apiserver.reads import Reads, stored_object
from muster_sim.apiserver.resources import CRDS, NAMESPACES, PODS, Kind, Registry, as_version
from muster_sim.apiserver.store import Store, name_of, namespace_of
from muster_sim.errors import ApiError, conflict
from muster_sim.timestamps import now_rfc3339

Obj = dict[str, Any]


class Deletion:
    """Deletes objects, and what their deletion takes with it, the way a cluster does."""

    def __init__(self, store: Store, registry: Registry, reads: Reads) -> None:
        self.store = store
        self.registry = registry
        self.reads = reads

    def delete(
        self, kind: Kind, namespace: str | None, name: str, options: DeleteOptions | None = None
    ) -> tuple[Obj, bool]:
        """Delete (gracefully for bound pods); returns the object and whether it is gone."""
        options = options or DeleteOptions()
        current = stored_object(self.store, kind, namespace, name)
        meta = current["metadata"]
        if options.uid is not None and options.uid != meta["uid"]:
            raise conflict(
                kind.group,
                kind.plural,
                name,
                f"Precondition failed: UID in precondition: {options.uid}, UID in "
                f"object meta: {meta['uid']}",
            )
        if options.resource_version is not None and (
            options.resource_version != meta["resourceVersion"]
        ):
            raise conflict(
                kind.group,
                kind.plural,
                name,
                f"Precondition failed: ResourceVersion in precondition: "
                f"{options.resource_version}, ResourceVersion in object meta: "
                f"{meta['resourceVersion']}",
            )
        grace = self._grace_period(kind, current, options)
        finalizers = list(meta.get("finalizers") or [])
        if options.propagation == "Orphan" and "orphan" not in finalizers:
            finalizers.append("orphan")
        if options.propagation == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        if kind.key == NAMESPACES:
            return self._delete_namespace(kind, current), False
        if meta.get("deletionTimestamp"):
            # already terminating: only a shorter grace period changes anything
            old_grace = int(meta.get("deletionGracePeriodSeconds") or 0)
            if grace >= old_grace or kind.key != PODS:
                return as_version(kind, current), False
        if grace == 0 and not finalizers:
            return self.remove(kind, current), True
        new = dict(current)
        new["metadata"] = dict(
            meta, deletionTimestamp=now_rfc3339(grace), deletionGracePeriodSeconds=grace
        )
        if finalizers:
            new["metadata"]["finalizers"] = finalizers
        stored: Obj | None = self.store.put(kind.key, new, "MODIFIED")
        if "orphan" in finalizers:
            self._orphan_dependents(new)
            stored = self._drop_finalizer(kind, new, "orphan")
        elif "foregroundDeletion" in finalizers:
            for dep in self.store.dependents(meta["uid"]):
                self._delete_dependent(dep, meta["uid"])
            # deleting a dependent may already have finished the owner
            stored = self.store.get(kind.key, namespace_of(new), name)
            if stored is not None:
                stored = self._finish_foreground(kind, stored)
        if stored is not None and grace == 0 and not stored["metadata"].get("finalizers"):
            return self.remove(kind, stored), True
        if stored is None:
            return as_version(kind, new), True
        return as_version(kind, stored), False

    def delete_collection(
        self, kind: Kind, namespace: str | None, options: ListOptions, delete_options: DeleteOptions
    ) -> Obj:
        """Delete every object a list with the same selectors would return."""
        listed = self.reads.list(kind, namespace, options)
        deleted: list[Obj] = []
        for obj in listed["items"]:
            try:
                deleted.append(
                    self.delete(kind, namespace_of(obj) or None, name_of(obj), delete_options)[0]
                )
            except ApiError as error:
                if error.code != 404:
                    raise
        listed["items"] = deleted
        return listed

    def remove(self, kind: Kind, obj: Obj) -> Obj:
        """Take the object out of the store now; its dependents and waiting owners follow."""
        gone = self.store.remove(kind.key, namespace_of(obj), name_of(obj))
        if gone is None:
            return obj
        if kind.key == CRDS:
            drop_crd(self.store, self.registry, gone)
        self._collect_garbage(gone)
        return as_version(kind, gone)

    def _grace_period(self, kind: Kind, obj: Obj, options: DeleteOptions) -> int:
        if kind.key != PODS:
            return 0
        spec = obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase")
        # an unscheduled or finished pod has no kubelet to wait for: the server deletes at once
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        if options.grace_period is not None:
            return max(0, options.grace_period)
        return int(spec.get("terminationGracePeriodSeconds", 30))

    def _collect_garbage(self, gone: Obj) -> None:
        """Delete dependents whose every owner is gone; finish foreground and namespace waits."""
        uid = str(gone["metadata"]["uid"])
        for dep in self.store.dependents(uid):
            self._delete_dependent(dep, uid)
        for ref in gone["metadata"].get("ownerReferences") or []:
            owner = self._owner(ref, namespace_of(gone))
            if owner is not None and "foregroundDeletion" in (
                owner[1]["metadata"].get("finalizers") or []
            ):
                self._finish_foreground(owner[0], owner[1])
        namespace = namespace_of(gone)
        if namespace:
            ns = self.store.get(NAMESPACES, "", namespace)
            if ns is not None and ns["metadata"].get("deletionTimestamp"):
                self._finish_namespace(ns)

    def _delete_dependent(self, ident: tuple[str, str, str], owner_uid: str) -> None:
        key, namespace, name = ident
        obj = self.store.get(key, namespace, name)
        kind = self.registry.by_key(key)
        if obj is None or kind is None:
            return
        refs = obj["metadata"].get("ownerReferences") or []
        # the owner being deleted may still exist (foreground): it does not keep the dependent
        live = [
            r for r in refs if r.get("uid") != owner_uid and self._owner(r, namespace) is not None
        ]
        if live:
            # another owner still exists: the real GC only drops the dangling references
            if len(live) != len(refs):
                new = dict(obj)
                new["metadata"] = dict(obj["metadata"], ownerReferences=live)
                self.store.put(key, new, "MODIFIED")
            return
        if obj["metadata"].get("deletionTimestamp"):
            return
        with contextlib.suppress(ApiError):
            self.delete(kind, namespace or None, name, DeleteOptions(propagation="Background"))

    def _owner(self, ref: Obj, namespace: str) -> tuple[Kind, Obj] | None:
        api_version = str(ref.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        for kind in self.registry.all_kinds():
            if kind.kind == ref.get("kind") and kind.group == group and kind.version == version:
                obj = self.store.get(
                    kind.key, namespace if kind.namespaced else "", str(ref.get("name"))
                )
                if obj is not None and obj["metadata"]["uid"] == ref.get("uid"):
                    return kind, obj
                return None
        return None

    def _orphan_dependents(self, owner: Obj) -> None:
        uid = owner["metadata"]["uid"]
        for key, namespace, name in self.store.dependents(uid):
            obj = self.store.get(key, namespace, name)
            if obj is None:
                continue
            new = dict(obj)
            refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
            new["metadata"] = dict(obj["metadata"], ownerReferences=refs)
            if not refs:
                del new["metadata"]["ownerReferences"]
            self.store.put(key, new, "MODIFIED")

    def _finish_foreground(self, kind: Kind, owner: Obj) -> Obj | None:
        """Remove the foregroundDeletion finalizer once no dependent is left."""
        if self.store.dependents(owner["metadata"]["uid"]):
            return owner
        return self._drop_finalizer(kind, owner, "foregroundDeletion")

    def _drop_finalizer(self, kind: Kind, obj: Obj, finalizer: str) -> Obj | None:
        new = dict(obj)
        new["metadata"] = dict(obj["metadata"])
        remaining = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
        if remaining:
            new["metadata"]["finalizers"] = remaining
        else:
            new["metadata"].pop("finalizers", None)
        stored = self.store.put(kind.key, new, "MODIFIED")
        if not remaining and not stored["metadata"].get("deletionGracePeriodSeconds"):
            self.remove(kind, stored)
            return None
        return stored

    def _delete_namespace(self, kind: Kind, ns: Obj) -> Obj:
        if not ns["metadata"].get("deletionTimestamp"):
            new = dict(ns)
            new["metadata"] = dict(
                ns["metadata"], deletionTimestamp=now_rfc3339(), deletionGracePeriodSeconds=0
            )
            new["status"] = {"phase": "Terminating"}
            ns = self.store.put(NAMESPACES, new, "MODIFIED")
            name = name_of(ns)
            for each in self.registry.all_kinds():
                if not each.namespaced or self.registry.by_key(each.key) is not each:
                    continue
                for obj in self.store.items(each.key, name):
                    if obj["metadata"].get("deletionTimestamp"):
                        continue
                    with contextlib.suppress(ApiError):
                        self.delete(each, name, name_of(obj))
        self._finish_namespace(ns)
        current = self.store.get(NAMESPACES, "", name_of(ns))
        return current if current is not None else ns

    def _finish_namespace(self, ns: Obj) -> None:
        name = name_of(ns)
        for each in self.registry.all_kinds():
            if each.namespaced and self.store.items(each.key, name):
                return
        if ns["metadata"].get("finalizers"):
            return
        self.remove(self.registry.kind("", "v1", NAMESPACES), ns)
