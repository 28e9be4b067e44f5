"""sim's storage controllers: kube-controller-manager's PV controller and an external provisioner.

The PV controller part binds claims to volumes (a volume pre-bound by claimRef, as the scheduler's
binder leaves it; for Immediate classes the smallest matching Available volume), marks volumes
Available, Released or Bound, and reclaims volumes whose claim is gone. The provisioner part acts
as the CSI external-provisioner of every StorageClass's provisioner (except
kubernetes.io/no-provisioner, which nothing serves): it creates `pvc-<claim uid>` for an
Immediate claim at once, and for a WaitForFirstConsumer claim once the scheduler has set
`volume.kubernetes.io/selected-node`, pinned to that node's topology. A claim whose class does not
exist is never provisioned; it stays Pending with a ProvisioningFailed event, as on a real cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from fractions import Fraction
from typing import Any

from muster_sim.apiserver.resources import NODES
from muster_sim.apiserver.store import Event, clone, name_of, namespace_of
from muster_sim.apiserver.verbs import ApiServer
from muster_sim.cluster.recorder import record_event
from muster_sim.errors import ApiError
from muster_sim.selectors import label_selector_matches
from muster_sim.validation.names import csi_driver_name_errors
from muster_sim.validation.quantities import quantity

Obj = dict[str, Any]

log = logging.getLogger("muster.sim")

PVCS = "persistentvolumeclaims"
PVS = "persistentvolumes"
STORAGE_CLASSES = "storageclasses.storage.k8s.io"
CSINODES = "csinodes.storage.k8s.io"

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
HOSTNAME_LABEL = "kubernetes.io/hostname"
PV_CONTROLLER = "persistentvolume-controller"
WFFC = "WaitForFirstConsumer"


def claim_class(claim: Obj) -> str:
    """The claim's StorageClass name: the field, else the beta annotation, else ""."""
    name = (claim.get("spec") or {}).get("storageClassName")
    if name is None:
        name = (claim["metadata"].get("annotations") or {}).get(BETA_CLASS_ANNOTATION, "")
    return str(name or "")


def volume_class(volume: Obj) -> str:
    """The volume's StorageClass name ("" for none)."""
    name = (volume.get("spec") or {}).get("storageClassName")
    if name is None:
        name = (volume["metadata"].get("annotations") or {}).get(BETA_CLASS_ANNOTATION, "")
    return str(name or "")


def _size(value: Any) -> Fraction:
    return quantity(value) or Fraction(0)


def _requested(claim: Obj) -> Any:
    return (((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}).get(
        "storage", "0"
    )


def _claim_key(claim: Obj) -> str:
    return f"{namespace_of(claim)}/{name_of(claim)}"


class Provisioner:
    """Binds and provisions PersistentVolumes for claims, reacting to storage events."""

    def __init__(self, api: ApiServer) -> None:
        self.api = api
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: asyncio.Handle | None = None
        # (object uid, reason, message) already reported: the real controllers repeat an event
        # on each resync; once is enough to read it
        self._reported: set[tuple[str, str, str]] = set()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start reacting to claim, volume and class events on `loop` (the server's loop)."""
        self._loop = loop
        for key in (PVCS, PVS, STORAGE_CLASSES, NODES):
            self.api.store.listen(key, self._on_event)

    def stop(self) -> None:
        """Cancel a pending pass."""
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def _on_event(self, event: Event) -> None:
        # one pass after a burst of events: every write of a pass is an event of its own
        if self._loop is not None and self._pending is None:
            self._pending = self._loop.call_soon(self.sync)

    # -- the pass ------------------------------------------------------------

    def sync(self) -> None:
        """Bring every claim and volume one step closer to bound, as the controllers' resync."""
        self._pending = None
        for claim in list(self.api.store.iter_all(PVCS)):
            self._guarded(self._sync_claim, claim)
        for volume in list(self.api.store.iter_all(PVS)):
            self._guarded(self._sync_volume, volume)

    def _guarded(self, step: Any, obj: Obj) -> None:
        try:
            step(obj)
        except ApiError as error:
            # a lost race or a refused write: the next event's pass tries again
            log.info("storage controller: %s %s: %s", obj.get("kind"), name_of(obj), error.message)

    def _event(self, obj: Obj, event_type: str, reason: str, message: str, component: str) -> None:
        key = (str(obj["metadata"].get("uid")), reason, message)
        if key in self._reported:
            return
        self._reported.add(key)
        record_event(self.api, obj, event_type, reason, message, component)

    def _fresh(self, key: str, obj: Obj) -> Obj | None:
        return self.api.store.get(key, namespace_of(obj), name_of(obj))

    # -- claims --------------------------------------------------------------

    def _sync_claim(self, claim: Obj) -> None:
        claim = self._fresh(PVCS, claim) or claim
        meta = claim["metadata"]
        if meta.get("deletionTimestamp"):
            return
        annotations = meta.get("annotations") or {}
        volume_name = str((claim.get("spec") or {}).get("volumeName") or "")
        if annotations.get(BIND_COMPLETED):
            self._sync_bound_claim(claim, volume_name)
            return
        if volume_name:
            self._sync_claim_asking_for(claim, volume_name)
            return
        class_name = claim_class(claim)
        storage_class = self.api.store.get(STORAGE_CLASSES, "", class_name) if class_name else None
        delay = storage_class is not None and storage_class.get("volumeBindingMode") == WFFC
        volume = self._prebound_volume(claim) or (None if delay else self._best_match(claim))
        if volume is not None:
            self._bind(volume, claim)
            return
        if delay and SELECTED_NODE not in annotations:
            self._event(
                claim,
                "Normal",
                "WaitForFirstConsumer",
                "waiting for first consumer to be created before binding",
                PV_CONTROLLER,
            )
            return
        if not class_name:
            self._event(
                claim,
                "Normal",
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
                PV_CONTROLLER,
            )
            return
        if storage_class is None:
            self._event(
                claim,
                "Warning",
                "ProvisioningFailed",
                f'storageclass.storage.k8s.io "{class_name}" not found',
                PV_CONTROLLER,
            )
            return
        self._provision(claim, storage_class)

    def _sync_bound_claim(self, claim: Obj, volume_name: str) -> None:
        volume = self.api.store.get(PVS, "", volume_name) if volume_name else None
        phase = (claim.get("status") or {}).get("phase")
        if volume is None or not _points_to(volume, claim, need_uid=True):
            if phase != "Lost":
                self._claim_status(claim, "Lost", None)
                self._event(
                    claim,
                    "Warning",
                    "ClaimLost",
                    "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
                    PV_CONTROLLER,
                )
            return
        if phase != "Bound":
            self._claim_status(claim, "Bound", volume)

    def _sync_claim_asking_for(self, claim: Obj, volume_name: str) -> None:
        volume = self.api.store.get(PVS, "", volume_name)
        if volume is None:
            return
        ref = (volume.get("spec") or {}).get("claimRef")
        if ref is None:
            problem = _unsatisfied(volume, claim)
            if problem:
                self._event(
                    claim,
                    "Warning",
                    "VolumeMismatch",
                    f'Cannot bind to requested volume "{volume_name}": {problem}',
                    PV_CONTROLLER,
                )
                return
            self._bind(volume, claim)
        elif _points_to(volume, claim, need_uid=False):
            self._bind(volume, claim)
        else:
            self._event(
                claim,
                "Warning",
                "FailedBinding",
                f'volume "{volume_name}" already bound to a different claim.',
                PV_CONTROLLER,
            )

    def _prebound_volume(self, claim: Obj) -> Obj | None:
        for volume in self.api.store.iter_all(PVS):
            if volume["metadata"].get("deletionTimestamp"):
                continue
            if _points_to(volume, claim, need_uid=False) and not _unsatisfied(volume, claim):
                return volume
        return None

    def _best_match(self, claim: Obj) -> Obj | None:
        """The smallest Available volume that satisfies the claim, as findMatchingVolume."""
        best: Obj | None = None
        for volume in self.api.store.iter_all(PVS):
            spec = volume.get("spec") or {}
            if spec.get("claimRef") is not None or volume["metadata"].get("deletionTimestamp"):
                continue
            if (volume.get("status") or {}).get("phase") in ("Released", "Failed"):
                continue
            if _unsatisfied(volume, claim):
                continue
            if best is None or _size((spec.get("capacity") or {}).get("storage")) < _size(
                ((best.get("spec") or {}).get("capacity") or {}).get("storage")
            ):
                best = volume
        return best

    def _bind(self, volume: Obj, claim: Obj) -> None:
        """Point the volume at the claim, then the claim at the volume; both Bound."""
        pvs = self.api.kind("", "v1", PVS)
        pvcs = self.api.kind("", "v1", PVCS)
        if not _points_to(volume, claim, need_uid=True):
            new = clone(volume)
            if (new.get("spec") or {}).get("claimRef") is None:
                new["metadata"].setdefault("annotations", {})[BOUND_BY_CONTROLLER] = "yes"
            new["spec"]["claimRef"] = _claim_ref(claim)
            volume = self.api.update(pvs, None, name_of(volume), new)
        if (volume.get("status") or {}).get("phase") != "Bound":
            status = clone(volume)
            status["status"] = dict(status.get("status") or {}, phase="Bound")
            volume = self.api.update(pvs, None, name_of(volume), status, subresource="status")
        claim = self._fresh(PVCS, claim) or claim
        spec = claim.get("spec") or {}
        annotations = claim["metadata"].get("annotations") or {}
        if spec.get("volumeName") != name_of(volume) or not annotations.get(BIND_COMPLETED):
            new = clone(claim)
            added = new["metadata"].setdefault("annotations", {})
            if not spec.get("volumeName"):
                added[BOUND_BY_CONTROLLER] = "yes"
            added[BIND_COMPLETED] = "yes"
            new["spec"]["volumeName"] = name_of(volume)
            claim = self.api.update(pvcs, namespace_of(claim), name_of(claim), new)
        self._claim_status(claim, "Bound", volume)

    def _claim_status(self, claim: Obj, phase: str, volume: Obj | None) -> None:
        status: Obj = {"phase": phase}
        if volume is not None:
            status["accessModes"] = list((volume.get("spec") or {}).get("accessModes") or [])
            status["capacity"] = dict((volume.get("spec") or {}).get("capacity") or {})
        elif phase == "Lost":
            status = dict(claim.get("status") or {}, phase="Lost")
        if claim.get("status") == status:
            return
        new = clone(claim)
        new["status"] = status
        self.api.update(
            self.api.kind("", "v1", PVCS),
            namespace_of(claim),
            name_of(claim),
            new,
            subresource="status",
        )

    # -- provisioning ----------------------------------------------------------

    def _provision(self, claim: Obj, storage_class: Obj) -> None:
        provisioner = str(storage_class.get("provisioner", ""))
        annotations = claim["metadata"].get("annotations") or {}
        if annotations.get(STORAGE_PROVISIONER) != provisioner:
            new = clone(claim)
            added = new["metadata"].setdefault("annotations", {})
            added[STORAGE_PROVISIONER] = provisioner
            added[BETA_STORAGE_PROVISIONER] = provisioner
            claim = self.api.update(
                self.api.kind("", "v1", PVCS), namespace_of(claim), name_of(claim), new
            )
        self._event(
            claim,
            "Normal",
            "ExternalProvisioning",
            f'waiting for a volume to be created, either by external provisioner "{provisioner}" '
            "or manually created by system administrator",
            PV_CONTROLLER,
        )
        if provisioner == NO_PROVISIONER:
            # statically provisioned local volumes: nothing creates one on demand
            return
        component = f"{provisioner}_muster-sim"
        name = f"pvc-{claim['metadata']['uid']}"
        existing = self.api.store.get(PVS, "", name)
        if existing is not None:
            self._bind(existing, claim)
            return
        affinity, problem = self._placement(claim, storage_class, provisioner)
        if problem:
            self._event(
                claim,
                "Warning",
                "ProvisioningFailed",
                f'failed to provision volume with StorageClass "{name_of(storage_class)}": '
                + problem,
                component,
            )
            return
        self._event(
            claim,
            "Normal",
            "Provisioning",
            f'External provisioner is provisioning volume for claim "{_claim_key(claim)}"',
            component,
        )
        volume = self.api.create(
            self.api.kind("", "v1", PVS),
            None,
            _provisioned_volume(name, claim, storage_class, provisioner, affinity),
        )
        self._event(
            claim,
            "Normal",
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {name}",
            component,
        )
        self._bind(volume, claim)

    def _placement(
        self, claim: Obj, storage_class: Obj, provisioner: str
    ) -> tuple[Obj | None, str]:
        """The new volume's nodeAffinity, or why it cannot be placed."""
        allowed = storage_class.get("allowedTopologies") or []
        if storage_class.get("volumeBindingMode") != WFFC:
            if not allowed:
                return None, ""
            # the driver picks one segment of the first allowed term
            first = (allowed[0] or {}).get("matchLabelExpressions") or []
            expressions = [
                {"key": e["key"], "operator": "In", "values": [(e.get("values") or [""])[0]]}
                for e in first
            ]
            return {"required": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}, ""
        node_name = str((claim["metadata"].get("annotations") or {}).get(SELECTED_NODE, ""))
        node = self.api.store.get(NODES, "", node_name)
        if node is None:
            return None, f'failed to get target node: node "{node_name}" not found'
        labels = node["metadata"].get("labels") or {}
        keys = self._topology_keys(node_name, provisioner) or [
            str(e.get("key"))
            for term in allowed[:1]
            for e in (term or {}).get("matchLabelExpressions") or []
        ]
        keys = keys or [HOSTNAME_LABEL]
        missing = [k for k in keys if k not in labels]
        if missing:
            return None, (
                f'error generating accessibility requirements: node "{node_name}" has no '
                f"topology label {', '.join(missing)}"
            )
        segment = {k: labels[k] for k in keys}
        if allowed and not any(_term_allows(term, segment) for term in allowed):
            return None, (
                f'error generating accessibility requirements: selected node "{node_name}" '
                f"topology {segment} is not in allowed topologies"
            )
        expressions = [{"key": k, "operator": "In", "values": [v]} for k, v in segment.items()]
        return {"required": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}, ""

    def _topology_keys(self, node_name: str, driver: str) -> list[str]:
        csinode = self.api.store.get(CSINODES, "", node_name)
        for entry in ((csinode or {}).get("spec") or {}).get("drivers") or []:
            if entry.get("name") == driver:
                return [str(k) for k in entry.get("topologyKeys") or []]
        return []

    # -- volumes ---------------------------------------------------------------

    def _sync_volume(self, volume: Obj) -> None:
        volume = self._fresh(PVS, volume) or volume
        if volume["metadata"].get("deletionTimestamp"):
            return
        spec = volume.get("spec") or {}
        phase = (volume.get("status") or {}).get("phase")
        ref = spec.get("claimRef")
        if ref is None:
            if phase not in ("Available", "Failed"):
                self._volume_phase(volume, "Available")
            return
        claim = self.api.store.get(PVCS, str(ref.get("namespace", "")), str(ref.get("name", "")))
        if not ref.get("uid"):
            # pre-bound by name to a claim that is not there yet
            if claim is None and phase != "Available":
                self._volume_phase(volume, "Available")
            return
        if claim is None or claim["metadata"].get("uid") != ref.get("uid"):
            self._reclaim(volume, phase)
            return
        if (claim.get("spec") or {}).get("volumeName") == name_of(volume) and phase != "Bound":
            self._volume_phase(volume, "Bound")

    def _reclaim(self, volume: Obj, phase: str | None) -> None:
        """The claim is gone: release the volume and apply its reclaim policy."""
        if phase not in ("Released", "Failed"):
            volume = self._volume_phase(volume, "Released")
        policy = (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy")
        if policy == "Delete":
            if (volume["metadata"].get("annotations") or {}).get(PROVISIONED_BY):
                with contextlib.suppress(ApiError):
                    self.api.delete(self.api.kind("", "v1", PVS), None, name_of(volume))
            elif phase != "Failed":
                self._volume_phase(
                    volume,
                    "Failed",
                    f'error getting deleter volume plugin for volume "{name_of(volume)}": no '
                    "deletable volume plugin matched",
                )
        elif policy == "Recycle":
            # the recycler scrubs the volume and offers it again
            new = clone(volume)
            new["spec"].pop("claimRef", None)
            self.api.update(self.api.kind("", "v1", PVS), None, name_of(volume), new)

    def _volume_phase(self, volume: Obj, phase: str, message: str = "") -> Obj:
        new = clone(volume)
        status: Obj = dict(new.get("status") or {}, phase=phase)
        if message:
            status["message"] = message
        else:
            status.pop("message", None)
        new["status"] = status
        return self.api.update(
            self.api.kind("", "v1", PVS), None, name_of(volume), new, subresource="status"
        )


def _claim_ref(claim: Obj) -> Obj:
    meta = claim["metadata"]
    return {
        "kind": "PersistentVolumeClaim",
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "apiVersion": "v1",
        "resourceVersion": meta.get("resourceVersion"),
    }


def _points_to(volume: Obj, claim: Obj, need_uid: bool) -> bool:
    """Whether the volume's claimRef names the claim (and, if asked or set, its uid)."""
    ref = (volume.get("spec") or {}).get("claimRef") or {}
    meta = claim["metadata"]
    if ref.get("name") != meta.get("name") or ref.get("namespace") != meta.get("namespace"):
        return False
    if ref.get("uid"):
        return bool(ref["uid"] == meta.get("uid"))
    return not need_uid


def _unsatisfied(volume: Obj, claim: Obj) -> str:
    """Why the volume cannot serve the claim, in the PV controller's words ("" if it can)."""
    spec = volume.get("spec") or {}
    claim_spec = claim.get("spec") or {}
    if volume_class(volume) != claim_class(claim):
        return "storageClassName does not match"
    if _size((spec.get("capacity") or {}).get("storage")) < _size(_requested(claim)):
        return "requested PV is too small"
    if spec.get("volumeMode", "Filesystem") != claim_spec.get("volumeMode", "Filesystem"):
        return "incompatible volumeMode"
    if not set(claim_spec.get("accessModes") or []) <= set(spec.get("accessModes") or []):
        return "incompatible accessMode"
    selector = claim_spec.get("selector")
    labels = volume["metadata"].get("labels") or {}
    if selector is not None and not label_selector_matches(selector, labels):
        return "volume labels do not match the claim's selector"
    return ""


def _term_allows(term: Obj, segment: dict[str, str]) -> bool:
    for expression in (term or {}).get("matchLabelExpressions") or []:
        if segment.get(str(expression.get("key"))) not in (expression.get("values") or []):
            return False
    return True


def _provisioned_volume(
    name: str, claim: Obj, storage_class: Obj, provisioner: str, affinity: Obj | None
) -> Obj:
    """The PersistentVolume an external provisioner creates for a claim."""
    claim_spec = claim.get("spec") or {}
    parameters = storage_class.get("parameters") or {}
    spec: Obj = {
        "accessModes": list(claim_spec.get("accessModes") or []),
        "capacity": {"storage": _requested(claim)},
        "claimRef": _claim_ref(claim),
        "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy", "Delete"),
        "storageClassName": name_of(storage_class),
        "volumeMode": claim_spec.get("volumeMode", "Filesystem"),
    }
    if storage_class.get("mountOptions"):
        spec["mountOptions"] = list(storage_class["mountOptions"])
    if affinity is not None:
        spec["nodeAffinity"] = affinity
    if not csi_driver_name_errors(provisioner, "provisioner"):
        csi: Obj = {
            "driver": provisioner,
            "volumeHandle": f"sim-{claim['metadata']['uid']}",
            "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity": "muster-sim"},
        }
        if parameters.get("csi.storage.k8s.io/fstype"):
            csi["fsType"] = parameters["csi.storage.k8s.io/fstype"]
        spec["csi"] = csi
    else:
        # an in-tree style name ("kubernetes.io/aws-ebs") is no CSI driver name: a plain
        # directory stands in for the disk
        spec["hostPath"] = {
            "path": f"/var/lib/muster-sim/volumes/{name}",
            "type": "DirectoryOrCreate",
        }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {PROVISIONED_BY: provisioner}},
        "spec": spec,
    }
