"""ResourceClaims and ResourceClaimTemplates as kube-apiserver 1.36 defaults and validates them.

A claim's spec is validated on create and never changes after (a template's too). Its status is
written through the status subresource only, under the rules that keep an allocation honest:
`allocation` goes from unset to set or back, never to another value; `reservedFor` (at most 256
consumers, one per uid) needs an allocation, and takes no new consumer once the claim is being
deleted; `devices` may only describe allocated devices.

Two checks read more than the objects, from the write's context. Admin access to devices
needs the namespace labelled `resource.kubernetes.io/admin-access: "true"`. And a status
write that changes `allocation` or `reservedFor` needs, besides `resourceclaims/status`, the
requester's permission for the same verb on the synthetic subresource `resourceclaims/binding`
cluster-wide (DRAResourceClaimGranularStatusAuthorization, on in 1.36), and one that changes
`devices` needs `arbitrary-node:<verb>` on `resourceclaims/driver` for each driver it touches;
a missing permission is a Forbidden field error inside the 422, as the real server words it.
"""

from __future__ import annotations

import uuid
from typing import Any

from muster_sim.errors import FieldError
from muster_sim.validation import fields
from muster_sim.validation.dra import go_structs
from muster_sim.validation.dra.claim_specs import (
    claim_spec_errors,
    configuration_errors,
    default_claim_spec,
    default_tolerations,
    label_value_errors,
    list_errors,
    raw_object_errors,
    request_names,
    request_ref_errors,
    request_refs_errors,
    unique_list_errors,
)
from muster_sim.validation.dra.slices import (
    binding_condition_errors,
    driver_name_errors,
    pool_name_errors,
)
from muster_sim.validation.names import label_problems, qualified_name_errors
from muster_sim.validation.object_meta import OBJECT_META_FIELDS
from muster_sim.validation.selector_fields import node_selector_errors
from muster_sim.validation.strategy import KindStrategy, Permission, WriteContext

Obj = dict[str, Any]

RESOURCE_GROUP = "resource.k8s.io"
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
MAX_RESERVED_FOR = 256
MAX_RESULTS = 32
MAX_ALLOCATION_CONFIGS = 64
MAX_DEVICE_CONDITIONS = 8
MAX_DEVICE_DATA = 10 * 1024
MAX_INTERFACE_NAME = 256
MAX_HARDWARE_ADDRESS = 128
MAX_DEVICE_IPS = 16
CONFIG_SOURCES = ("FromClaim", "FromClass")

_ADMIN_NEEDS_LABEL = (
    f"admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label on the containing "
    "namespace"
)
_BINDING = (
    'changing status.allocation or status.reservedFor requires resource="resourceclaims/binding", '
    'verb="{verb}" permission: {why}'
)
_DRIVER = (
    'changing status.devices requires resource="resourceclaims/driver", verb="[{verb}]" '
    "permission: {why}"
)
_TEMPLATE_META_ALLOWED = ("labels", "annotations")


class ResourceClaimStrategy(KindStrategy):
    """ResourceClaim: spec defaults and rules, immutable spec, the status rules and the
    binding authorization of status writes."""

    group = RESOURCE_GROUP
    kind = "ResourceClaim"

    def _default(self, obj: Obj) -> None:
        default_claim_spec(obj.setdefault("spec", {}))
        allocation = (obj.get("status") or {}).get("allocation")
        if isinstance(allocation, dict):
            for result in (allocation.get("devices") or {}).get("results") or []:
                if isinstance(result, dict):
                    default_tolerations(result.get("tolerations"))

    def prepare_for_create(self, obj: Obj) -> None:
        """Defaults; a status sent on create is dropped."""
        obj["status"] = {}
        self._default(obj)

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        """Defaults; a status write drops the status of devices it deallocates."""
        self._default(new)
        if subresource == "status":
            _drop_deallocated_device_status(old, new)

    def validate_request(self, context: WriteContext, old: Obj | None, new: Obj) -> None:
        """422 listing every error: admin access and the spec on create, an immutable spec on
        update, the status rules and their permissions on a status write."""
        if old is None:
            errors = admin_access_errors(context, new, "spec.devices.requests")
            errors += claim_spec_errors(new.get("spec"), "spec")
        elif context.subresource == "status":
            errors = status_update_errors(context, old, new)
        else:
            errors = immutable_errors(
                old.get("spec"), new.get("spec"), "spec", go_structs.CLAIM_SPEC
            )
        self._refuse(new, errors)


class ResourceClaimTemplateStrategy(KindStrategy):
    """ResourceClaimTemplate: the claim spec it stamps out, its template metadata, and an
    immutable spec."""

    group = RESOURCE_GROUP
    kind = "ResourceClaimTemplate"

    def _default(self, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("metadata", {})
            default_claim_spec(spec.setdefault("spec", {}))

    def validate_request(self, context: WriteContext, old: Obj | None, new: Obj) -> None:
        """422 listing every error: admin access, template metadata and claim spec on create,
        an immutable spec on update."""
        spec = new.get("spec") or {}
        if old is None:
            # kube names the template's requests as if they were a claim's (its shared check)
            errors = admin_access_errors(context, new, "spec.devices.requests")
            errors += template_meta_errors(spec.get("metadata"), "spec.metadata")
            errors += claim_spec_errors(spec.get("spec"), "spec.spec")
        else:
            errors = immutable_errors(
                old.get("spec"), new.get("spec"), "spec", go_structs.TEMPLATE_SPEC
            )
        self._refuse(new, errors)


# -- create ----------------------------------------------------------------------


def admin_access_errors(context: WriteContext, obj: Obj, path: str) -> list[FieldError]:
    """Forbidden for the first request asking admin access in a namespace not labelled for it."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "ResourceClaimTemplate":
        spec = spec.get("spec") or {}
    requests = (spec.get("devices") or {}).get("requests") or []
    for index, request in enumerate(requests):
        exactly = request.get("exactly") if isinstance(request, dict) else None
        if isinstance(exactly, dict) and exactly.get("adminAccess") is True:
            namespace = str(obj["metadata"].get("namespace") or "")
            if not _admin_namespace(context, namespace):
                return [fields.forbidden(f"{path}[{index}].adminAccess", _ADMIN_NEEDS_LABEL)]
            return []
    return []


def _admin_namespace(context: WriteContext, namespace: str) -> bool:
    labels = context.namespace_labels(namespace) or {}
    return labels.get(ADMIN_ACCESS_LABEL) == "true"


def template_meta_errors(meta: Any, path: str) -> list[FieldError]:
    """ValidateTemplateObjectMeta: valid labels and annotations, and no other field set."""
    meta = meta if isinstance(meta, dict) else {}
    errors: list[FieldError] = []
    for key in meta.get("annotations") or {}:
        errors += qualified_name_errors(str(key), f"{path}.annotations")
    for key, value in (meta.get("labels") or {}).items():
        errors += qualified_name_errors(str(key), f"{path}.labels")
        errors += label_value_errors(str(value), f"{path}.labels")
    for name in OBJECT_META_FIELDS:
        if name not in _TEMPLATE_META_ALLOWED and meta.get(name) not in (None, "", 0, [], {}):
            errors.append(fields.forbidden(f"{path}.{name}", "cannot be set"))
    return errors


# -- update ----------------------------------------------------------------------


def immutable_errors(old: Any, new: Any, path: str, shape: go_structs.Shape) -> list[FieldError]:
    """ "field is immutable", the new value printed as kube prints its Go struct."""
    if _semantic(old) == _semantic(new):
        return []
    return [
        FieldError(path, f"Invalid value: {go_structs.go_json(new, shape)}: field is immutable")
    ]


def _semantic(value: Any) -> Any:
    """A value as apimachinery's semantic equality compares it: nil and empty alike."""
    if isinstance(value, dict):
        kept = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def status_update_errors(context: WriteContext, old: Obj, new: Obj) -> list[FieldError]:
    """A status write's errors in kube's order: admin access of new results, the binding and
    driver permissions, then the status rules."""
    status = new.get("status") or {}
    old_status = old.get("status") or {}
    errors = _admin_status_errors(context, new, old_status, status)
    errors += _binding_errors(context, old_status, status)
    if status.get("allocation") is not None:
        errors += _driver_errors(context, new, old_status, status)
    deleting = bool(new["metadata"].get("deletionTimestamp"))
    names = request_names(new.get("spec") or {})
    return errors + claim_status_errors(status, old_status, deleting, names)


def _admin_status_errors(
    context: WriteContext, claim: Obj, old_status: Obj, status: Obj
) -> list[FieldError]:
    if _admin_result(old_status) is not None:
        return []
    index = _admin_result(status)
    if index is None:
        return []
    namespace = str(claim["metadata"].get("namespace") or "")
    if _admin_namespace(context, namespace):
        return []
    path = f"status.allocation.devices.results[{index}].adminAccess"
    return [fields.forbidden(path, _ADMIN_NEEDS_LABEL)]


def _admin_result(status: Obj) -> int | None:
    allocation = status.get("allocation") or {}
    for index, result in enumerate((allocation.get("devices") or {}).get("results") or []):
        if isinstance(result, dict) and result.get("adminAccess") is True:
            return index
    return None


def _binding_errors(context: WriteContext, old_status: Obj, status: Obj) -> list[FieldError]:
    unchanged = _semantic(old_status.get("allocation")) == _semantic(
        status.get("allocation")
    ) and _semantic(old_status.get("reservedFor")) == _semantic(status.get("reservedFor"))
    if unchanged:
        return []
    permission = Permission(context.verb, RESOURCE_GROUP, "resourceclaims", "binding")
    why = context.refusal(permission)
    if why is None:
        return []
    return [fields.forbidden("status.allocation", _BINDING.format(verb=context.verb, why=why))]


def _driver_errors(
    context: WriteContext, claim: Obj, old_status: Obj, status: Obj
) -> list[FieldError]:
    before = {_device_key(d): d for d in old_status.get("devices") or []}
    drivers: set[str] = set()
    for device in status.get("devices") or []:
        previous = before.pop(_device_key(device), None)
        if previous is None or _semantic(previous) != _semantic(device):
            drivers.add(str(device.get("driver", "")))
    drivers.update(str(d.get("driver", "")) for d in before.values())
    verb = f"arbitrary-node:{context.verb}"
    namespace = str(claim["metadata"].get("namespace") or "")
    errors: list[FieldError] = []
    for driver in sorted(drivers):
        permission = Permission(verb, RESOURCE_GROUP, "resourceclaims", "driver", namespace, driver)
        why = context.refusal(permission)
        if why is not None:
            errors.append(fields.forbidden("status.devices", _DRIVER.format(verb=verb, why=why)))
    return errors


def claim_status_errors(
    status: Obj, old_status: Obj, deleting: bool, names: dict[str, set[str] | None]
) -> list[FieldError]:
    """validateResourceClaimStatusUpdate: consumers, device statuses, then the allocation."""
    errors = unique_list_errors(
        status.get("reservedFor"),
        MAX_RESERVED_FOR,
        "status.reservedFor",
        _consumer_errors,
        lambda consumer: str(consumer.get("uid", "")),
    )
    allocation = status.get("allocation")
    allocated = {
        _device_key(result)
        for result in ((allocation or {}).get("devices") or {}).get("results") or []
    }
    errors += unique_list_errors(
        status.get("devices"),
        -1,
        "status.devices",
        lambda device, path: _device_status_errors(device, path, allocated),
        _device_key,
        _shown_device,
    )
    reserved = status.get("reservedFor") or []
    if reserved:
        if allocation is None:
            errors.append(
                fields.forbidden(
                    "status.reservedFor", "may not be specified when `allocated` is not set"
                )
            )
        elif deleting and any(c not in (old_status.get("reservedFor") or []) for c in reserved):
            errors.append(
                fields.forbidden(
                    "status.reservedFor",
                    "new entries may not be added while `deallocationRequested` or "
                    "`deletionTimestamp` are set",
                )
            )
    old_allocation = old_status.get("allocation")
    if old_allocation is not None and allocation is not None:
        errors += immutable_errors(
            old_allocation, allocation, "status.allocation", go_structs.ALLOCATION
        )
    elif allocation is not None:
        errors += allocation_errors(allocation, "status.allocation", names)
    return errors


def _consumer_errors(consumer: Obj, path: str) -> list[FieldError]:
    return [
        fields.required(f"{path}.{key}")
        for key in ("resource", "name", "uid")
        if not consumer.get(key)
    ]


def allocation_errors(
    allocation: Obj, path: str, names: dict[str, set[str] | None]
) -> list[FieldError]:
    """validateAllocationResult for a new allocation: its results, config and node selector."""
    devices = allocation.get("devices") or {}
    at = f"{path}.devices"
    errors = list_errors(
        devices.get("results"),
        MAX_RESULTS,
        f"{at}.results",
        lambda result, p: _result_errors(result, p, names),
    )
    errors += list_errors(
        devices.get("config"),
        MAX_ALLOCATION_CONFIGS,
        f"{at}.config",
        lambda config, p: _allocation_config_errors(config, p, names),
    )
    if allocation.get("nodeSelector") is not None:
        errors += node_selector_errors(allocation["nodeSelector"], f"{path}.nodeSelector")
    return errors


def _result_errors(result: Obj, path: str, names: dict[str, set[str] | None]) -> list[FieldError]:
    errors = request_ref_errors(result.get("request", ""), f"{path}.request", names)
    errors += driver_name_errors(str(result.get("driver") or ""), f"{path}.driver")
    errors += pool_name_errors(str(result.get("pool") or ""), f"{path}.pool")
    device = str(result.get("device") or "")
    errors += [fields.invalid(f"{path}.device", device, p) for p in label_problems(device)]
    errors += binding_condition_errors(result, path)
    if result.get("shareID") is not None:
        errors += uid_errors(str(result["shareID"]), f"{path}.shareID")
    return errors


def _allocation_config_errors(
    config: Obj, path: str, names: dict[str, set[str] | None]
) -> list[FieldError]:
    source = config.get("source") or ""
    errors: list[FieldError] = []
    if not source:
        errors.append(fields.required(f"{path}.source"))
    elif source not in CONFIG_SOURCES:
        errors.append(fields.not_supported(f"{path}.source", source, CONFIG_SOURCES))
    errors += request_refs_errors(config.get("requests"), f"{path}.requests", names)
    return errors + configuration_errors(config, path)


def uid_errors(uid: str, path: str) -> list[FieldError]:
    """A shareID: a UUID in RFC 4122's normalized form (lowercase, with dashes)."""
    if len(uid) not in (32, 36, 38, 45):
        return [fields.invalid(path, uid, f"error validating uid: invalid UUID length: {len(uid)}")]
    try:
        uuid.UUID(uid)
    except ValueError:
        return [fields.invalid(path, uid, "error validating uid: invalid UUID format")]
    if len(uid) != 36 or uid != uid.lower():
        return [
            fields.invalid(
                path,
                uid,
                "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` "
                "with lowercase hexadecimal characters",
            )
        ]
    return []


def _device_status_errors(
    device: Obj, path: str, allocated: set[tuple[str, ...]]
) -> list[FieldError]:
    errors = driver_name_errors(str(device.get("driver") or ""), f"{path}.driver")
    errors += pool_name_errors(str(device.get("pool") or ""), f"{path}.pool")
    name = str(device.get("device") or "")
    errors += [fields.invalid(f"{path}.device", name, p) for p in label_problems(name)]
    if device.get("shareID") is not None:
        errors += uid_errors(str(device["shareID"]), f"{path}.shareID")
    key = _device_key(device)
    if key not in allocated:
        errors.append(
            FieldError(
                path,
                f"Invalid value: {_shown_device(key)}: must be an allocated device in the claim",
            )
        )
    conditions = device.get("conditions") or []
    if len(conditions) > MAX_DEVICE_CONDITIONS:
        errors.append(fields.too_many(f"{path}.conditions", len(conditions), MAX_DEVICE_CONDITIONS))
    if device.get("data") is not None:
        errors += raw_object_errors(device["data"], f"{path}.data", MAX_DEVICE_DATA)
    network = device.get("networkData")
    if isinstance(network, dict):
        errors += _network_errors(network, f"{path}.networkData")
    return errors


def _network_errors(network: Obj, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if len(str(network.get("interfaceName") or "")) > MAX_INTERFACE_NAME:
        errors.append(fields.too_long(f"{path}.interfaceName", MAX_INTERFACE_NAME))
    if len(str(network.get("hardwareAddress") or "")) > MAX_HARDWARE_ADDRESS:
        errors.append(fields.too_long(f"{path}.hardwareAddress", MAX_HARDWARE_ADDRESS))
    errors += unique_list_errors(
        network.get("ips"), MAX_DEVICE_IPS, f"{path}.ips", lambda ip, p: [], str
    )
    return errors


def _device_key(device: Any) -> tuple[str, ...]:
    """(driver, pool, device, shareID): what identifies an allocated device."""
    device = device if isinstance(device, dict) else {}
    return tuple(str(device.get(k) or "") for k in ("driver", "pool", "device", "shareID"))


def _shown_device(key: tuple[str, ...]) -> str:
    names = ("Driver", "Pool", "Device", "ShareID")
    return go_structs.go_json(
        dict(zip(names, key, strict=True)),
        go_structs.struct(*((n, n, go_structs.STRING) for n in names)),
    )


def _drop_deallocated_device_status(old: Obj, new: Obj) -> None:
    """The status of devices the write deallocates goes with them, as the server drops it."""
    status = new.get("status")
    if not isinstance(status, dict) or not status.get("devices"):
        return

    def allocated(obj: Obj) -> set[tuple[str, ...]]:
        allocation = (obj.get("status") or {}).get("allocation") or {}
        return {_device_key(r) for r in (allocation.get("devices") or {}).get("results") or []}

    gone = allocated(old) - allocated(new)
    kept = [d for d in status["devices"] if _device_key(d) not in gone]
    if kept:
        status["devices"] = kept
    else:
        status.pop("devices")
