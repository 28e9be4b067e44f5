"""The built-in admission plugins of kube-apiserver that sim applies to writes: Priority
(a pod's priority from its PriorityClass, and the two system classes every cluster has; a
native PodGroup's too), TaintNodesByCondition (a new node starts not-ready),
DefaultStorageClass (a claim naming no class gets the default one), PodGroupProtection (a
native PodGroup's finalizer) and PodGroupWorkloadExists (the Workload and template a native
PodGroup names exist)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from muster_sim.apiserver.resources import NATIVE_WORKLOADS, PRIORITY_CLASSES
from muster_sim.apiserver.store import Store
from muster_sim.errors import forbidden
from muster_sim.validation.native_scheduling import (
    GROUP as NATIVE_GROUP,
)
from muster_sim.validation.native_scheduling import (
    PROTECTION_FINALIZER,
    V1ALPHA2,
)
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


# -- Native PodGroups (scheduling.k8s.io) -----------------------------------------------


def admit_podgroup_priority(
    podgroup: Obj,
    find_class: Callable[[str], Obj | None],
    default_class: Callable[[], Obj | None],
    version: str,
) -> None:
    """Priority admission of a new native PodGroup: spec.priority from the class it names
    (else the global default, else 0), and spec.priorityClassName; a preset priority that
    differs, or a class that does not exist, is the API server's 403. At v1beta1 it fills
    preemptionPolicy from the class too (PodGroupPreemptionPolicy)."""
    spec = podgroup.setdefault("spec", {})
    name = str(podgroup["metadata"].get("name", ""))
    class_name = spec.get("priorityClassName")
    if class_name:
        found = find_class(str(class_name))
        if found is None:
            raise forbidden(
                NATIVE_GROUP,
                "podgroups",
                name,
                f"no PriorityClass with name {class_name} was found",
            )
    else:
        found = default_class()
    value = int(found.get("value", 0)) if found is not None else 0
    preset = spec.get("priority")
    if preset is not None and preset != value:
        raise forbidden(
            NATIVE_GROUP,
            "podgroups",
            name,
            f"priority set in the pod group ({preset}) must match the priority computed "
            f"({value}) based on the priority class set in the spec",
        )
    spec["priority"] = value
    if found is not None:
        spec["priorityClassName"] = found["metadata"]["name"]
    else:
        spec.pop("priorityClassName", None)
    if version != V1ALPHA2 and spec.get("preemptionPolicy") is None:
        spec["preemptionPolicy"] = (found or {}).get("preemptionPolicy") or PreemptLowerPriority


def protect_podgroup(podgroup: Obj) -> None:
    """PodGroupProtection: a new native PodGroup carries the finalizer that keeps it while a
    pod that is not done names it (the podgroup-protection controller removes it)."""
    finalizers = podgroup["metadata"].setdefault("finalizers", [])
    if isinstance(finalizers, list) and PROTECTION_FINALIZER not in finalizers:
        finalizers.append(PROTECTION_FINALIZER)


def check_workload_exists(store: Store, podgroup: Obj, version: str) -> None:
    """PodGroupWorkloadExists: a new PodGroup that names a Workload's template needs that
    Workload (not being deleted) to hold that template; else the API server's 403."""
    spec = podgroup.get("spec") or {}
    if version == V1ALPHA2:
        reference = (spec.get("podGroupTemplateRef") or {}).get("workload")
        template_key = "podGroupTemplateName"
    else:
        reference = spec.get("workloadRef")
        template_key = "templateName"
    if not isinstance(reference, dict):
        return
    meta = podgroup["metadata"]
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
    workload_name = str(reference.get("workloadName", ""))
    template = str(reference.get(template_key, ""))
    workload = store.get(NATIVE_WORKLOADS, namespace, workload_name)
    if workload is None:
        why = f'PodGroup rejected: Workload "{workload_name}" not found'
    elif workload["metadata"].get("deletionTimestamp"):
        why = f'PodGroup rejected: Workload "{workload_name}" is being deleted'
    elif not any(
        isinstance(t, dict) and t.get("name") == template
        for t in (workload.get("spec") or {}).get("podGroupTemplates") or []
    ):
        why = (
            f'PodGroup rejected: PodGroupTemplate "{template}" not found in Workload '
            f'"{workload_name}"'
        )
    else:
        return
    raise forbidden(NATIVE_GROUP, "podgroups", name, why)
