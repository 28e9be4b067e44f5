"""The naive baseline of bench/ places pods validly (first fit, never over a node's room)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from harness.naive import first_fit, free_nodes, pod_requests


def node(name: str, cpu: str = "2", memory: str = "4Gi", pods: str = "110") -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(cpu: str, memory: str = "1Gi", node_name: str = "") -> dict[str, object]:
    requests = {"cpu": cpu, "memory": memory}
    spec: dict[str, object] = {"containers": [{"resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"spec": spec, "status": {"phase": "Running"}}


def test_first_fit_fills_nodes_in_order_and_never_overcommits() -> None:
    free = free_nodes([node("b"), node("a")], [pod("1500m", node_name="a")])
    placed = [first_fit(free, *pod_requests(pod("1"))) for _ in range(3)]
    assert [n.name if n else None for n in placed] == ["b", "b", None]
    assert all(n.cpu_m >= 0 and n.memory >= 0 and n.slots >= 0 for n in free)


def test_not_ready_and_unschedulable_nodes_take_no_pods() -> None:
    cordoned = node("c") | {"spec": {"unschedulable": True}}
    not_ready = node("d")
    not_ready["status"] = {"allocatable": {"cpu": "8"}, "conditions": []}
    assert free_nodes([cordoned, not_ready], []) == []


def test_pod_slots_bound_placement() -> None:
    free = free_nodes([node("a", cpu="64", pods="2")], [])
    assert [first_fit(free, 100, 0) is not None for _ in range(3)] == [True, True, False]
