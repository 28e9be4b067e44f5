"""Creates, updates and patches as kube-apiserver makes them: each is prepared (decoded,
named, defaulted, its fields reset as its strategy says), then validated, then committed
unless the object changed meanwhile; a webhook-admitted write (admission.py) runs its
webhooks between the preparation and the commit."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from muster_sim.apiserver import webhooks
from muster_sim.apiserver.crds import establish_crd
from muster_sim.apiserver.deletion import Deletion
from muster_sim.apiserver.options import WriteOptions
from muster_sim.apiserver.patch import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_PATCH,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from muster_sim.apiserver.reads import stored_object
from muster_sim.apiserver.resources import (
    CRDS,
    NAMESPACES,
    NATIVE_PODGROUPS,
    NATIVE_WORKLOADS,
    PDBS,
    PODS,
    Kind,
    Registry,
    apply_schema_defaults,
    as_version,
)
from muster_sim.apiserver.store import Store, clone, name_of, namespace_of
from muster_sim.apiserver.write_rules import (
    check_annotations_size,
    check_namespace,
    decoded_object,
    default_created,
    drop_disabled_pod_fields,
    identify,
    prune,
    validate,
)
from muster_sim.errors import (
    STALE,
    FieldError,
    already_exists,
    bad_request,
    conflict,
    internal_error,
    invalid,
    not_found,
    unsupported_media_type,
)
from muster_sim.validation.names import validate_name
from muster_sim.validation.strategy import WriteContext

Obj = dict[str, Any]

# kinds whose create drops a client-sent status, as their real strategies do
_RESET_STATUS_ON_CREATE = frozenset({PODS, PDBS, CRDS})
_GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"
# kinds whose strategy sets no metadata.generation (a 1.36 server's native PodGroups and
# Workloads carry none)
_NO_GENERATION = frozenset({NATIVE_PODGROUPS, NATIVE_WORKLOADS})


@dataclass
class PendingWrite:
    """A write between its preparation and its commit, while admission looks at it."""

    kind: Kind
    namespace: str | None
    name: str
    obj: Obj
    old: Obj | None
    subresource: str | None
    expected_rv: str | None
    options: WriteOptions
    # kube-apiserver hands a CREATE's object to webhooks as the client wrote it: a client
    # that names the namespace only in the URL sends no metadata.namespace
    namespace_in_body: bool = True


class StaleWrite(Exception):
    """The object changed between a write's preparation and its commit."""


class Writes:
    """create, update and patch, each in its steps, for the API server and its admission."""

    def __init__(self, store: Store, registry: Registry, deletion: Deletion) -> None:
        self.store = store
        self.registry = registry
        self.deletion = deletion

    def create(
        self, kind: Kind, namespace: str | None, body: Any, options: WriteOptions | None = None
    ) -> Obj:
        """Store a new object: names, metadata, defaults, admission; 409 if the name is taken."""
        pending = self.prepare_create(kind, namespace, body, options or WriteOptions())
        self.identify(pending)
        self.validate(pending)
        return self.commit_create(pending)

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
        pending = self.prepare_update(
            kind, namespace, name, body, subresource, options or WriteOptions()
        )
        self.validate(pending)
        return self.commit_replace(pending)

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
        pending = self.prepare_patch(
            kind, namespace, name, content_type, patch, subresource, options or WriteOptions()
        )
        self.validate(pending)
        return self.commit_replace(pending)

    def prepare_create(
        self, kind: Kind, namespace: str | None, body: Any, options: WriteOptions
    ) -> PendingWrite:
        """A new object decoded, named, checked and defaulted: ready for admission."""
        obj = decoded_object(kind, body)
        prune(kind, obj, options)
        meta = obj["metadata"]
        namespace_in_body = bool(meta.get("namespace"))
        if kind.namespaced:
            check_namespace(self.store, kind, obj, namespace)
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(random.choice(_GENERATE_CHARS) for _ in range(5))
            meta["name"] = f"{meta['generateName']}{suffix}"
        validate_name(kind.kind, kind.group, obj)
        check_annotations_size(kind, obj)
        if meta.get("resourceVersion"):
            raise internal_error("resourceVersion should not be set on objects to be created")
        name = str(meta["name"])
        if self.store.get(kind.key, namespace_of(obj), name) is not None:
            raise already_exists(kind.group, kind.plural, name)
        if kind.has_status and (kind.key in _RESET_STATUS_ON_CREATE or kind.from_crd):
            obj.pop("status", None)
        if kind.key == PODS:
            drop_disabled_pod_fields(obj, None, self.registry.by_key(NATIVE_PODGROUPS) is not None)
        default_created(self.store, kind, obj)
        return PendingWrite(
            kind, namespace_of(obj) or None, name, obj, None, None, None, options, namespace_in_body
        )

    def commit_create(self, pending: PendingWrite) -> Obj:
        """Store the prepared object (409 if its name was taken meanwhile); with dryRun, what
        would be stored."""
        kind, obj = pending.kind, pending.obj
        meta = obj["metadata"]
        # a webhook call may have let another create of the same name in first
        if self.store.get(kind.key, namespace_of(obj), pending.name) is not None:
            raise already_exists(kind.group, kind.plural, pending.name)
        if kind.key not in _NO_GENERATION:
            meta["generation"] = 1
        for field_name in ("deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
            meta.pop(field_name, None)
        if pending.options.dry_run:
            # what would be stored, without a resourceVersion: nothing was written
            return as_version(kind, obj)
        stored = self.store.put(kind.key, obj, "ADDED")
        if kind.key == CRDS:
            stored = establish_crd(self.store, self.registry, stored)
        return as_version(kind, stored)

    def prepare_update(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        body: Any,
        subresource: str | None,
        options: WriteOptions,
    ) -> PendingWrite:
        """The replacement a PUT asks for, prepared over the stored object."""
        current = stored_object(self.store, kind, namespace, name)
        obj = decoded_object(kind, body)
        body_name = obj["metadata"].get("name")
        if body_name and body_name != name:
            raise bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        rv = obj["metadata"].get("resourceVersion")
        if not rv and kind.from_crd:
            raise invalid(
                kind.group,
                kind.kind,
                name,
                [
                    FieldError(
                        "metadata.resourceVersion",
                        "Invalid value: 0x0: must be specified for an update",
                    )
                ],
            )
        prune(kind, obj, options)
        return self._prepare_replace(kind, current, obj, subresource, rv or None, options)

    def prepare_patch(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        content_type: str,
        patch: Any,
        subresource: str | None,
        options: WriteOptions,
    ) -> PendingWrite:
        """The replacement a PATCH makes of the stored object, prepared."""
        current = stored_object(self.store, kind, namespace, name)
        base = clone(current)
        media = content_type.split(";", 1)[0].strip()
        if media == MERGE_PATCH:
            patched = merge_patch(base, patch)
        elif media == STRATEGIC_PATCH:
            if kind.from_crd:
                raise unsupported_media_type(
                    "application/json-patch+json, application/merge-patch+json, "
                    "application/apply-patch+yaml"
                )
            patched = strategic_merge_patch(base, patch)
        elif media == JSON_PATCH:
            patched = json_patch(base, patch)
        else:
            raise unsupported_media_type(
                "application/json-patch+json, application/merge-patch+json, "
                "application/strategic-merge-patch+json"
            )
        if not isinstance(patched, dict):
            raise bad_request("the patch did not produce an object")
        patched_meta = patched.get("metadata") if isinstance(patched.get("metadata"), dict) else {}
        wanted_rv = patched_meta.get("resourceVersion") if patched_meta else None
        if wanted_rv == current["metadata"]["resourceVersion"]:
            wanted_rv = None
        obj = decoded_object(kind, patched)
        prune(kind, obj, options)
        return self._prepare_replace(kind, current, obj, subresource, wanted_rv, options)

    def _prepare_replace(
        self,
        kind: Kind,
        current: Obj,
        obj: Obj,
        subresource: str | None,
        expected_rv: str | None,
        options: WriteOptions,
    ) -> PendingWrite:
        name = name_of(current)
        if expected_rv is not None and expected_rv != current["metadata"]["resourceVersion"]:
            raise conflict(kind.group, kind.plural, name, STALE)
        old_meta = current["metadata"]
        if subresource == "status":
            # a status write changes status only; metadata and spec stay as stored (a deep
            # copy for custom resources, whose schema defaults fill the copy in place)
            if kind.from_crd:
                new = clone(current)
            else:
                new = dict(current)
                new["metadata"] = dict(old_meta)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
        else:
            new = obj
            meta = new["metadata"]
            for field_name in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "namespace",
            ):
                if field_name in old_meta:
                    meta[field_name] = old_meta[field_name]
                else:
                    meta.pop(field_name, None)
            meta["name"] = name
            if kind.has_status:
                if "status" in current:
                    status = current["status"]
                    new["status"] = clone(status) if kind.from_crd else status
                else:
                    new.pop("status", None)
            if kind.key in (webhooks.MUTATING, webhooks.VALIDATING):
                webhooks.default_configuration(new, mutating=kind.key == webhooks.MUTATING)
        if kind.key == PODS:
            native = self.registry.by_key(NATIVE_PODGROUPS) is not None
            drop_disabled_pod_fields(new, current, native)
        if kind.strategy is not None:
            kind.strategy.prepare_for_update(current, new, subresource)
        if kind.from_crd and kind.schema is not None:
            apply_schema_defaults(new, kind.schema)
        return PendingWrite(
            kind,
            namespace_of(current) or None,
            name,
            new,
            current,
            subresource,
            expected_rv,
            options,
        )

    def commit_replace(self, pending: PendingWrite) -> Obj:
        """Store the prepared replacement; StaleWrite when the object changed since it was
        prepared."""
        kind, new = pending.kind, pending.obj
        assert pending.old is not None
        old_meta = pending.old["metadata"]
        current = self.store.get(kind.key, pending.namespace or "", pending.name)
        if current is None:
            raise not_found(kind.group, kind.plural, pending.name)
        if current["metadata"]["resourceVersion"] != old_meta["resourceVersion"]:
            raise StaleWrite()
        if _spec_of(new) != _spec_of(current) and kind.key not in _NO_GENERATION:
            new["metadata"]["generation"] = int(old_meta.get("generation", 1)) + 1
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if new == current:
            # a no-op write does not reach etcd: no new resourceVersion, no event
            return as_version(kind, current)
        if pending.options.dry_run:
            return as_version(kind, new)
        stored = self.store.put(kind.key, new, "MODIFIED")
        if kind.key == CRDS:
            self.registry.add_crd(stored)
        meta = stored["metadata"]
        # the last finalizer gone: the object goes, unless a pod still waits for its kubelet
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and (kind.key != PODS or not meta.get("deletionGracePeriodSeconds"))
        ):
            self.deletion.remove(kind, stored)
        return as_version(kind, stored)

    @staticmethod
    def identify(pending: PendingWrite) -> None:
        """A new object's identity (write_rules.identify); an update keeps the stored one."""
        if pending.old is None:
            identify(pending.kind, pending.obj)

    def validate(self, pending: PendingWrite) -> None:
        """The write's validation after mutation (write_rules.validate), with its context."""
        options = pending.options
        context = WriteContext(
            verb=options.verb,
            subresource=pending.subresource,
            denied=options.denied,
            namespace_labels=self._namespace_labels,
        )
        validate(self.store, pending.kind, pending.name, pending.obj, pending.old, context)

    def _namespace_labels(self, name: str) -> dict[str, str] | None:
        namespace = self.store.get(NAMESPACES, "", name)
        return None if namespace is None else namespace["metadata"].get("labels") or {}


def _spec_of(obj: Obj) -> Obj:
    """Everything but metadata and status: what a generation bump tracks."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "kind", "apiVersion")}
