"""The rules every write's object meets, whatever its verb: decoded as its kind, unknown
fields of a custom resource pruned, a new object's defaults and the built-in admission, its
identity (uid, creationTimestamp), then validation: the kind's own rules, a CRD's schema."""

from __future__ import annotations

import uuid
from typing import Any

from muster_sim.apiserver import webhooks
from muster_sim.apiserver.admission_plugins import (
    PVCS,
    PreemptLowerPriority,
    admit_podgroup_priority,
    admit_priority,
    check_workload_exists,
    default_priority_class,
    default_storage_class,
    protect_podgroup,
)
from muster_sim.apiserver.options import WriteOptions
from muster_sim.apiserver.resources import (
    CRDS,
    NAMESPACES,
    NATIVE_PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    Kind,
    apply_schema_defaults,
)
from muster_sim.apiserver.store import Store, name_of
from muster_sim.errors import FieldError, bad_request, forbidden, invalid, not_found
from muster_sim.timestamps import now_rfc3339
from muster_sim.validation import fields, typed_decode
from muster_sim.validation.pods import default_pod, validate_pod, validate_pod_update
from muster_sim.validation.schema import compiled as compiled_schema
from muster_sim.validation.schema import structural_errors
from muster_sim.validation.strategy import WriteContext

Obj = dict[str, Any]

# apimachinery's TotalAnnotationSizeLimitB: keys and values of one object's annotations
ANNOTATIONS_SIZE_LIMIT = 256 * 1024


def decoded_object(kind: Kind, body: Any) -> Obj:
    """The body as an object of `kind`: a JSON object whose kind matches, its JSON types
    checked as the Go decoder checks a built-in kind's."""
    if not isinstance(body, dict):
        raise bad_request(f"Object '{kind.kind}' is invalid: expected a JSON object")
    obj: Obj = body
    if obj.get("kind") and obj["kind"] != kind.kind:
        raise bad_request(
            f"the kind in the data ({obj['kind']}) does not match the expected kind ({kind.kind})"
        )
    obj["kind"] = kind.kind
    obj["apiVersion"] = kind.api_version
    if not kind.from_crd:
        typed_decode.check(kind.kind, kind.api_version, obj)
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    return obj


def check_namespace(store: Store, kind: Kind, obj: Obj, namespace: str | None) -> None:
    """A namespaced object goes into the namespace of its path, which must exist and not be
    terminating."""
    meta = obj["metadata"]
    if namespace is None:
        raise bad_request("the namespace of the object must be set in the request path")
    if meta.get("namespace") and meta["namespace"] != namespace:
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    meta["namespace"] = namespace
    ns = store.get(NAMESPACES, "", namespace)
    if ns is None:
        raise not_found("", NAMESPACES, namespace)
    if ns["metadata"].get("deletionTimestamp"):
        name = str(meta.get("name") or meta.get("generateName") or "")
        error = forbidden(
            kind.group,
            kind.plural,
            name,
            f"unable to create new content in namespace {namespace} because it is being terminated",
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


def check_annotations_size(kind: Kind, obj: Obj) -> None:
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
            [fields.too_long("metadata.annotations", ANNOTATIONS_SIZE_LIMIT)],
        )


def prune(kind: Kind, obj: Obj, options: WriteOptions) -> None:
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


def default_created(store: Store, kind: Kind, obj: Obj) -> None:
    """Defaults and the built-in mutating admission, before any webhook sees the object."""
    if kind.key == PODS:
        default_pod(obj)
        admit_priority(
            obj,
            lambda name: store.get(PRIORITY_CLASSES, "", name),
            lambda: default_priority_class(store),
        )
    elif kind.key == NAMESPACES:
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}
    elif kind.key == PRIORITY_CLASSES:
        obj.setdefault("preemptionPolicy", PreemptLowerPriority)
    elif kind.key == NATIVE_PODGROUPS:
        admit_podgroup_priority(
            obj,
            lambda name: store.get(PRIORITY_CLASSES, "", name),
            lambda: default_priority_class(store),
            kind.version,
        )
        protect_podgroup(obj)
    elif kind.key in (webhooks.MUTATING, webhooks.VALIDATING):
        webhooks.default_configuration(obj, mutating=kind.key == webhooks.MUTATING)
    elif kind.from_crd and kind.schema is not None:
        apply_schema_defaults(obj, kind.schema)
    if kind.strategy is not None:
        kind.strategy.prepare_for_create(obj)
    if kind.key == PVCS:
        default_storage_class(obj, store)


def drop_disabled_pod_fields(pod: Obj, old: Obj | None, native_served: bool) -> None:
    """A pod's spec.schedulingGroup is dropped, as the server does with its GenericWorkload
    gate off (here: the native API not served, --native-api none), unless the stored pod
    already uses it."""
    spec = pod.get("spec")
    if native_served or not isinstance(spec, dict) or "schedulingGroup" not in spec:
        return
    if old is not None and (old.get("spec") or {}).get("schedulingGroup") is not None:
        return
    del spec["schedulingGroup"]


def identify(kind: Kind, obj: Obj) -> None:
    """A new object's uid and creationTimestamp, given after mutating admission and before
    validation as kube's BeforeCreate gives them, then what its kind derives from them."""
    meta = obj["metadata"]
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now_rfc3339()
    if kind.after_uid is not None:
        kind.after_uid(obj)


def validate(
    store: Store,
    kind: Kind,
    name: str,
    obj: Obj,
    old: Obj | None,
    context: WriteContext | None = None,
) -> None:
    """Validation after mutation: the kind's own rules (with the write's `context` for kinds
    that read it), then a CRD's schema; and the validating admission plugins of a new object
    (PodGroupWorkloadExists)."""
    context = context or WriteContext()
    if old is None:
        if kind.key == PODS:
            validate_pod(obj)
        if kind.request_validator is not None:
            kind.request_validator.validate_request(context, None, obj)
        elif kind.validator is not None:
            kind.validator.validate_create(obj)
        if kind.key == NATIVE_PODGROUPS:
            check_workload_exists(store, obj, kind.version)
    else:
        _validate_update(kind, old, obj, context)
    errors: list[FieldError] = []
    if kind.from_crd and kind.schema is not None:
        errors = compiled_schema(kind.schema).validate(obj, old)
    elif kind.key == CRDS:
        errors = structural_errors(obj)
    elif kind.key in (webhooks.MUTATING, webhooks.VALIDATING):
        errors = webhooks.configuration_errors(obj)
    if errors:
        raise invalid(kind.group, kind.kind, name, errors)


def reconcile_patched(kind: Kind, obj: Obj) -> None:
    """A webhook's patch is pruned and defaulted again, silently, as kube does."""
    if kind.from_crd and kind.schema is not None:
        compiled_schema(kind.schema).prune(obj)
        apply_schema_defaults(obj, kind.schema)


def _validate_update(kind: Kind, current: Obj, new: Obj, context: WriteContext) -> None:
    """What no update may do (annotations over 256 KiB, a new finalizer on an object being
    deleted), then the kind's own update rules."""
    name = name_of(current)
    check_annotations_size(kind, new)
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
        validate_pod_update(current, new)
    if kind.request_validator is not None:
        kind.request_validator.validate_request(context, current, new)
    elif kind.validator is not None:
        kind.validator.validate_update(current, new)
