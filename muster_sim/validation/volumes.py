"""Defaults, strategy resets and validation of the storage kinds, as kube-apiserver applies them.

PersistentVolumeClaims and PersistentVolumes (core/v1), StorageClasses, CSINodes and CSIDrivers
(storage.k8s.io/v1): the defaulting functions, the registry strategies' status resets, and the
field checks of pkg/apis/core/validation and pkg/apis/storage/validation a client can trip on,
in the real server's words and field paths.
"""

from __future__ import annotations

import json
import posixpath
import re
import time
from decimal import Decimal
from typing import Any

from muster_sim.errors import FieldError, bad_request, invalid
from muster_sim.validation.pods import QUANTITY_PATTERN, parse_quantity

Obj = dict[str, Any]

STORAGE_GROUP = "storage.k8s.io"
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
PV_RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
SC_RECLAIM_POLICIES = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
# every volume source a PersistentVolumeSpec may carry, in the order the real check visits them
PV_SOURCES = (
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cephfs",
    "iscsi",
    "cinder",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "scaleIO",
    "local",
    "storageos",
    "csi",
)
_HOST_PATH_TYPES = (
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
)
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_CSI_NODE_ID_MAX = 192
_NODE_ID_TOO_LONG = f"must be {_CSI_NODE_ID_MAX} characters or less"
_MAX_PARAMETERS = 512
_MAX_PARAMETER_BYTES = 256 * 1024

_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_SUBDOMAIN_RE = re.compile(f"^{_SUBDOMAIN}$")
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    f"for validation is '{_SUBDOMAIN}')"
)
_QUALIFIED = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_RE = re.compile(f"^{_QUALIFIED}$")
_QUALIFIED_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    f"validation is '{_QUALIFIED}')"
)

# the real server's words for the checks below
_IN_NEEDS_VALUES = "must be specified when `operator` is 'In' or 'NotIn'"
_EXISTS_NO_VALUES = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
_GT_ONE_VALUE = "must be specified single value when `operator` is 'Lt' or 'Gt'"
_AFFINITY_REQUIRED = "must specify required node constraints"
_NO_RECYCLE_ROOT = "may not be 'recycle' for a hostPath mount of '/'"
_TOKEN_TOO_SHORT = "may not specify a duration less than 10 minutes"
_TOKEN_TOO_LONG = "may not specify a duration larger than 2^32 seconds"
_NO_SHRINK = "field can not be less than previous value"
_NOT_POSITIVE = "must be greater than zero"
_LABEL_VALUE_TOO_LONG = "must be no more than 63 characters"
_BAD_FIELD_KEY = "not a valid field selector key"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# -- value rendering, as field.Error prints values -----------------------------


def _go(value: Any) -> str:
    """A value as field.Error shows it: strings quoted (%q), numbers bare, null for nil."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _supported(values: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def _required(path: str, detail: str = "") -> FieldError:
    message = "Required value" + (f": {detail}" if detail else "")
    return FieldError(path, message, "FieldValueRequired")


def _not_supported(path: str, value: Any, values: tuple[str, ...] | list[str]) -> FieldError:
    return FieldError(
        path,
        f"Unsupported value: {_go(value)}: supported values: {_supported(values)}",
        "FieldValueNotSupported",
    )


def _forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, f"Forbidden: {detail}", "FieldValueForbidden")


def _invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(path, f"Invalid value: {_go(value)}: {detail}")


def _duplicate(path: str, value: Any) -> FieldError:
    return FieldError(path, f"Duplicate value: {_go(value)}", "FieldValueDuplicate")


def _too_long(path: str, limit: int) -> FieldError:
    return FieldError(path, f"Too long: must have at most {limit} bytes", "FieldValueTooLong")


def _immutable(path: str, value: Any) -> FieldError:
    return _invalid(path, value, "field is immutable")


# -- names and selectors -------------------------------------------------------


def subdomain_problem(name: str) -> str:
    """apimachinery's IsDNS1123Subdomain message for `name`, "" when it is one."""
    if len(name) > 253:
        return "must be no more than 253 characters"
    if not _SUBDOMAIN_RE.match(name):
        return _SUBDOMAIN_MSG
    return ""


def qualified_name_errors(value: str, path: str) -> list[FieldError]:
    """apimachinery's IsQualifiedName: an optional DNS-subdomain prefix, '/', a 63-char name."""
    parts = value.split("/")
    if len(parts) == 1:
        prefix, name = "", parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return [_invalid(path, value, "prefix part must be non-empty")]
        problem = subdomain_problem(prefix)
        if problem:
            return [_invalid(path, value, f"prefix part {problem}")]
    else:
        return [
            _invalid(
                path,
                value,
                f"a qualified name {_QUALIFIED_MSG} with an optional DNS subdomain prefix and "
                "'/' (e.g. 'example.com/MyName')",
            )
        ]
    if not name:
        return [_invalid(path, value, "name part must be non-empty")]
    if len(name) > 63:
        return [_invalid(path, value, "name part must be no more than 63 characters")]
    if not _QUALIFIED_RE.match(name):
        return [_invalid(path, value, f"name part {_QUALIFIED_MSG}")]
    return []


def label_selector_errors(selector: Any, path: str) -> list[FieldError]:
    """metav1 ValidateLabelSelector: operators, values per operator, label keys and values."""
    if not isinstance(selector, dict):
        return []
    errors: list[FieldError] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        errors.extend(qualified_name_errors(str(key), f"{path}.matchLabels"))
        if value and len(str(value)) > 63:
            errors.append(_invalid(f"{path}.matchLabels", value, _LABEL_VALUE_TOO_LONG))
    for index, expr in enumerate(selector.get("matchExpressions") or []):
        at = f"{path}.matchExpressions[{index}]"
        operator = expr.get("operator", "")
        values = expr.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                errors.append(_required(f"{at}.values", _IN_NEEDS_VALUES))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errors.append(
                    _forbidden(
                        f"{at}.values",
                        _EXISTS_NO_VALUES,
                    )
                )
        else:
            errors.append(_invalid(f"{at}.operator", operator, "not a valid selector operator"))
        errors.extend(qualified_name_errors(str(expr.get("key", "")), f"{at}.key"))
    return errors


def node_selector_errors(selector: Any, path: str) -> list[FieldError]:
    """core ValidateNodeSelector: at least one term, each requirement's operator and values."""
    terms = (selector or {}).get("nodeSelectorTerms") if isinstance(selector, dict) else None
    if not terms:
        return [_required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")]
    errors: list[FieldError] = []
    for t_index, term in enumerate(terms):
        term_path = f"{path}.nodeSelectorTerms[{t_index}]"
        for index, req in enumerate((term or {}).get("matchExpressions") or []):
            at = f"{term_path}.matchExpressions[{index}]"
            errors.extend(_node_requirement_errors(req, at))
            errors.extend(qualified_name_errors(str(req.get("key", "")), f"{at}.key"))
        for index, req in enumerate((term or {}).get("matchFields") or []):
            at = f"{term_path}.matchFields[{index}]"
            if req.get("key") != "metadata.name":
                errors.append(_invalid(f"{at}.key", req.get("key", ""), _BAD_FIELD_KEY))
            operator = req.get("operator", "")
            if operator not in ("In", "NotIn"):
                errors.append(_invalid(f"{at}.operator", operator, "not a valid selector operator"))
            elif len(req.get("values") or []) != 1:
                errors.append(
                    _required(
                        f"{at}.values",
                        "must be only one value when `operator` is 'In' or 'NotIn' for node "
                        "field selector",
                    )
                )
    return errors


def _node_requirement_errors(req: Obj, at: str) -> list[FieldError]:
    operator = req.get("operator", "")
    values = req.get("values") or []
    if operator in ("In", "NotIn") and not values:
        return [_required(f"{at}.values", _IN_NEEDS_VALUES)]
    if operator in ("Exists", "DoesNotExist") and values:
        return [_forbidden(f"{at}.values", _EXISTS_NO_VALUES)]
    if operator in ("Gt", "Lt") and len(values) != 1:
        return [_required(f"{at}.values", _GT_ONE_VALUE)]
    if operator not in _NODE_OPERATORS:
        return [_invalid(f"{at}.operator", operator, "not a valid selector operator")]
    return []


def _quantity(raw: Any, kind: str) -> Decimal:
    value = parse_quantity(raw)
    if value is None:
        # the real server fails while decoding, before validation: a 400
        raise bad_request(
            f'{kind} in version "v1" cannot be handled as a {kind}: quantities must match the '
            f"regular expression '{QUANTITY_PATTERN}'"
        )
    return value


def _access_mode_errors(modes: Any, path: str, required_detail: str) -> list[FieldError]:
    if not modes:
        return [_required(path, required_detail)]
    errors: list[FieldError] = []
    once_pod = other = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            errors.append(_not_supported(path, mode, ACCESS_MODES))
        elif mode == "ReadWriteOncePod":
            once_pod = True
        else:
            other = True
    if once_pod and other:
        errors.append(_forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errors


def _class_name_errors(name: Any, path: str) -> list[FieldError]:
    if not name:
        return []
    problem = subdomain_problem(str(name))
    return [_invalid(path, name, problem)] if problem else []


def _spec_diff(old: Obj, new: Obj) -> str:
    """The changed spec fields, one per line (the real server prints a Go object diff)."""
    lines = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            lines.append(f"  {key}: {_go(old.get(key))} -> {_go(new.get(key))}")
    return "\n".join(lines)


class _Strategy:
    """A kind's v1 defaults, applied to every write as decoding applies them, and its
    validation: a write with field errors is refused with one 422 listing them all."""

    group = ""
    kind = ""

    def validate_create(self, obj: Obj) -> None:
        """422 listing every field error of a new object."""
        self._refuse(obj, self._errors(obj))

    def _errors(self, obj: Obj) -> list[FieldError]:
        return []

    def _refuse(self, obj: Obj, errors: list[FieldError]) -> None:
        if errors:
            raise invalid(self.group, self.kind, str(obj["metadata"].get("name", "")), errors)

    def prepare_for_create(self, obj: Obj) -> None:
        """The v1 defaults."""
        self._default(obj)

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        """The v1 defaults, as decoding applies them to every write."""
        self._default(new)

    def _default(self, obj: Obj) -> None:
        """The kind has no defaults."""


# -- PersistentVolumeClaim -----------------------------------------------------


class PersistentVolumeClaimStrategy(_Strategy):
    """PVC defaults (volumeMode Filesystem, phase Pending), status reset, spec validation."""

    kind = "PersistentVolumeClaim"

    def prepare_for_create(self, obj: Obj) -> None:
        """Drop a client's status (the strategy's reset) and apply the v1 defaults."""
        obj["status"] = {"phase": "Pending"}
        self._default(obj)

    def _default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            spec.setdefault("volumeMode", "Filesystem")
        status = obj.setdefault("status", {})
        if isinstance(status, dict) and not status.get("phase"):
            status["phase"] = "Pending"

    def _errors(self, obj: Obj) -> list[FieldError]:
        spec = obj.get("spec") or {}
        errors = _access_mode_errors(
            spec.get("accessModes"), "spec.accessModes", "at least 1 access mode is required"
        )
        if spec.get("selector") is not None:
            errors.extend(label_selector_errors(spec["selector"], "spec.selector"))
        requests = (spec.get("resources") or {}).get("requests") or {}
        storage_path = "spec.resources[storage]"
        if "storage" not in requests:
            errors.append(_required(storage_path))
        else:
            size = _quantity(requests["storage"], self.kind)
            if size <= 0:
                errors.append(_invalid(storage_path, str(requests["storage"]), _NOT_POSITIVE))
        errors.extend(_class_name_errors(spec.get("storageClassName"), "spec.storageClassName"))
        mode = spec.get("volumeMode")
        if mode is not None and mode not in VOLUME_MODES:
            errors.append(_not_supported("spec.volumeMode", mode, VOLUME_MODES))
        for field_name in ("dataSource", "dataSourceRef"):
            source = spec.get(field_name)
            if isinstance(source, dict):
                errors.extend(_data_source_errors(source, f"spec.{field_name}"))
        return errors

    def validate_update(self, old: Obj, new: Obj) -> None:
        """422 unless only what the real strategy lets change changed."""
        errors = self._errors(new)
        old_spec = dict(old.get("spec") or {})
        new_spec = dict(new.get("spec") or {})
        if not old_spec.get("volumeName"):
            # the PV controller (and the scheduler's binder) set volumeName once
            old_spec["volumeName"] = new_spec.get("volumeName")
            if old_spec["volumeName"] is None:
                old_spec.pop("volumeName")
        old_requests = ((old.get("spec") or {}).get("resources") or {}).get("requests") or {}
        new_requests = ((new.get("spec") or {}).get("resources") or {}).get("requests") or {}
        bound = (new.get("status") or {}).get("phase") == "Bound"
        if bound and "storage" in new_requests and "storage" in old_requests:
            # a bound claim may grow: compare the rest of the spec without the request
            new_spec["resources"] = _with_storage(
                new_spec.get("resources"), old_requests["storage"]
            )
        old_annotations = old["metadata"].get("annotations") or {}
        new_annotations = new["metadata"].get("annotations") or {}
        if _storage_class_upgrade(old_annotations, new_annotations, old_spec, new_spec):
            new_spec.pop("storageClassName", None)
        elif old_annotations.get(BETA_CLASS_ANNOTATION) != new_annotations.get(
            BETA_CLASS_ANNOTATION
        ):
            errors.append(
                _immutable(
                    f"metadata.annotations[{BETA_CLASS_ANNOTATION}]",
                    new_annotations.get(BETA_CLASS_ANNOTATION, ""),
                )
            )
        if new_spec != old_spec:
            errors.append(
                _forbidden(
                    "spec",
                    "spec is immutable after creation except resources.requests and "
                    "volumeAttributesClassName for bound claims\n" + _spec_diff(old_spec, new_spec),
                )
            )
        if "storage" in new_requests and "storage" in old_requests:
            new_size = _quantity(new_requests["storage"], self.kind)
            if new_size < _quantity(old_requests["storage"], self.kind):
                errors.append(
                    _forbidden(
                        "spec.resources.requests.storage",
                        _NO_SHRINK,
                    )
                )
        old_mode = (old.get("spec") or {}).get("volumeMode")
        new_mode = (new.get("spec") or {}).get("volumeMode")
        if old_mode != new_mode:
            errors.append(_immutable("volumeMode", new_mode))
        self._refuse(old, errors)


def _with_storage(resources: Any, storage: Any) -> Obj:
    replaced: Obj = dict(resources or {})
    replaced["requests"] = dict(replaced.get("requests") or {}, storage=storage)
    return replaced


def _storage_class_upgrade(old_ann: Obj, new_ann: Obj, old_spec: Obj, new_spec: Obj) -> bool:
    """The one storageClassName change allowed: from the beta annotation to the field."""
    old_class = old_ann.get(BETA_CLASS_ANNOTATION)
    return (
        old_class is not None
        and old_spec.get("storageClassName") is None
        and new_spec.get("storageClassName") == old_class
        and new_ann.get(BETA_CLASS_ANNOTATION, old_class) == old_class
    )


def _data_source_errors(source: Obj, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not source.get("name"):
        errors.append(_required(f"{path}.name"))
    if not source.get("kind"):
        errors.append(_required(f"{path}.kind"))
    if not source.get("apiGroup") and source.get("kind") != "PersistentVolumeClaim":
        errors.append(FieldError(path, f"Invalid value: {_go(source.get('kind', ''))}"))
    return errors


# -- PersistentVolume ----------------------------------------------------------


class PersistentVolumeStrategy(_Strategy):
    """PV defaults (reclaim Retain, volumeMode Filesystem), status reset and phase stamps, spec
    validation (one volume source, capacity, access modes, node affinity) and immutability."""

    kind = "PersistentVolume"

    def prepare_for_create(self, obj: Obj) -> None:
        """A new PV starts Pending, whatever status the client sent."""
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": _now()}
        self._default(obj)

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        """Defaults; a status write that changes the phase stamps lastPhaseTransitionTime."""
        self._default(new)
        old_status = old.get("status") or {}
        new_status = new.get("status")
        if isinstance(new_status, dict) and new_status.get("phase") != old_status.get("phase"):
            new["status"] = dict(new_status, lastPhaseTransitionTime=_now())

    def _default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            if not spec.get("persistentVolumeReclaimPolicy"):
                spec["persistentVolumeReclaimPolicy"] = "Retain"
            spec.setdefault("volumeMode", "Filesystem")
        status = obj.setdefault("status", {})
        if isinstance(status, dict) and not status.get("phase"):
            status["phase"] = "Pending"

    def _errors(self, obj: Obj) -> list[FieldError]:
        spec = obj.get("spec") or {}
        errors = _access_mode_errors(spec.get("accessModes"), "spec.accessModes", "")
        capacity = spec.get("capacity") or {}
        if not capacity:
            errors.append(_required("spec.capacity"))
        if "storage" not in capacity or len(capacity) > 1:
            shown = "core.ResourceList(nil)" if not capacity else _go(capacity)
            errors.append(
                FieldError(
                    "spec.capacity",
                    f'Unsupported value: {shown}: supported values: "storage"',
                    "FieldValueNotSupported",
                )
            )
        for resource, raw in capacity.items():
            value = _quantity(raw, self.kind)
            if value <= 0:
                errors.append(_invalid(f"spec.capacity[{resource}]", str(raw), _NOT_POSITIVE))
        policy = spec.get("persistentVolumeReclaimPolicy")
        if policy and policy not in PV_RECLAIM_POLICIES:
            errors.append(
                _not_supported("spec.persistentVolumeReclaimPolicy", policy, PV_RECLAIM_POLICIES)
            )
        affinity = spec.get("nodeAffinity")
        has_affinity = isinstance(affinity, dict)
        if isinstance(affinity, dict):
            if affinity.get("required") is None:
                errors.append(_required("spec.nodeAffinity.required", _AFFINITY_REQUIRED))
            else:
                errors.extend(
                    node_selector_errors(affinity["required"], "spec.nodeAffinity.required")
                )
        sources = [name for name in PV_SOURCES if spec.get(name) is not None]
        for extra in sources[1:]:
            errors.append(_forbidden(f"spec.{extra}", "may not specify more than 1 volume type"))
        if not sources:
            errors.append(_required("spec", "must specify a volume type"))
        else:
            errors.extend(_source_errors(sources[0], spec[sources[0]], has_affinity))
        host_path = spec.get("hostPath") or {}
        if (
            sources[:1] == ["hostPath"]
            and posixpath.normpath(str(host_path.get("path") or ".")) == "/"
            and policy == "Recycle"
        ):
            errors.append(
                _forbidden(
                    "spec.persistentVolumeReclaimPolicy",
                    _NO_RECYCLE_ROOT,
                )
            )
        errors.extend(_class_name_errors(spec.get("storageClassName"), "spec.storageClassName"))
        mode = spec.get("volumeMode")
        if mode is not None and mode not in VOLUME_MODES:
            errors.append(_not_supported("spec.volumeMode", mode, VOLUME_MODES))
        return errors

    def validate_update(self, old: Obj, new: Obj) -> None:
        """422 for field errors, a changed volume source or volumeMode, or a changed
        nodeAffinity once one was set."""
        errors = self._errors(new)
        old_spec = old.get("spec") or {}
        new_spec = new.get("spec") or {}
        old_source = {k: old_spec.get(k) for k in PV_SOURCES if old_spec.get(k) is not None}
        new_source = {k: new_spec.get(k) for k in PV_SOURCES if new_spec.get(k) is not None}
        old_csi, new_csi = old_source.get("csi"), new_source.get("csi")
        if (
            isinstance(old_csi, dict)
            and isinstance(new_csi, dict)
            and old_csi.get("controllerExpandSecretRef") is None
        ):
            # a controllerExpandSecretRef may be added to an existing CSI volume
            new_source["csi"] = {
                k: v for k, v in new_csi.items() if k != "controllerExpandSecretRef"
            }
        if old_source != new_source:
            errors.append(
                _forbidden(
                    "spec.persistentvolumesource",
                    "spec.persistentvolumesource is immutable after creation\n"
                    + _spec_diff(old_source, new_source),
                )
            )
        if old_spec.get("volumeMode") != new_spec.get("volumeMode"):
            errors.append(_immutable("volumeMode", new_spec.get("volumeMode")))
        if old_spec.get("nodeAffinity") is not None and old_spec.get(
            "nodeAffinity"
        ) != new_spec.get("nodeAffinity"):
            errors.append(_immutable("nodeAffinity", new_spec.get("nodeAffinity")))
        self._refuse(old, errors)


def _source_errors(name: str, source: Any, has_affinity: bool) -> list[FieldError]:
    path = f"spec.{name}"
    source = source if isinstance(source, dict) else {}
    errors: list[FieldError] = []
    if name == "hostPath":
        host = source.get("path") or ""
        if not host:
            return [_required(f"{path}.path")]
        errors.extend(_backstep_errors(host, f"{path}.path"))
        kind = source.get("type")
        if kind is not None and kind not in _HOST_PATH_TYPES:
            errors.append(_not_supported(f"{path}.type", kind, list(_HOST_PATH_TYPES)))
    elif name == "nfs":
        if not source.get("server"):
            errors.append(_required(f"{path}.server"))
        nfs_path = source.get("path") or ""
        if not nfs_path:
            errors.append(_required(f"{path}.path"))
        if not nfs_path.startswith("/"):
            errors.append(_invalid(f"{path}.path", nfs_path, "must be an absolute path"))
    elif name == "local":
        local_path = source.get("path") or ""
        if not local_path:
            errors.append(_required(f"{path}.path"))
        else:
            errors.extend(_backstep_errors(local_path, f"{path}.path"))
        if not has_affinity:
            errors.append(_required("spec.nodeAffinity", "Local volume requires node affinity"))
    elif name == "csi":
        errors.extend(csi_driver_name_errors(str(source.get("driver") or ""), f"{path}.driver"))
        if not source.get("volumeHandle"):
            errors.append(_required(f"{path}.volumeHandle"))
    return errors


def _backstep_errors(value: str, path: str) -> list[FieldError]:
    if ".." in value.split("/"):
        return [_invalid(path, value, "must not contain '..'")]
    return []


def csi_driver_name_errors(name: str, path: str) -> list[FieldError]:
    """core ValidateCSIDriverName: required, at most 63 characters, a DNS subdomain."""
    errors: list[FieldError] = []
    if not name:
        errors.append(_required(path))
    if len(name) > 63:
        errors.append(_too_long(path, 63))
    problem = subdomain_problem(name.lower())
    if problem:
        errors.append(_invalid(path, name, problem))
    return errors


# -- StorageClass --------------------------------------------------------------


class StorageClassStrategy(_Strategy):
    """StorageClass defaults (reclaimPolicy Delete, volumeBindingMode Immediate) and its rules:
    provisioner required, parameters, policies and binding mode immutable."""

    group = STORAGE_GROUP
    kind = "StorageClass"

    def _default(self, obj: Obj) -> None:
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")

    def _errors(self, obj: Obj) -> list[FieldError]:
        errors: list[FieldError] = []
        provisioner = obj.get("provisioner") or ""
        if not provisioner:
            errors.append(_required("provisioner"))
        else:
            errors.extend(qualified_name_errors(str(provisioner).lower(), "provisioner"))
        parameters = obj.get("parameters") or {}
        if len(parameters) > _MAX_PARAMETERS:
            errors.append(_too_long("parameters", _MAX_PARAMETERS))
        else:
            size = 0
            for key, value in parameters.items():
                if not key:
                    errors.append(_invalid("parameters", key, "field can not be empty."))
                size += len(key) + len(str(value))
            if size > _MAX_PARAMETER_BYTES:
                errors.append(_too_long("parameters", _MAX_PARAMETER_BYTES))
        policy = obj.get("reclaimPolicy")
        if policy and policy not in SC_RECLAIM_POLICIES:
            errors.append(_not_supported("reclaimPolicy", policy, SC_RECLAIM_POLICIES))
        mode = obj.get("volumeBindingMode")
        if mode is None:
            errors.append(_required("volumeBindingMode"))
        elif mode not in BINDING_MODES:
            errors.append(_not_supported("volumeBindingMode", mode, BINDING_MODES))
        errors.extend(allowed_topologies_errors(obj.get("allowedTopologies"), "allowedTopologies"))
        return errors

    def validate_update(self, old: Obj, new: Obj) -> None:
        """422: parameters, provisioner, reclaimPolicy and volumeBindingMode never change."""
        errors: list[FieldError] = []
        if (old.get("parameters") or {}) != (new.get("parameters") or {}):
            errors.append(_forbidden("parameters", "updates to parameters are forbidden."))
        if old.get("provisioner") != new.get("provisioner"):
            errors.append(_forbidden("provisioner", "updates to provisioner are forbidden."))
        if old.get("reclaimPolicy") != new.get("reclaimPolicy"):
            errors.append(_forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
        if old.get("volumeBindingMode") != new.get("volumeBindingMode"):
            errors.append(_immutable("volumeBindingMode", new.get("volumeBindingMode")))
        self._refuse(old, errors)


def allowed_topologies_errors(topologies: Any, path: str) -> list[FieldError]:
    """TopologySelectorTerms: values required and unique, keys qualified, no duplicate term."""
    errors: list[FieldError] = []
    seen: list[dict[str, frozenset[str]]] = []
    for index, term in enumerate(topologies or []):
        term_path = f"{path}[{index}]"
        expressions: dict[str, frozenset[str]] = {}
        for e_index, req in enumerate((term or {}).get("matchLabelExpressions") or []):
            at = f"{term_path}.matchLabelExpressions[{e_index}]"
            values = req.get("values") or []
            if not values:
                errors.append(_required(f"{at}.values"))
            for v_index, value in enumerate(values):
                if value in values[:v_index]:
                    errors.append(_duplicate(f"{at}.values[{v_index}]", value))
            key = str(req.get("key", ""))
            errors.extend(qualified_name_errors(key, f"{at}.key"))
            if key in expressions:
                errors.append(_duplicate(f"{at}.key", key))
            expressions[key] = frozenset(values)
        if expressions in seen:
            errors.append(_duplicate(f"{term_path}.matchLabelExpressions", ""))
        seen.append(expressions)
    return errors


# -- CSINode and CSIDriver -----------------------------------------------------


class CSINodeStrategy(_Strategy):
    """CSINode: each driver's name, nodeID and allocatable.count; existing drivers immutable."""

    group = STORAGE_GROUP
    kind = "CSINode"

    def _errors(self, obj: Obj) -> list[FieldError]:
        errors: list[FieldError] = []
        names: set[str] = set()
        for index, driver in enumerate((obj.get("spec") or {}).get("drivers") or []):
            at = f"spec.drivers[{index}]"
            name = str(driver.get("name") or "")
            errors.extend(csi_driver_name_errors(name, f"{at}.name"))
            node_id = str(driver.get("nodeID") or "")
            if not node_id:
                errors.append(_required(f"{at}.nodeID"))
            if len(node_id) > _CSI_NODE_ID_MAX:
                errors.append(_invalid(f"{at}.nodeID", node_id, _NODE_ID_TOO_LONG))
            count = (driver.get("allocatable") or {}).get("count")
            if isinstance(count, int) and count < 0:
                errors.append(
                    _invalid(f"{at}.allocatable.count", count, "must be greater than or equal to 0")
                )
            if name in names:
                errors.append(_duplicate(f"{at}.name", name))
            names.add(name)
            keys: set[str] = set()
            for key in driver.get("topologyKeys") or []:
                if not key:
                    errors.append(_required(at))
                if key in keys:
                    errors.append(_duplicate(at, key))
                keys.add(key)
                errors.extend(qualified_name_errors(str(key), at))
        return errors

    def validate_update(self, old: Obj, new: Obj) -> None:
        """422 for field errors or a changed entry of an existing driver."""
        errors = self._errors(new)
        old_drivers = {d.get("name"): d for d in (old.get("spec") or {}).get("drivers") or []}
        for driver in (new.get("spec") or {}).get("drivers") or []:
            before = old_drivers.get(driver.get("name"))
            if before is not None and before != driver:
                errors.append(_immutable("CSINodeDriver", driver))
        self._refuse(old, errors)


_FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
_LIFECYCLE_MODES = ("Persistent", "Ephemeral")
_CSI_DRIVER_IMMUTABLE = (
    ("attachRequired", "spec.attachedRequired"),
    ("fsGroupPolicy", "spec.fsGroupPolicy"),
    ("podInfoOnMount", "spec.podInfoOnMount"),
    ("volumeLifecycleModes", "spec.volumeLifecycleModes"),
)


class CSIDriverStrategy(_Strategy):
    """CSIDriver defaults (attachRequired true, fsGroupPolicy ReadWriteOnceWithFSType, ...),
    its enumerations, and the fields that never change."""

    group = STORAGE_GROUP
    kind = "CSIDriver"

    def _default(self, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("attachRequired", True)
        spec.setdefault("podInfoOnMount", False)
        spec.setdefault("storageCapacity", False)
        spec.setdefault("fsGroupPolicy", "ReadWriteOnceWithFSType")
        if not spec.get("volumeLifecycleModes"):
            spec["volumeLifecycleModes"] = ["Persistent"]
        spec.setdefault("requiresRepublish", False)
        spec.setdefault("seLinuxMount", False)

    def _errors(self, obj: Obj) -> list[FieldError]:
        spec = obj.get("spec") or {}
        errors: list[FieldError] = []
        policy = spec.get("fsGroupPolicy")
        if policy is not None and policy not in _FS_GROUP_POLICIES:
            errors.append(_not_supported("spec.fsGroupPolicy", policy, _FS_GROUP_POLICIES))
        for mode in spec.get("volumeLifecycleModes") or []:
            if mode not in _LIFECYCLE_MODES:
                errors.append(_not_supported("spec.volumeLifecycleModes", mode, _LIFECYCLE_MODES))
        audiences: set[str] = set()
        for index, request in enumerate(spec.get("tokenRequests") or []):
            at = f"spec.tokenRequests[{index}]"
            audience = str(request.get("audience") or "")
            if audience in audiences:
                errors.append(_duplicate(f"{at}.audience", audience))
                continue
            audiences.add(audience)
            seconds = request.get("expirationSeconds")
            if isinstance(seconds, int) and seconds < 600:
                errors.append(
                    _invalid(
                        f"{at}.expirationSeconds",
                        seconds,
                        _TOKEN_TOO_SHORT,
                    )
                )
            if isinstance(seconds, int) and seconds > 1 << 32:
                errors.append(
                    _invalid(
                        f"{at}.expirationSeconds",
                        seconds,
                        _TOKEN_TOO_LONG,
                    )
                )
        return errors

    def validate_update(self, old: Obj, new: Obj) -> None:
        """422 for field errors or a change to an immutable spec field."""
        errors = self._errors(new)
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        for key, path in _CSI_DRIVER_IMMUTABLE:
            if old_spec.get(key) != new_spec.get(key):
                errors.append(_immutable(path, new_spec.get(key)))
        self._refuse(old, errors)
