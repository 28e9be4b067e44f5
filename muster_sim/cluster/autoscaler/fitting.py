"""The stand-in autoscaler's simulation, as cluster-autoscaler's: pods placed first fit by
their requests (and a pod slot), nodeSelector, required node affinity and taints, on the nodes
there are, those on their way, and new nodes of a group's template. Pod (anti-)affinity,
topology spread and host ports are not simulated."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from muster_sim.apiserver.admission_plugins import NOT_READY_TAINT
from muster_sim.cluster.autoscaler.node_groups import NodeGroup
from muster_sim.selectors import node_selector_matches
from muster_sim.validation.pod_resources import pod_requests
from muster_sim.validation.quantities import quantity

Obj = dict[str, Any]
Amounts = dict[str, Fraction]

# The taints of a node on its way, which cluster-autoscaler's simulation leaves out.
_STARTUP_TAINTS = frozenset({NOT_READY_TAINT, "node.kubernetes.io/unreachable"})


@dataclass
class SimNode:
    """A node as the simulation fills it: its labels, taints and free room."""

    name: str
    labels: dict[str, str]
    taints: list[Obj]
    free: Amounts

    def admits(self, spec: Obj) -> bool:
        """Whether the node's labels and taints let a pod of this spec on."""
        selector = spec.get("nodeSelector") or {}
        if any(self.labels.get(k) != v for k, v in selector.items()):
            return False
        affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        view = {"metadata": {"name": self.name, "labels": self.labels}}
        if affinity is not None and not node_selector_matches(affinity, view):
            return False
        tolerations = spec.get("tolerations") or []
        return all(
            _tolerated(taint, tolerations)
            for taint in self.taints
            if taint.get("effect") in ("NoSchedule", "NoExecute")
            and taint.get("key") not in _STARTUP_TAINTS
        )

    def fits(self, need: Amounts) -> bool:
        """Whether the node has room for `need`."""
        return all(self.free.get(name, Fraction(0)) >= value for name, value in need.items())

    def take(self, need: Amounts) -> None:
        """Count `need` as placed on the node."""
        for name, value in need.items():
            self.free[name] = self.free.get(name, Fraction(0)) - value


@dataclass(frozen=True)
class SimPod:
    """A pod to place: its spec (for labels and taints) and what it takes."""

    spec: Obj
    need: Amounts


class Simulation:
    """The nodes there are and those on their way, to place pods on, first fit."""

    def __init__(self, nodes: list[SimNode]) -> None:
        self.nodes = nodes

    def place(self, pod: SimPod) -> bool:
        """Place the pod on the first node that fits and admits it; whether one did."""
        for node in self.nodes:
            if node.fits(pod.need) and node.admits(pod.spec):
                node.take(pod.need)
                return True
        return False


def _tolerated(taint: Obj, tolerations: list[Obj]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
            continue
        operator = toleration.get("operator") or "Equal"
        key = toleration.get("key") or ""
        if operator == "Exists" and (not key or key == taint.get("key")):
            return True
        if key == taint.get("key") and toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def amounts(values: Obj | None) -> Amounts:
    """The quantities of a resource list that parse, by resource name."""
    found: Amounts = {}
    for name, raw in (values or {}).items():
        parsed = quantity(raw)
        if parsed is not None:
            found[str(name)] = parsed
    return found


def pod_need(spec: Obj) -> Amounts:
    """What a pod takes on its node: its effective request (PodRequests: its containers',
    pod-level requests in their place, overhead) and one pod slot."""
    total: Amounts = dict(pod_requests(spec))
    total["pods"] = Fraction(1)
    return total


def template_node(group: NodeGroup, name: str) -> SimNode:
    """A new, empty node of the group, as the simulation sees one."""
    obj = group.node(0, 0)
    return SimNode(
        name,
        dict(obj["metadata"]["labels"]),
        list(obj["spec"].get("taints") or []),
        amounts(obj["status"]["allocatable"]),
    )


def nodes_for(group: NodeGroup, pods: list[SimPod], limit: int) -> tuple[int, int]:
    """How many new nodes of the group the pods take, at most `limit`, and how many of the
    pods they hold (first fit, a new node when none of the new ones has room)."""
    added: list[SimNode] = []
    helped = 0
    for pod in pods:
        if any(node.fits(pod.need) and node.admits(pod.spec) for node in added):
            next(n for n in added if n.fits(pod.need) and n.admits(pod.spec)).take(pod.need)
            helped += 1
            continue
        if len(added) >= limit:
            continue
        fresh = template_node(group, f"{group.name}-template-{len(added)}")
        if fresh.fits(pod.need) and fresh.admits(pod.spec):
            fresh.take(pod.need)
            added.append(fresh)
            helped += 1
    return len(added), helped
