"""The built-in admission plugins of kube-apiserver that sim applies to writes: Priority
(a pod's priority from its PriorityClass, and the two system classes every cluster has),
TaintNodesByCondition (a new node starts not-ready) and DefaultStorageClass (a claim naming
no class gets the default one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from muster_sim.apiserver.resources import PRIORITY_CLASSES
from muster_sim.apiserver.store import Store
from muster_sim.errors import forbidden
from scheduler.api import priority

Obj = dict[str, Any]

PreemptLowerPriority = "PreemptLowerPriority"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
PVCS = "persistentvolumeclaims"
STORAGE_CLASSES = "storageclasses.storage.k8s.io"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


# -- Priority -------------------------------------------------------------------------


def admit_priority(
    pod: Obj, find_class: Callable[[str], Obj | None], default_class: Callable[[], Obj | None]
) -> None:
    """Priority admission: fill spec.priority and preemptionPolicy from the PriorityClass
    (the rule of scheduler.api.priority); its refusal is the API server's 403."""
    try:
        priority.admit_priority(pod, find_class, default_class)
    except priority.PriorityRefused as refused:
        raise forbidden("", "pods", refused.pod_name, refused.message) from refused


def default_priority_class(store: Store) -> Obj | None:
    """The PriorityClass a pod naming none gets, if any is the global default."""
    defaults = [pc for pc in store.iter_all(PRIORITY_CLASSES) if pc.get("globalDefault")]
    if not defaults:
        return None
    # with several defaults the real admission picks the lowest value
    return min(defaults, key=lambda pc: int(pc.get("value", 0)))


def system_priority_classes() -> list[Obj]:
    """The two classes every real cluster creates at start."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "globalDefault": False,
            "description": "Used for system critical pods that must not be moved from their "
            "current node.",
            "preemptionPolicy": PreemptLowerPriority,
        }
        for name, value in (
            ("system-node-critical", 2000001000),
            ("system-cluster-critical", 2000000000),
        )
    ]


# -- TaintNodesByCondition --------------------------------------------------------------


def taint_new_node(node: Obj) -> None:
    """kube-apiserver's TaintNodesByCondition admission: a node created through the API
    starts tainted not-ready (NoSchedule) until the node lifecycle controller sees it
    Ready. (sim's own simulated nodes are registered past that point.)"""
    spec = node.setdefault("spec", {})
    taints = spec.setdefault("taints", [])
    if isinstance(taints, list) and not any(
        isinstance(t, dict) and t.get("key") == NOT_READY_TAINT for t in taints
    ):
        taints.append({"key": NOT_READY_TAINT, "effect": "NoSchedule"})


# -- DefaultStorageClass ----------------------------------------------------------------


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
