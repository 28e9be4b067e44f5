"""Builders for pods with labels, pod (anti-)affinity and spread, for the topology tests."""

from __future__ import annotations

from typing import Any

from scheduler.api import wire
from scheduler.api.job import JobInfo
from scheduler.api.node import NodeInfo
from scheduler.api.placement import placement_spec
from scheduler.api.pod_topology import topology_spec
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskInfo, TaskStatus
from tests.unit.builders import node, task

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def zoned_nodes(zones: dict[str, int], cpu: float = 8) -> list[NodeInfo]:
    """Nodes z1-0, z1-1, ... with hostname and zone labels, `count` per zone."""
    nodes = []
    for zone, count in zones.items():
        for index in range(count):
            name = f"{zone}-{index}"
            nodes.append(node(name, cpu=cpu, labels={HOST: name, ZONE: zone}))
    return nodes


def with_topology(
    pod: TaskInfo, labels: dict[str, str], spec: dict[str, Any] | None = None
) -> TaskInfo:
    """Give a builder's pod labels and the pod-to-pod constraints of a spec fragment."""
    decoded = wire.from_dict(spec or {}, wire.PodSpec)
    pod.labels = labels
    pod.topology = topology_spec(decoded, pod.namespace, labels)
    if spec:
        pod.placement = placement_spec(decoded)
    return pod


def pod(
    name: str,
    labels: dict[str, str],
    spec: dict[str, Any] | None = None,
    *,
    namespace: str = "default",
    on: str = "",
    status: TaskStatus = TaskStatus.RUNNING,
) -> TaskInfo:
    """A pod with labels and constraints; placed on node `on` (running) unless on is ""."""
    built = task(
        name,
        0.1,
        namespace=namespace,
        node_name=on,
        status=status if on else TaskStatus.PENDING,
    )
    return with_topology(built, labels, spec)


def gang_topology(job: JobInfo, labels: dict[str, str], spec: dict[str, Any]) -> JobInfo:
    """Every member of a builder's gang gets the labels and constraints."""
    for member in job.tasks.values():
        with_topology(member, labels, spec)
    return job


def cluster(nodes: list[NodeInfo], placed: list[TaskInfo]) -> ClusterSnapshot:
    """A snapshot of nodes with the placed pods on them."""
    snapshot = ClusterSnapshot(nodes={n.name: n for n in nodes})
    for placed_pod in placed:
        snapshot.nodes[placed_pod.node_name].add_task(placed_pod)
    return snapshot


def term(key: str = HOST, namespaces: list[str] | None = None, **selector: Any) -> dict[str, Any]:
    """A pod affinity term; `selector` holds labelSelector, namespaceSelector and the
    label key lists as the API spells them."""
    body: dict[str, Any] = {"topologyKey": key}
    if namespaces is not None:
        body["namespaces"] = namespaces
    body.update(selector)
    return body


def match(**labels: str) -> dict[str, Any]:
    """A labelSelector of matchLabels."""
    return {"matchLabels": labels}


def affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    """A spec fragment with required pod affinity."""
    return {
        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}
    }


def anti_affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    """A spec fragment with required pod anti-affinity."""
    return {
        "affinity": {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}
        }
    }


def spread(*constraints: dict[str, Any]) -> dict[str, Any]:
    """A spec fragment with topology spread constraints."""
    return {"topologySpreadConstraints": list(constraints)}


def constraint(
    key: str = ZONE, max_skew: int = 1, when: str = "DoNotSchedule", **extra: Any
) -> dict[str, Any]:
    """One topology spread constraint."""
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}
