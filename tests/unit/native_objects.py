"""Builders of Kubernetes' own gang objects as the API server serves them, in either version:
native_podgroup("g", 4), workload("w", queue="team-a"), member("g-0", group="g")."""

from __future__ import annotations

from typing import Any

import msgspec

from scheduler.api import wire
from scheduler.api.native import (
    V1ALPHA2,
    PodGroupWire,
    WorkloadWire,
    decode_podgroup,
    decode_workload,
)


def native_podgroup_body(
    name: str,
    min_count: int | None = 4,
    *,
    version: str = V1ALPHA2,
    namespace: str = "ns",
    workload: str = "",
    template: str = "t",
    whole: bool = False,
    priority: int | None = None,
    priority_class: str = "",
    preemption_policy: str = "",
    topology_key: str = "",
    claims: list[dict[str, Any]] | None = None,
    parent: str = "",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A PodGroup as `version` serves it (`min_count` None: the basic policy), explicit nulls
    included where the API server writes them."""
    policy: dict[str, Any] = (
        {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    )
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if version == V1ALPHA2:
        spec["podGroupTemplateRef"] = (
            {"workload": {"workloadName": workload, "podGroupTemplateName": template}}
            if workload
            else None
        )
        spec["disruptionMode"] = "PodGroup" if whole else "Pod"
    else:
        if workload:
            spec["workloadRef"] = {"workloadName": workload, "templateName": template}
        spec["disruptionMode"] = {"all": {}} if whole else {"single": {}}
        if preemption_policy:
            spec["preemptionPolicy"] = preemption_policy
        if parent:
            spec["parentCompositePodGroupName"] = parent
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    if topology_key:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    if claims:
        spec["resourceClaims"] = claims
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"npg-{name}",
        "generation": 1,
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "finalizers": ["scheduling.k8s.io/podgroup-protection"],
    }
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    status: dict[str, Any] = {"conditions": conditions} if conditions else {}
    return {"metadata": meta, "spec": spec, "status": status}


def native_podgroup(name: str, min_count: int | None = 4, **options: Any) -> PodGroupWire:
    """A PodGroup decoded as the cache decodes it (see native_podgroup_body)."""
    return decode_podgroup(msgspec.json.encode(native_podgroup_body(name, min_count, **options)))


def workload(
    name: str,
    *,
    namespace: str = "ns",
    queue: str = "",
    queue_as_label: bool = False,
    templates: tuple[str, ...] = ("t",),
) -> WorkloadWire:
    """A Workload naming `queue` in its annotation (or label)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"wl-{name}"}
    if queue:
        meta["labels" if queue_as_label else "annotations"] = {
            "scheduling.volcano.sh/queue-name": queue
        }
    body = {
        "metadata": meta,
        "spec": {
            "podGroupTemplates": [
                {
                    "name": t,
                    "schedulingPolicy": {"gang": {"minCount": 1}},
                    "schedulingConstraints": None,
                }
                for t in templates
            ]
        },
    }
    return decode_workload(msgspec.json.encode(body))


def member(
    name: str,
    *,
    group: str = "",
    volcano_group: str = "",
    namespace: str = "ns",
    cpu: str = "1",
    scheduler: str = "muster",
    queue: str = "",
    node: str = "",
    phase: str = "Pending",
    priority: int = 0,
) -> wire.Pod:
    """A pod naming native PodGroup `group` in spec.schedulingGroup (and Volcano's
    `volcano_group` in its annotation, when given)."""
    annotations: dict[str, str] = {}
    if volcano_group:
        annotations["scheduling.k8s.io/group-name"] = volcano_group
    if queue:
        annotations["scheduling.volcano.sh/queue-name"] = queue
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if annotations:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    return wire.from_dict({"metadata": meta, "spec": spec, "status": {"phase": phase}}, wire.Pod)
