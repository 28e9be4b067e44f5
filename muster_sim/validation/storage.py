"""The storage.k8s.io/v1 kinds as kube-apiserver defaults and validates them:
StorageClasses, CSINodes and CSIDrivers, with the field checks of
pkg/apis/storage/validation a client can trip on and the fields that never change, in the
real server's words and field paths.
"""

from __future__ import annotations

from typing import Any

from muster_sim.errors import FieldError
from muster_sim.validation import fields
from muster_sim.validation.names import csi_driver_name_errors, qualified_name_errors
from muster_sim.validation.strategy import KindStrategy

Obj = dict[str, Any]

STORAGE_GROUP = "storage.k8s.io"
SC_RECLAIM_POLICIES = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
_CSI_NODE_ID_MAX = 192
_NODE_ID_TOO_LONG = f"must be {_CSI_NODE_ID_MAX} characters or less"
_MAX_PARAMETERS = 512
_MAX_PARAMETER_BYTES = 256 * 1024

# the real server's words for the checks below
_TOKEN_TOO_SHORT = "may not specify a duration less than 10 minutes"
_TOKEN_TOO_LONG = "may not specify a duration larger than 2^32 seconds"


# -- StorageClass --------------------------------------------------------------


class StorageClassStrategy(KindStrategy):
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
            errors.append(fields.required("provisioner"))
        else:
            errors.extend(qualified_name_errors(str(provisioner).lower(), "provisioner"))
        parameters = obj.get("parameters") or {}
        if len(parameters) > _MAX_PARAMETERS:
            errors.append(fields.too_long("parameters", _MAX_PARAMETERS))
        else:
            size = 0
            for key, value in parameters.items():
                if not key:
                    errors.append(fields.invalid("parameters", key, "field can not be empty."))
                size += len(key) + len(str(value))
            if size > _MAX_PARAMETER_BYTES:
                errors.append(fields.too_long("parameters", _MAX_PARAMETER_BYTES))
        policy = obj.get("reclaimPolicy")
        if policy and policy not in SC_RECLAIM_POLICIES:
            errors.append(fields.not_supported("reclaimPolicy", policy, SC_RECLAIM_POLICIES))
        mode = obj.get("volumeBindingMode")
        if mode is None:
            errors.append(fields.required("volumeBindingMode"))
        elif mode not in BINDING_MODES:
            errors.append(fields.not_supported("volumeBindingMode", mode, BINDING_MODES))
        errors.extend(allowed_topologies_errors(obj.get("allowedTopologies"), "allowedTopologies"))
        return errors

    def validate_update(self, old: Obj, new: Obj) -> None:
        """422: parameters, provisioner, reclaimPolicy and volumeBindingMode never change."""
        errors: list[FieldError] = []
        if (old.get("parameters") or {}) != (new.get("parameters") or {}):
            errors.append(fields.forbidden("parameters", "updates to parameters are forbidden."))
        if old.get("provisioner") != new.get("provisioner"):
            errors.append(fields.forbidden("provisioner", "updates to provisioner are forbidden."))
        if old.get("reclaimPolicy") != new.get("reclaimPolicy"):
            errors.append(
                fields.forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden.")
            )
        if old.get("volumeBindingMode") != new.get("volumeBindingMode"):
            errors.append(fields.immutable("volumeBindingMode", new.get("volumeBindingMode")))
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
                errors.append(fields.required(f"{at}.values"))
            for v_index, value in enumerate(values):
                if value in values[:v_index]:
                    errors.append(fields.duplicate(f"{at}.values[{v_index}]", value))
            key = str(req.get("key", ""))
            errors.extend(qualified_name_errors(key, f"{at}.key"))
            if key in expressions:
                errors.append(fields.duplicate(f"{at}.key", key))
            expressions[key] = frozenset(values)
        if expressions in seen:
            errors.append(fields.duplicate(f"{term_path}.matchLabelExpressions", ""))
        seen.append(expressions)
    return errors


# -- CSINode and CSIDriver -----------------------------------------------------


class CSINodeStrategy(KindStrategy):
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
                errors.append(fields.required(f"{at}.nodeID"))
            if len(node_id) > _CSI_NODE_ID_MAX:
                errors.append(fields.invalid(f"{at}.nodeID", node_id, _NODE_ID_TOO_LONG))
            count = (driver.get("allocatable") or {}).get("count")
            if isinstance(count, int) and count < 0:
                errors.append(
                    fields.invalid(
                        f"{at}.allocatable.count", count, "must be greater than or equal to 0"
                    )
                )
            if name in names:
                errors.append(fields.duplicate(f"{at}.name", name))
            names.add(name)
            keys: set[str] = set()
            for key in driver.get("topologyKeys") or []:
                if not key:
                    errors.append(fields.required(at))
                if key in keys:
                    errors.append(fields.duplicate(at, key))
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
                errors.append(fields.immutable("CSINodeDriver", driver))
        self._refuse(old, errors)


_FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
_LIFECYCLE_MODES = ("Persistent", "Ephemeral")
_CSI_DRIVER_IMMUTABLE = (
    ("attachRequired", "spec.attachedRequired"),
    ("fsGroupPolicy", "spec.fsGroupPolicy"),
    ("podInfoOnMount", "spec.podInfoOnMount"),
    ("volumeLifecycleModes", "spec.volumeLifecycleModes"),
)


class CSIDriverStrategy(KindStrategy):
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
            errors.append(fields.not_supported("spec.fsGroupPolicy", policy, _FS_GROUP_POLICIES))
        for mode in spec.get("volumeLifecycleModes") or []:
            if mode not in _LIFECYCLE_MODES:
                errors.append(
                    fields.not_supported("spec.volumeLifecycleModes", mode, _LIFECYCLE_MODES)
                )
        audiences: set[str] = set()
        for index, request in enumerate(spec.get("tokenRequests") or []):
            at = f"spec.tokenRequests[{index}]"
            audience = str(request.get("audience") or "")
            if audience in audiences:
                errors.append(fields.duplicate(f"{at}.audience", audience))
                continue
            audiences.add(audience)
            seconds = request.get("expirationSeconds")
            if isinstance(seconds, int) and seconds < 600:
                errors.append(
                    fields.invalid(
                        f"{at}.expirationSeconds",
                        seconds,
                        _TOKEN_TOO_SHORT,
                    )
                )
            if isinstance(seconds, int) and seconds > 1 << 32:
                errors.append(
                    fields.invalid(
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
                errors.append(fields.immutable(path, new_spec.get(key)))
        self._refuse(old, errors)
