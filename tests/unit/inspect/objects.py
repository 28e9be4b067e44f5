"""Wire objects for the inspect tests, as the API server lists them."""

from __future__ import annotations

from typing import Any

from scheduler.api import wire

CREATED = "2026-01-01T00:00:00Z"
# The default config with preempt.
PREEMPTING = """\
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def node(name: str, cpu: str = "2", taints: list[dict[str, str]] | None = None) -> wire.Node:
    return wire.from_dict(
        {
            "metadata": {"name": name},
            "spec": {"taints": taints or []},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        wire.Node,
    )


def pod_doc(
    name: str, *, group: str = "", cpu: str = "1", priority_class: str = "", **meta: Any
) -> dict[str, Any]:
    """A pod manifest as a user writes it (no uid, no status)."""
    annotations = {"scheduling.k8s.io/group-name": group} if group else {}
    spec: dict[str, Any] = {
        "schedulerName": "muster",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations, **meta},
        "spec": spec,
    }


def podgroup_doc(name: str, min_member: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member, **spec},
    }


def pod(
    name: str,
    *,
    node_name: str = "",
    phase: str = "Pending",
    namespace: str = "ns",
    priority: int | None = None,
    **kw: Any,
) -> wire.Pod:
    """A pod as listed: uid, namespace, creationTimestamp, status, the priority admission
    resolved."""
    doc = pod_doc(name, **kw)
    if priority is not None:
        doc["spec"]["priority"] = priority
    doc["metadata"].update(uid=f"uid-{name}", namespace=namespace, creationTimestamp=CREATED)
    if node_name:
        doc["spec"]["nodeName"] = node_name
    doc["status"] = {"phase": phase}
    return wire.from_dict(doc, wire.Pod)


def podgroup(name: str, min_member: int, namespace: str = "ns", **spec: Any) -> wire.PodGroup:
    doc = podgroup_doc(name, min_member, **spec)
    doc["metadata"].update(uid=f"uid-pg-{name}", namespace=namespace, creationTimestamp=CREATED)
    return wire.from_dict(doc, wire.PodGroup)


def queue(name: str = "default", **spec: Any) -> wire.Queue:
    return wire.from_dict(
        {"metadata": {"name": name}, "spec": spec, "status": {"state": "Open"}}, wire.Queue
    )


def priority_class(name: str, value: int) -> wire.PriorityClass:
    return wire.from_dict({"metadata": {"name": name}, "value": value}, wire.PriorityClass)
