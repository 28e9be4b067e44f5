"""The API verbs with kube-apiserver's semantics, independent of HTTP.

Every write goes through here (HTTP handlers, the simulated kubelet, the garbage
collector), so metadata, admission, validation and deletion rules hold for all of them.
"""

from __future__ import annotations

import base64
import bisect
import contextlib
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from muster_sim.apiserver import admission_plugins as storage_admission
from muster_sim.apiserver import webhooks
from muster_sim.apiserver.patch import json_patch, merge_patch, strategic_merge_patch
from muster_sim.apiserver.resources import Kind, Registry, apply_schema_defaults
from muster_sim.apiserver.store import Store, key_of, name_of, namespace_of
from muster_sim.cluster import disruption
from muster_sim.errors import (
    STALE,
    ApiError,
    FieldError,
    already_exists,
    bad_request,
    conflict,
    expired,
    forbidden,
    internal_error,
    invalid,
    not_found,
    unsupported_media_type,
)
from muster_sim.selectors import Predicate
from muster_sim.timestamps import now_rfc3339 as now_rfc3339  # re-exported for sim modules
from muster_sim.validation import pods as admission
from muster_sim.validation import typed_decode
from muster_sim.validation.schema import compiled as compiled_schema
from muster_sim.validation.schema import structural_errors

Obj = dict[str, Any]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode

PODS = "pods"
NAMESPACES = "namespaces"
NODES = "nodes"
CRDS = "customresourcedefinitions.apiextensions.k8s.io"
PRIORITY_CLASSES = "priorityclasses.scheduling.k8s.io"
PDBS = "poddisruptionbudgets.policy"
# kinds whose create drops a client-sent status, as their real strategies do
_RESET_STATUS_ON_CREATE = frozenset({PODS, PDBS, CRDS})
_GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_FIELD_VALIDATIONS = ("Ignore", "Strict", "Warn")
# how often an update or patch is retried when the object changed while webhooks answered
_ADMITTED_RETRIES = 5
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
_CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


def clone(obj: Any) -> Any:
    """A deep copy: a msgspec round trip is several times faster than copy.deepcopy."""
    return _decode(_encode(obj))


@dataclass
class ListOptions:
    """The query parameters of a list request."""

    label: Predicate | None = None
    field: Predicate | None = None
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""


@dataclass
class WriteOptions:
    """What a create, update or patch request asked for beyond its body, and what it is told."""

    # internal writes (kubelet, garbage collector) have no client to warn
    field_validation: str = "Ignore"
    # the authenticated user, for admission webhooks; None until authentication hands one
    user: Any = None
    # `Warning` response headers: unknown fields, webhook warnings
    warnings: list[str] = field(default_factory=list)
    operation_options: str = "CreateOptions"
    # `dryRun=All`: admitted, defaulted and validated as usual, then not stored
    dry_run: bool = False

    @classmethod
    def from_query(cls, query: Any, operation_options: str, user: Any = None) -> WriteOptions:
        """Read `fieldValidation` (default Warn, as kube-apiserver) and `dryRun`; 4xx if bad."""
        dry_run = dry_run_of(query, operation_options)
        directive = query.get("fieldValidation") or "Warn"
        if directive not in _FIELD_VALIDATIONS:
            raise invalid(
                "meta.k8s.io",
                operation_options,
                "",
                [
                    FieldError(
                        "fieldValidation",
                        f'Unsupported value: "{directive}": supported values: "Ignore", '
                        '"Strict", "Warn"',
                        "FieldValueNotSupported",
                    )
                ],
            )
        return cls(directive, user, [], operation_options, dry_run)

    def review_options(self, operation: str | None = None) -> Obj:
        """The `options` an AdmissionReview carries."""
        kind = "DeleteOptions" if operation == "DELETE" else self.operation_options
        options: Obj = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
        if kind != "DeleteOptions" and self.field_validation != "Ignore":
            options["fieldValidation"] = self.field_validation
        if self.dry_run:
            options["dryRun"] = ["All"]
        return options


# Phases in which a pod is evicted without asking its budget (kube's canIgnorePDB).
_NO_BUDGET_PHASES = ("Succeeded", "Failed", "Pending")


def dry_run_of(query: Any, operation_options: str) -> bool:
    """Whether the request asked for `dryRun=All`; 422 for any other value, as kube answers."""
    values = list(query.getall("dryRun", [])) if hasattr(query, "getall") else []
    if not values:
        return False
    if values == ["All"]:
        return True
    shown = "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"
    raise invalid(
        "meta.k8s.io",
        operation_options,
        "",
        [
            FieldError(
                "dryRun",
                f'Unsupported value: {shown}: supported values: "All"',
                "FieldValueNotSupported",
            )
        ],
    )


@dataclass
class _Pending:
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


class _StaleWrite(Exception):
    """The object changed between a write's preparation and its commit."""


@dataclass
class DeleteOptions:
    """A DeleteOptions body merged with its query parameters."""

    grace_period: int | None = None
    propagation: str | None = None
    uid: str | None = None
    resource_version: str | None = None

    @classmethod
    def from_body(cls, body: Obj | None, query: dict[str, str]) -> DeleteOptions:
        """Read the body (if any) and the query string; the query wins, as the real server."""
        body = body or {}
        options = cls()
        grace = query.get("gracePeriodSeconds", body.get("gracePeriodSeconds"))
        if grace is not None and grace != "":
            try:
                options.grace_period = int(grace)
            except ValueError:
                raise bad_request(f"invalid gracePeriodSeconds: {grace!r}") from None
        options.propagation = query.get("propagationPolicy") or body.get("propagationPolicy")
        orphan = query.get("orphanDependents", body.get("orphanDependents"))
        if options.propagation is None and orphan is not None:
            options.propagation = "Orphan" if str(orphan).lower() == "true" else "Background"
        if options.propagation not in (None, "Orphan", "Background", "Foreground"):
            raise bad_request(f"propagationPolicy {options.propagation} is not supported")
        preconditions = body.get("preconditions") or {}
        options.uid = preconditions.get("uid")
        options.resource_version = preconditions.get("resourceVersion")
        return options


class ApiServer:
    """Create, read, update, patch, delete, bind and evict objects the way kube-apiserver does."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self.store = store
        self.registry = registry
        self.webhooks = webhooks.WebhookDispatcher(store)
        # The last paged list of each kind and namespace: its resourceVersion, its objects in
        # order and their keys (_listed).
        self._pages: dict[tuple[str, str | None], tuple[int, list[Obj], list[str]]] = {}
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create(self.kind("", "v1", NAMESPACES), None, {"metadata": {"name": name}})
        pc_kind = self.kind("scheduling.k8s.io", "v1", "priorityclasses")
        for pc in admission.system_priority_classes():
            self.create(pc_kind, None, pc)
        # the watch caches start here, as a real server's start after its first list:
        # a watch from before (resourceVersion=1 included) is 410 Expired
        store.start_watch_cache()

    def kind(self, group: str, version: str, plural: str) -> Kind:
        """The served kind, or 404 for a path that names none."""
        found = self.registry.lookup(group, version, plural)
        if found is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        return found

    # -- reads ---------------------------------------------------------------

    def _listed(
        self, kind: Kind, namespace: str | None, rv: int, *, paged: bool
    ) -> tuple[list[Obj], list[str]]:
        """The kind's objects at `rv` in etcd's order (the store's), with their keys. The last
        paged list is kept: its next pages are slices of it, found by their continue key, as
        etcd serves each page from where the last ended. Rebuilding the list for every page
        made sim's 50,000-pod list quadratic, which a real server is not."""
        kept = self._pages.get((kind.key, namespace))
        if kept is not None and kept[0] == rv:
            return kept[1], kept[2]
        items = self.store.snapshot(kind.key, namespace, rv)
        keys = [key_of(o) for o in items]
        if paged:
            # An object at `rv` never changes (the store replaces objects, it never edits
            # one), and a compacted `rv` is refused before this is read.
            self._pages[(kind.key, namespace)] = (rv, items, keys)
        return items, keys

    def get(self, kind: Kind, namespace: str | None, name: str) -> Obj:
        """One object, or 404."""
        obj = self.store.get(kind.key, namespace or "", name)
        if obj is None:
            raise not_found(kind.group, kind.plural, name)
        return self._as_version(kind, obj)

    def list(self, kind: Kind, namespace: str | None, options: ListOptions) -> Obj:
        """A `<Kind>List` with the list's resourceVersion, filtered and paginated."""
        start = ""
        if options.continue_token:
            rv, start = _decode_continue(options.continue_token)
            if rv < self.store.compacted_rv:
                raise expired(_CONTINUE_EXPIRED)
            items, keys = self._listed(kind, namespace, rv, paged=True)
        elif options.resource_version and options.resource_version_match == "Exact":
            rv = self._parse_rv(options.resource_version)
            items, keys = self._listed(kind, namespace, rv, paged=options.limit > 0)
        else:
            rv = self.store.rv
            if options.resource_version not in ("", "0"):
                requested = self._parse_rv(options.resource_version)
                if requested > rv:
                    raise ApiError(
                        504,
                        "Timeout",
                        f"Too large resource version: {requested}, current: {rv}",
                        {
                            "causes": [
                                {
                                    "reason": "ResourceVersionTooLarge",
                                    "message": "Too large resource version",
                                }
                            ],
                            "retryAfterSeconds": 1,
                        },
                    )
            items, keys = self._listed(kind, namespace, rv, paged=options.limit > 0)
        begin = bisect.bisect_right(keys, start) if start else 0
        rest = len(items) - begin
        selectors = [p for p in (options.label, options.field) if p is not None]
        metadata: Obj = {"resourceVersion": str(rv)}
        if selectors:
            # A page stops at its limit: the objects after it are filtered for the next page,
            # not for this one (filtering the whole rest on every page made a selective list
            # of 150,000 pods quadratic, which a real server's watch cache is not).
            picked: list[Obj] = []
            for index in range(begin, len(items)):
                obj = items[index]
                if all(p(obj) for p in selectors):
                    picked.append(obj)
                    if options.limit > 0 and len(picked) > options.limit:
                        break
            items = picked
        else:
            end = begin + options.limit + 1 if options.limit > 0 else len(items)
            items = items[begin:end]
        if options.limit > 0 and len(items) > options.limit:
            items = items[: options.limit]
            metadata["continue"] = _encode_continue(rv, key_of(items[-1]))
            if not selectors:
                metadata["remainingItemCount"] = rest - options.limit
        if kind.from_crd:
            items = [self._as_version(kind, o) for o in items]
        return {
            "kind": f"{kind.kind}List",
            "apiVersion": kind.api_version,
            "metadata": metadata,
            "items": items,
        }

    def _parse_rv(self, text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise bad_request(f'invalid resource version "{text}"') from None

    def _as_version(self, kind: Kind, obj: Obj) -> Obj:
        # a CRD served at several versions stores one; without a conversion webhook the
        # real server only rewrites apiVersion
        if kind.from_crd and obj.get("apiVersion") != kind.api_version:
            return dict(obj, apiVersion=kind.api_version)
        return obj

    # -- create --------------------------------------------------------------

    def create(
        self, kind: Kind, namespace: str | None, body: Any, options: WriteOptions | None = None
    ) -> Obj:
        """Store a new object: names, metadata, defaults, admission; 409 if the name is taken."""
        pending = self._prepare_create(kind, namespace, body, options or WriteOptions())
        self._identify(pending)
        self._validate_write(pending)
        return self._commit_create(pending)

    async def create_admitted(
        self, kind: Kind, namespace: str | None, body: Any, options: WriteOptions
    ) -> Obj:
        """create, with the admission webhooks called between defaulting and storing."""
        if not self.webhooks.active():
            return self.create(kind, namespace, body, options)
        pending = self._prepare_create(kind, namespace, body, options)
        await self._admit(pending, "CREATE", options)
        return self._commit_create(pending)

    def _prepare_create(
        self, kind: Kind, namespace: str | None, body: Any, options: WriteOptions
    ) -> _Pending:
        obj = self._decoded_object(kind, body)
        self._prune(kind, obj, options)
        meta = obj["metadata"]
        namespace_in_body = bool(meta.get("namespace"))
        if kind.namespaced:
            self._check_namespace(kind, obj, namespace)
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(random.choice(_GENERATE_CHARS) for _ in range(5))
            meta["name"] = f"{meta['generateName']}{suffix}"
        admission.validate_name(kind.kind, kind.group, obj)
        _check_annotations_size(kind, obj)
        if meta.get("resourceVersion"):
            raise internal_error("resourceVersion should not be set on objects to be created")
        name = str(meta["name"])
        if self.store.get(kind.key, namespace_of(obj), name) is not None:
            raise already_exists(kind.group, kind.plural, name)
        if kind.has_status and (kind.key in _RESET_STATUS_ON_CREATE or kind.from_crd):
            obj.pop("status", None)
        self._default_create(kind, obj)
        return _Pending(
            kind, namespace_of(obj) or None, name, obj, None, None, None, options, namespace_in_body
        )

    def _commit_create(self, pending: _Pending) -> Obj:
        kind, obj = pending.kind, pending.obj
        meta = obj["metadata"]
        # a webhook call may have let another create of the same name in first
        if self.store.get(kind.key, namespace_of(obj), pending.name) is not None:
            raise already_exists(kind.group, kind.plural, pending.name)
        meta["generation"] = 1
        for field_name in ("deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
            meta.pop(field_name, None)
        if pending.options.dry_run:
            # what would be stored, without a resourceVersion: nothing was written
            return self._as_version(kind, obj)
        stored = self.store.put(kind.key, obj, "ADDED")
        if kind.key == CRDS:
            stored = self._establish_crd(stored)
        return self._as_version(kind, stored)

    def _decoded_object(self, kind: Kind, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise bad_request(f"Object '{kind.kind}' is invalid: expected a JSON object")
        obj: Obj = body
        if obj.get("kind") and obj["kind"] != kind.kind:
            raise bad_request(
                f"the kind in the data ({obj['kind']}) does not match the expected kind "
                f"({kind.kind})"
            )
        obj["kind"] = kind.kind
        obj["apiVersion"] = kind.api_version
        if not kind.from_crd:
            typed_decode.check(kind.kind, kind.api_version, obj)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            meta = obj["metadata"] = {}
        return obj

    def _check_namespace(self, kind: Kind, obj: Obj, namespace: str | None) -> None:
        meta = obj["metadata"]
        if namespace is None:
            raise bad_request("the namespace of the object must be set in the request path")
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        meta["namespace"] = namespace
        ns = self.store.get(NAMESPACES, "", namespace)
        if ns is None:
            raise not_found("", NAMESPACES, namespace)
        if ns["metadata"].get("deletionTimestamp"):
            name = str(meta.get("name") or meta.get("generateName") or "")
            error = forbidden(
                kind.group,
                kind.plural,
                name,
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
            )
            assert error.details is not None
            error.details["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise error

    def _default_create(self, kind: Kind, obj: Obj) -> None:
        """Defaults and the built-in mutating admission, before any webhook sees the object."""
        if kind.key == PODS:
            admission.default_pod(obj)
            admission.admit_priority(obj, self._priority_class, self._default_priority_class)
        elif kind.key == NAMESPACES:
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["status"] = {"phase": "Active"}
        elif kind.key == PRIORITY_CLASSES:
            obj.setdefault("preemptionPolicy", admission.PreemptLowerPriority)
        elif kind.key in (webhooks.MUTATING, webhooks.VALIDATING):
            webhooks.default_configuration(obj, mutating=kind.key == webhooks.MUTATING)
        elif kind.from_crd and kind.schema is not None:
            apply_schema_defaults(obj, kind.schema)
        if kind.strategy is not None:
            kind.strategy.prepare_for_create(obj)
        if kind.key == storage_admission.PVCS:
            storage_admission.default_storage_class(obj, self.store)

    @staticmethod
    def _identify(pending: _Pending) -> None:
        """A new object's uid and creationTimestamp, given after mutating admission and before
        validation as kube's BeforeCreate gives them, then what its kind derives from them."""
        if pending.old is not None:
            return
        meta = pending.obj["metadata"]
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if pending.kind.after_uid is not None:
            pending.kind.after_uid(pending.obj)

    def _validate_write(self, pending: _Pending) -> None:
        """Validation after mutation: the kind's own rules, then a CRD's schema."""
        kind, obj, old = pending.kind, pending.obj, pending.old
        if old is None:
            if kind.key == PODS:
                admission.validate_pod(obj)
            if kind.validator is not None:
                kind.validator.validate_create(obj)
        else:
            self._validate_update(kind, old, obj)
        errors: list[FieldError] = []
        if kind.from_crd and kind.schema is not None:
            errors = compiled_schema(kind.schema).validate(obj, old)
        elif kind.key == CRDS:
            errors = structural_errors(obj)
        elif kind.key in (webhooks.MUTATING, webhooks.VALIDATING):
            errors = webhooks.configuration_errors(obj)
        if errors:
            raise invalid(kind.group, kind.kind, pending.name, errors)

    def _prune(self, kind: Kind, obj: Obj, options: WriteOptions) -> None:
        """Drop fields a CRD's schema does not declare; `fieldValidation` says what to tell."""
        if not kind.from_crd or kind.schema is None:
            return
        unknown = compiled_schema(kind.schema).prune(obj)
        if not unknown:
            return
        messages = [f'unknown field "{path}"' for path in unknown]
        if options.field_validation == "Strict":
            raise bad_request("strict decoding error: " + ", ".join(messages))
        if options.field_validation == "Warn":
            options.warnings.extend(messages)

    def _reconcile_patched(self, kind: Kind, obj: Obj) -> None:
        # a webhook's patch is pruned and defaulted again, silently, as kube does
        if kind.from_crd and kind.schema is not None:
            compiled_schema(kind.schema).prune(obj)
            apply_schema_defaults(obj, kind.schema)

    async def _admit(self, pending: _Pending, operation: str, options: WriteOptions) -> None:
        """Mutating webhooks, validation, validating webhooks: kube's order for one write."""
        attrs = webhooks.AdmissionAttributes(
            kind=pending.kind,
            operation=operation,
            namespace=pending.namespace,
            name=pending.name,
            subresource=pending.subresource,
            object=pending.obj,
            old_object=pending.old,
            user=options.user,
            options=options.review_options(),
        )
        hide_namespace = not pending.namespace_in_body and pending.namespace is not None
        if hide_namespace:
            pending.obj["metadata"].pop("namespace", None)
        try:
            await self.webhooks.mutate(
                attrs, lambda obj: self._reconcile_patched(pending.kind, obj)
            )
            if hide_namespace:
                pending.obj["metadata"]["namespace"] = pending.namespace
            self._identify(pending)
            self._validate_write(pending)
            await self.webhooks.validate(attrs)
        finally:
            if hide_namespace:
                pending.obj["metadata"]["namespace"] = pending.namespace
            options.warnings.extend(attrs.warnings)

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
        if not self.webhooks.active():
            return
        old = self.store.get(kind.key, namespace or "", name) if operation != "CREATE" else None
        attrs = webhooks.AdmissionAttributes(
            kind=kind,
            operation=operation,
            namespace=namespace,
            name=name,
            subresource=subresource,
            object=obj,
            old_object=old,
            user=options.user,
            options=options.review_options(operation),
            object_kind=object_kind,
        )
        try:
            await self.webhooks.mutate(attrs, lambda _obj: None)
            await self.webhooks.validate(attrs)
        finally:
            options.warnings.extend(attrs.warnings)

    def _priority_class(self, name: str) -> Obj | None:
        return self.store.get(PRIORITY_CLASSES, "", name)

    def _default_priority_class(self) -> Obj | None:
        defaults = [pc for pc in self.store.iter_all(PRIORITY_CLASSES) if pc.get("globalDefault")]
        if not defaults:
            return None
        # with several defaults the real admission picks the lowest value
        return min(defaults, key=lambda pc: int(pc.get("value", 0)))

    def _establish_crd(self, crd: Obj) -> Obj:
        for added in self.registry.add_crd(crd)[:1]:
            # a new resource's cacher starts now, from an empty list
            self.store.start_watch_cache(added.key)
        names = (crd.get("spec") or {}).get("names") or {}
        accepted = dict(names)
        accepted.setdefault("singular", str(names.get("kind", "")).lower())
        accepted.setdefault("listKind", f"{names.get('kind', '')}List")
        stamp = now_rfc3339()
        new = dict(crd)
        new["metadata"] = dict(crd["metadata"])
        new["status"] = {
            "acceptedNames": accepted,
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "reason": "NoConflicts",
                    "message": "no conflicts found",
                    "lastTransitionTime": stamp,
                },
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                    "lastTransitionTime": stamp,
                },
            ],
            "storedVersions": [
                v["name"] for v in (crd.get("spec") or {}).get("versions") or [] if v.get("storage")
            ],
        }
        return self.store.put(CRDS, new, "MODIFIED")

    # -- update and patch ----------------------------------------------------

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
        pending = self._prepare_update(
            kind, namespace, name, body, subresource, options or WriteOptions()
        )
        self._validate_write(pending)
        return self._commit_replace(pending)

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
        pending = self._prepare_patch(
            kind, namespace, name, content_type, patch, subresource, options or WriteOptions()
        )
        self._validate_write(pending)
        return self._commit_replace(pending)

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
        if not self.webhooks.active():
            return self.update(kind, namespace, name, body, subresource, options)
        return await self._replace_admitted(
            lambda: self._prepare_update(kind, namespace, name, clone(body), subresource, options),
            options,
        )

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
        if not self.webhooks.active():
            return self.patch(kind, namespace, name, content_type, patch, subresource, options)
        return await self._replace_admitted(
            lambda: self._prepare_patch(
                kind, namespace, name, content_type, clone(patch), subresource, options
            ),
            options,
        )

    async def _replace_admitted(
        self, prepare: Callable[[], _Pending], options: WriteOptions
    ) -> Obj:
        # the object may change while webhooks answer: like kube's GuaranteedUpdate, try
        # again from the fresh object, unless the client named the resourceVersion it meant
        for _attempt in range(_ADMITTED_RETRIES):
            pending = prepare()
            warnings_before = len(options.warnings)
            await self._admit(pending, "UPDATE", options)
            try:
                return self._commit_replace(pending)
            except _StaleWrite:
                if pending.expected_rv is not None:
                    raise conflict(
                        pending.kind.group, pending.kind.plural, pending.name, STALE
                    ) from None
                del options.warnings[warnings_before:]
        raise conflict(pending.kind.group, pending.kind.plural, pending.name, STALE)

    def _prepare_update(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        body: Any,
        subresource: str | None,
        options: WriteOptions,
    ) -> _Pending:
        current = self._current(kind, namespace, name)
        obj = self._decoded_object(kind, body)
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
        self._prune(kind, obj, options)
        return self._prepare_replace(kind, current, obj, subresource, rv or None, options)

    def _prepare_patch(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        content_type: str,
        patch: Any,
        subresource: str | None,
        options: WriteOptions,
    ) -> _Pending:
        current = self._current(kind, namespace, name)
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
        obj = self._decoded_object(kind, patched)
        self._prune(kind, obj, options)
        return self._prepare_replace(kind, current, obj, subresource, wanted_rv, options)

    def _current(self, kind: Kind, namespace: str | None, name: str) -> Obj:
        current = self.store.get(kind.key, namespace or "", name)
        if current is None:
            raise not_found(kind.group, kind.plural, name)
        return current

    def _prepare_replace(
        self,
        kind: Kind,
        current: Obj,
        obj: Obj,
        subresource: str | None,
        expected_rv: str | None,
        options: WriteOptions,
    ) -> _Pending:
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
        if kind.strategy is not None:
            kind.strategy.prepare_for_update(current, new, subresource)
        if kind.from_crd and kind.schema is not None:
            apply_schema_defaults(new, kind.schema)
        return _Pending(
            kind,
            namespace_of(current) or None,
            name,
            new,
            current,
            subresource,
            expected_rv,
            options,
        )

    def _commit_replace(self, pending: _Pending) -> Obj:
        kind, new = pending.kind, pending.obj
        assert pending.old is not None
        old_meta = pending.old["metadata"]
        current = self.store.get(kind.key, pending.namespace or "", pending.name)
        if current is None:
            raise not_found(kind.group, kind.plural, pending.name)
        if current["metadata"]["resourceVersion"] != old_meta["resourceVersion"]:
            raise _StaleWrite()
        if _spec_of(new) != _spec_of(current):
            new["metadata"]["generation"] = int(old_meta.get("generation", 1)) + 1
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if new == current:
            # a no-op write does not reach etcd: no new resourceVersion, no event
            return self._as_version(kind, current)
        if pending.options.dry_run:
            return self._as_version(kind, new)
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
            self._remove(kind, stored)
        return self._as_version(kind, stored)

    def _validate_update(self, kind: Kind, current: Obj, new: Obj) -> None:
        name = name_of(current)
        _check_annotations_size(kind, new)
        old_fin = set(current["metadata"].get("finalizers") or [])
        new_fin = set(new["metadata"].get("finalizers") or [])
        if current["metadata"].get("deletionTimestamp") and new_fin - old_fin:
            raise invalid(
                kind.group,
                kind.kind,
                name,
                [
                    FieldError(
                        "metadata.finalizers",
                        "Forbidden: no new finalizers can be added if the object is being deleted, "
                        f"found new finalizers {sorted(new_fin - old_fin)}",
                        "FieldValueForbidden",
                    )
                ],
            )
        if kind.key == PODS:
            admission.validate_pod_update(current, new)
        if kind.validator is not None:
            kind.validator.validate_update(current, new)

    # -- subresources --------------------------------------------------------

    def bind(self, namespace: str, name: str, body: Any) -> None:
        """pods/binding: set spec.nodeName and PodScheduled=True; 409 if already bound."""
        if not isinstance(body, dict):
            raise bad_request("Binding body must be a JSON object")
        target = body.get("target") or {}
        node = target.get("name")
        if not node:
            raise invalid(
                "",
                "Binding",
                name,
                [FieldError("target.name", "Required value", "FieldValueRequired")],
            )
        pod = self.store.get(PODS, namespace, name)
        if pod is None:
            raise not_found("", PODS, name)
        uid = (body.get("metadata") or {}).get("uid")
        if uid and uid != pod["metadata"]["uid"]:
            raise conflict(
                "",
                "pods/binding",
                name,
                f"Precondition failed: UID in precondition: {uid}, UID in object "
                f"meta: {pod['metadata']['uid']}",
            )
        spec = pod["spec"]
        if pod["metadata"].get("deletionTimestamp"):
            raise conflict(
                "",
                "pods/binding",
                name,
                f"pod {name} is being deleted, cannot be assigned to a host",
            )
        if spec.get("nodeName"):
            raise conflict(
                "",
                "pods/binding",
                name,
                f'pod {name} is already assigned to node "{spec["nodeName"]}"',
            )
        # shallow copies of the parts that change: the old object stays intact for history
        new = dict(pod)
        new["metadata"] = dict(pod["metadata"])
        annotations = (body.get("metadata") or {}).get("annotations")
        if annotations:
            new["metadata"]["annotations"] = {
                **(pod["metadata"].get("annotations") or {}),
                **annotations,
            }
        new["spec"] = dict(spec, nodeName=node)
        status = dict(pod.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": now_rfc3339(),
            }
        )
        status["conditions"] = conditions
        new["status"] = status
        self.store.put(PODS, new, "MODIFIED")

    def evict(self, namespace: str, name: str, body: Any, *, dry_run: bool = False) -> None:
        """pods/eviction as kube-apiserver serves it: a pod that is Pending, finished or
        being deleted goes at once; else its PodDisruptionBudget (at most one) must allow
        it (sim/disruption.py), the pod gets the DisruptionTarget condition and is deleted
        gracefully. `dry_run` (the query's or deleteOptions' dryRun=All) checks only."""
        pod = self.store.get(PODS, namespace, name)
        if pod is None:
            raise not_found("", PODS, name)
        body = body if isinstance(body, dict) else {}
        raw_options = body.get("deleteOptions") or {}
        dry_run = dry_run or raw_options.get("dryRun") == ["All"]
        options = DeleteOptions.from_body(raw_options, {})
        phase = (pod.get("status") or {}).get("phase")
        if not (pod["metadata"].get("deletionTimestamp") or phase in _NO_BUDGET_PHASES):
            for pdb in disruption.budgets_of(self.store, pod):
                disruption.check_eviction(self.store, pod, pdb, dry_run=dry_run)
            if not dry_run:
                self._mark_disruption_target(pod)
        if dry_run:
            if options.uid is not None and options.uid != pod["metadata"]["uid"]:
                # what the delete would answer: its precondition fails
                raise conflict(
                    "",
                    PODS,
                    name,
                    f"Precondition failed: UID in precondition: {options.uid}, UID in object "
                    f"meta: {pod['metadata']['uid']}",
                )
            return
        self.delete(self.kind("", "v1", PODS), namespace, name, options)

    def _mark_disruption_target(self, pod: Obj) -> None:
        # As kube-apiserver since PodDisruptionConditions: the owner learns why it goes.
        new = clone(pod)
        status = new.setdefault("status", {})
        conditions = [
            c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"
        ]
        conditions.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting",
                "lastProbeTime": None,
                "lastTransitionTime": now_rfc3339(),
            }
        )
        status["conditions"] = conditions
        self.store.put(PODS, new, "MODIFIED")

    # -- delete --------------------------------------------------------------

    def delete(
        self, kind: Kind, namespace: str | None, name: str, options: DeleteOptions | None = None
    ) -> tuple[Obj, bool]:
        """Delete (gracefully for bound pods); returns the object and whether it is gone."""
        options = options or DeleteOptions()
        current = self._current(kind, namespace, name)
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
                return self._as_version(kind, current), False
        if grace == 0 and not finalizers:
            return self._remove(kind, current), True
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
            return self._remove(kind, stored), True
        if stored is None:
            return self._as_version(kind, new), True
        return self._as_version(kind, stored), False

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

    def _remove(self, kind: Kind, obj: Obj) -> Obj:
        gone = self.store.remove(kind.key, namespace_of(obj), name_of(obj))
        if gone is None:
            return obj
        if kind.key == CRDS:
            self._drop_crd(gone)
        self._collect_garbage(gone)
        return self._as_version(kind, gone)

    def _drop_crd(self, crd: Obj) -> None:
        served = [
            k
            for k in self.registry.all_kinds()
            if k.from_crd
            and k.group == (crd.get("spec") or {}).get("group")
            and k.plural == ((crd.get("spec") or {}).get("names") or {}).get("plural")
        ]
        self.registry.remove_crd(crd)
        if served:
            self.store.drop_watch_cache(served[0].key)
            for obj in list(self.store.iter_all(served[0].key)):
                self.store.remove(served[0].key, namespace_of(obj), name_of(obj))

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
            self._remove(kind, stored)
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
        self._remove(self.kind("", "v1", NAMESPACES), ns)

    def delete_collection(
        self, kind: Kind, namespace: str | None, options: ListOptions, delete_options: DeleteOptions
    ) -> Obj:
        """Delete every object a list with the same selectors would return."""
        listed = self.list(kind, namespace, options)
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


def _spec_of(obj: Obj) -> Obj:
    """Everything but metadata and status: what a generation bump tracks."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "kind", "apiVersion")}


def _encode_continue(rv: int, start: str) -> str:
    token = {"v": "meta.k8s.io/v1", "rv": rv, "start": start}
    return base64.urlsafe_b64encode(_encode(token)).decode()


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        decoded = _decode(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return int(decoded["rv"]), str(decoded["start"])
    except (ValueError, KeyError, TypeError, msgspec.DecodeError):
        raise bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion "
            "(version meta.k8s.io/v1)"
        ) from None


# apimachinery's TotalAnnotationSizeLimitB: keys and values of one object's annotations
ANNOTATIONS_SIZE_LIMIT = 256 * 1024


def _check_annotations_size(kind: Kind, obj: Obj) -> None:
    """422 when an object's annotations total more than 256 KiB, as ValidateObjectMeta does."""
    annotations = obj["metadata"].get("annotations")
    if not isinstance(annotations, dict):
        return
    total = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
    if total > ANNOTATIONS_SIZE_LIMIT:
        raise invalid(
            kind.group,
            kind.kind,
            str(obj["metadata"].get("name") or ""),
            [
                FieldError(
                    "metadata.annotations",
                    f"Too long: must have at most {ANNOTATIONS_SIZE_LIMIT} bytes",
                    "FieldValueTooLong",
                )
            ],
        )
