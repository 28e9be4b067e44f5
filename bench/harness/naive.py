"""First-fit placement with its own accounting: the naive baseline's whole decision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.api.quantity import int_value, milli_value


@dataclass
class FreeNode:
    """What is left on a node: cpu in millicores, memory in bytes, pod slots."""

    name: str
    cpu_m: int
    memory: int
    slots: int

    def fits(self, cpu_m: int, memory: int) -> bool:
        """True when a pod with these requests fits in what is left."""
        return self.slots >= 1 and self.cpu_m >= cpu_m and self.memory >= memory

    def take(self, cpu_m: int, memory: int) -> None:
        """Count a pod on the node."""
        self.cpu_m -= cpu_m
        self.memory -= memory
        self.slots -= 1


def pod_requests(pod: dict[str, Any]) -> tuple[int, int]:
    """(cpu millicores, memory bytes) a pod requests: the sum over its containers."""
    cpu_m = memory = 0
    for container in pod.get("spec", {}).get("containers", []):
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu_m += milli_value(requests.get("cpu", 0))
        memory += int_value(requests.get("memory", 0))
    return cpu_m, memory


def free_nodes(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> list[FreeNode]:
    """Ready, schedulable nodes (in name order) minus the pods already on them."""
    free: dict[str, FreeNode] = {}
    for node in sorted(nodes, key=lambda n: str(n["metadata"]["name"])):
        status = node.get("status", {})
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions", [])
        )
        if not ready or node.get("spec", {}).get("unschedulable"):
            continue
        allocatable = status.get("allocatable", {})
        name = str(node["metadata"]["name"])
        free[name] = FreeNode(
            name,
            milli_value(allocatable.get("cpu", 0)),
            int_value(allocatable.get("memory", 0)),
            int_value(allocatable.get("pods", 110)),
        )
    for pod in pods:
        node_name = pod.get("spec", {}).get("nodeName")
        phase = pod.get("status", {}).get("phase")
        if node_name in free and phase not in ("Succeeded", "Failed"):
            free[node_name].take(*pod_requests(pod))
    return list(free.values())


def first_fit(free: list[FreeNode], cpu_m: int, memory: int) -> FreeNode | None:
    """The first node (in order) the pod fits on, with the pod counted on it; None if none."""
    for node in free:
        if node.fits(cpu_m, memory):
            node.take(cpu_m, memory)
            return node
    return None
