"""PersistentVolumeClaims and PersistentVolumes (core/v1) as kube-apiserver defaults and
validates them: their v1 defaults, the registry strategies' status resets and phase stamps,
and the field checks of pkg/apis/core/validation a client can trip on (access modes, sizes,
one volume source, node affinity, what a bound claim may change), in the real server's
words and field paths.
"""

from __future__ import annotations

import posixpath
from typing import Any

from muster_sim.errors import FieldError
from muster_sim.timestamps import now_rfc3339
from muster_sim.validation import fields
from muster_sim.validation.names import csi_driver_name_errors, subdomain_problem
from muster_sim.validation.quantities import decoded_quantity
from muster_sim.validation.selector_fields import label_selector_errors, node_selector_errors
from muster_sim.validation.strategy import KindStrategy

Obj = dict[str, Any]

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
PV_RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
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

# the real server's words for the checks below
_AFFINITY_REQUIRED = "must specify required node constraints"
_NO_RECYCLE_ROOT = "may not be 'recycle' for a hostPath mount of '/'"
_NO_SHRINK = "field can not be less than previous value"
_NOT_POSITIVE = "must be greater than zero"


def _access_mode_errors(modes: Any, path: str, required_detail: str) -> list[FieldError]:
    if not modes:
        return [fields.required(path, required_detail)]
    errors: list[FieldError] = []
    once_pod = other = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            errors.append(fields.not_supported(path, mode, ACCESS_MODES))
        elif mode == "ReadWriteOncePod":
            once_pod = True
        else:
            other = True
    if once_pod and other:
        errors.append(
            fields.forbidden(path, "may not use ReadWriteOncePod with other access modes")
        )
    return errors


def _class_name_errors(name: Any, path: str) -> list[FieldError]:
    if not name:
        return []
    problem = subdomain_problem(str(name))
    return [fields.invalid(path, name, problem)] if problem else []


def _spec_diff(old: Obj, new: Obj) -> str:
    """The changed spec fields, one per line (the real server prints a Go object diff)."""
    lines = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            lines.append(f"  {key}: {fields.shown(old.get(key))} -> {fields.shown(new.get(key))}")
    return "\n".join(lines)


# -- PersistentVolumeClaim -----------------------------------------------------


class PersistentVolumeClaimStrategy(KindStrategy):
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
            errors.append(fields.required(storage_path))
        else:
            size = decoded_quantity(requests["storage"], self.kind)
            if size <= 0:
                errors.append(fields.invalid(storage_path, str(requests["storage"]), _NOT_POSITIVE))
        errors.extend(_class_name_errors(spec.get("storageClassName"), "spec.storageClassName"))
        mode = spec.get("volumeMode")
        if mode is not None and mode not in VOLUME_MODES:
            errors.append(fields.not_supported("spec.volumeMode", mode, VOLUME_MODES))
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
                fields.immutable(
                    f"metadata.annotations[{BETA_CLASS_ANNOTATION}]",
                    new_annotations.get(BETA_CLASS_ANNOTATION, ""),
                )
            )
        if new_spec != old_spec:
            errors.append(
                fields.forbidden(
                    "spec",
                    "spec is immutable after creation except resources.requests and "
                    "volumeAttributesClassName for bound claims\n" + _spec_diff(old_spec, new_spec),
                )
            )
        if "storage" in new_requests and "storage" in old_requests:
            new_size = decoded_quantity(new_requests["storage"], self.kind)
            if new_size < decoded_quantity(old_requests["storage"], self.kind):
                errors.append(
                    fields.forbidden(
                        "spec.resources.requests.storage",
                        _NO_SHRINK,
                    )
                )
        old_mode = (old.get("spec") or {}).get("volumeMode")
        new_mode = (new.get("spec") or {}).get("volumeMode")
        if old_mode != new_mode:
            errors.append(fields.immutable("volumeMode", new_mode))
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
        errors.append(fields.required(f"{path}.name"))
    if not source.get("kind"):
        errors.append(fields.required(f"{path}.kind"))
    if not source.get("apiGroup") and source.get("kind") != "PersistentVolumeClaim":
        errors.append(FieldError(path, f"Invalid value: {fields.shown(source.get('kind', ''))}"))
    return errors


# -- PersistentVolume ----------------------------------------------------------


class PersistentVolumeStrategy(KindStrategy):
    """PV defaults (reclaim Retain, volumeMode Filesystem), status reset and phase stamps, spec
    validation (one volume source, capacity, access modes, node affinity) and immutability."""

    kind = "PersistentVolume"

    def prepare_for_create(self, obj: Obj) -> None:
        """A new PV starts Pending, whatever status the client sent."""
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": now_rfc3339()}
        self._default(obj)

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        """Defaults; a status write that changes the phase stamps lastPhaseTransitionTime."""
        self._default(new)
        old_status = old.get("status") or {}
        new_status = new.get("status")
        if isinstance(new_status, dict) and new_status.get("phase") != old_status.get("phase"):
            new["status"] = dict(new_status, lastPhaseTransitionTime=now_rfc3339())

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
            errors.append(fields.required("spec.capacity"))
        if "storage" not in capacity or len(capacity) > 1:
            shown = "core.ResourceList(nil)" if not capacity else fields.shown(capacity)
            errors.append(
                FieldError(
                    "spec.capacity",
                    f'Unsupported value: {shown}: supported values: "storage"',
                    "FieldValueNotSupported",
                )
            )
        for resource, raw in capacity.items():
            value = decoded_quantity(raw, self.kind)
            if value <= 0:
                errors.append(fields.invalid(f"spec.capacity[{resource}]", str(raw), _NOT_POSITIVE))
        policy = spec.get("persistentVolumeReclaimPolicy")
        if policy and policy not in PV_RECLAIM_POLICIES:
            errors.append(
                fields.not_supported(
                    "spec.persistentVolumeReclaimPolicy", policy, PV_RECLAIM_POLICIES
                )
            )
        affinity = spec.get("nodeAffinity")
        has_affinity = isinstance(affinity, dict)
        if isinstance(affinity, dict):
            if affinity.get("required") is None:
                errors.append(fields.required("spec.nodeAffinity.required", _AFFINITY_REQUIRED))
            else:
                errors.extend(
                    node_selector_errors(affinity["required"], "spec.nodeAffinity.required")
                )
        sources = [name for name in PV_SOURCES if spec.get(name) is not None]
        for extra in sources[1:]:
            errors.append(
                fields.forbidden(f"spec.{extra}", "may not specify more than 1 volume type")
            )
        if not sources:
            errors.append(fields.required("spec", "must specify a volume type"))
        else:
            errors.extend(_source_errors(sources[0], spec[sources[0]], has_affinity))
        host_path = spec.get("hostPath") or {}
        if (
            sources[:1] == ["hostPath"]
            and posixpath.normpath(str(host_path.get("path") or ".")) == "/"
            and policy == "Recycle"
        ):
            errors.append(
                fields.forbidden(
                    "spec.persistentVolumeReclaimPolicy",
                    _NO_RECYCLE_ROOT,
                )
            )
        errors.extend(_class_name_errors(spec.get("storageClassName"), "spec.storageClassName"))
        mode = spec.get("volumeMode")
        if mode is not None and mode not in VOLUME_MODES:
            errors.append(fields.not_supported("spec.volumeMode", mode, VOLUME_MODES))
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
                fields.forbidden(
                    "spec.persistentvolumesource",
                    "spec.persistentvolumesource is immutable after creation\n"
                    + _spec_diff(old_source, new_source),
                )
            )
        if old_spec.get("volumeMode") != new_spec.get("volumeMode"):
            errors.append(fields.immutable("volumeMode", new_spec.get("volumeMode")))
        if old_spec.get("nodeAffinity") is not None and old_spec.get(
            "nodeAffinity"
        ) != new_spec.get("nodeAffinity"):
            errors.append(fields.immutable("nodeAffinity", new_spec.get("nodeAffinity")))
        self._refuse(old, errors)


def _source_errors(name: str, source: Any, has_affinity: bool) -> list[FieldError]:
    path = f"spec.{name}"
    source = source if isinstance(source, dict) else {}
    errors: list[FieldError] = []
    if name == "hostPath":
        host = source.get("path") or ""
        if not host:
            return [fields.required(f"{path}.path")]
        errors.extend(_backstep_errors(host, f"{path}.path"))
        kind = source.get("type")
        if kind is not None and kind not in _HOST_PATH_TYPES:
            errors.append(fields.not_supported(f"{path}.type", kind, list(_HOST_PATH_TYPES)))
    elif name == "nfs":
        if not source.get("server"):
            errors.append(fields.required(f"{path}.server"))
        nfs_path = source.get("path") or ""
        if not nfs_path:
            errors.append(fields.required(f"{path}.path"))
        if not nfs_path.startswith("/"):
            errors.append(fields.invalid(f"{path}.path", nfs_path, "must be an absolute path"))
    elif name == "local":
        local_path = source.get("path") or ""
        if not local_path:
            errors.append(fields.required(f"{path}.path"))
        else:
            errors.extend(_backstep_errors(local_path, f"{path}.path"))
        if not has_affinity:
            errors.append(
                fields.required("spec.nodeAffinity", "Local volume requires node affinity")
            )
    elif name == "csi":
        errors.extend(csi_driver_name_errors(str(source.get("driver") or ""), f"{path}.driver"))
        if not source.get("volumeHandle"):
            errors.append(fields.required(f"{path}.volumeHandle"))
    return errors


def _backstep_errors(value: str, path: str) -> list[FieldError]:
    if ".." in value.split("/"):
        return [fields.invalid(path, value, "must not contain '..'")]
    return []
