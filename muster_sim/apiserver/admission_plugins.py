"""kube-apiserver's DefaultStorageClass admission: a new claim naming no class gets the default."""

from __future__ import annotations

from typing import Any

from muster_sim.apiserver.store import Store

Obj = dict[str, Any]

PVCS = "persistentvolumeclaims"
STORAGE_CLASSES = "storageclasses.storage.k8s.io"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def is_default_class(sc: Obj) -> bool:
    """Whether a StorageClass is marked default (the GA or the beta annotation, exactly "true")."""
    annotations = sc["metadata"].get("annotations") or {}
    return "true" in (
        annotations.get(DEFAULT_CLASS_ANNOTATION),
        annotations.get(BETA_DEFAULT_CLASS_ANNOTATION),
    )


def default_class(store: Store) -> Obj | None:
    """The default StorageClass; with several, the newest (then first by name), as since 1.26."""
    defaults = [sc for sc in store.iter_all(STORAGE_CLASSES) if is_default_class(sc)]
    if not defaults:
        return None
    newest = max(str(sc["metadata"].get("creationTimestamp", "")) for sc in defaults)
    candidates = [
        sc for sc in defaults if str(sc["metadata"].get("creationTimestamp", "")) == newest
    ]
    return min(candidates, key=lambda sc: str(sc["metadata"]["name"]))


def default_storage_class(pvc: Obj, store: Store) -> None:
    """Set spec.storageClassName of a claim that names no class (field nor beta annotation)."""
    spec = pvc.get("spec")
    if not isinstance(spec, dict) or spec.get("storageClassName") is not None:
        return
    if BETA_CLASS_ANNOTATION in (pvc["metadata"].get("annotations") or {}):
        return
    found = default_class(store)
    if found is not None:
        spec["storageClassName"] = found["metadata"]["name"]
