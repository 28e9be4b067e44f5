"""The nodeorder plugin: kube-scheduler's node scorers, weighted as Volcano configures them.

Each scorer gives 0..100; the plugin returns their weighted sum:

- least-allocated: mean over cpu and memory of (allocatable - requested) * 100 / allocatable
- most-allocated: mean over cpu and memory of requested * 100 / allocatable
- balanced allocation: 100 * (1 - standard deviation of the cpu and memory fractions)
- node affinity: weights of the matching preferred terms * 100 / the sum of all their weights
- pod affinity and topology spread (interpodaffinity.py, podtopologyspread.py), only in
  sessions where some pod uses them

"requested" is what the node's pods use plus this pod. As in kube-scheduler,
least- and most-allocated count a pod with no cpu (memory) request as
100m (200Mi), so best-effort pods still spread; balanced allocation uses the
real requests. Scores stay floats (kube-scheduler truncates to integers) so
close nodes are still told apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from scheduler.api.node import NodeInfo
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskInfo
from scheduler.framework.arguments import Arguments, Weight
from scheduler.framework.plugin import Plugin
from scheduler.plugins.matching import term_matches
from scheduler.plugins.podtopologyspread import PodTopology

if TYPE_CHECKING:
    from scheduler.framework.session import Session

# kube-scheduler's DefaultMilliCPURequest and DefaultMemoryRequest.
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
MAX_NODE_SCORE = 100.0
# Least- and most-allocated average two resources on a 0..100 scale.
HALF_MAX_SCORE = MAX_NODE_SCORE / 2
_NO_ROOM = float("inf")

LEAST_REQUESTED_WEIGHT = "leastrequested.weight"
MOST_REQUESTED_WEIGHT = "mostrequested.weight"
BALANCED_RESOURCE_WEIGHT = "balancedresource.weight"
NODE_AFFINITY_WEIGHT = "nodeaffinity.weight"


class NodeOrderArguments(Arguments):
    """nodeorder's arguments, in Volcano's spelling."""

    least_requested_weight: Weight = Field(1.0, alias="leastrequested.weight")
    most_requested_weight: Weight = Field(0.0, alias="mostrequested.weight")
    balanced_resource_weight: Weight = Field(1.0, alias="balancedresource.weight")
    node_affinity_weight: Weight = Field(1.0, alias="nodeaffinity.weight")
    # Volcano's defaults (kube-scheduler's too): InterPodAffinity and PodTopologySpread 2.
    pod_affinity_weight: Weight = Field(2.0, alias="podaffinity.weight")
    pod_topology_spread_weight: Weight = Field(2.0, alias="podtopologyspread.weight")


class NodeOrderPlugin(Plugin[NodeOrderArguments]):
    """Scores nodes by free room, packing, cpu/memory balance and preferred node affinity."""

    name = "nodeorder"

    def __init__(self, arguments: NodeOrderArguments | Mapping[str, Any] | None = None) -> None:
        super().__init__(arguments)
        args = self.arguments
        self.least_requested_weight = args.least_requested_weight
        self.most_requested_weight = args.most_requested_weight
        self.balanced_weight = args.balanced_resource_weight
        self.node_affinity_weight = args.node_affinity_weight
        self._pods = PodTopology(ClusterSnapshot())

    def on_session_open(self, session: Session) -> None:
        """Index the placed pods when some pod's affinity or spread is to be scored."""
        args = self.arguments
        self._pods = PodTopology(
            session.snapshot,
            affinity=args.pod_affinity_weight > 0,
            spread=args.pod_topology_spread_weight > 0,
            scoring=True,
        )

    def on_allocate(self, task: TaskInfo) -> None:
        """A placed pod counts for its neighbours' pod affinity and spread scores."""
        self._pods.placed(task)

    def on_deallocate(self, task: TaskInfo) -> None:
        """An unplaced or evicted pod no longer counts."""
        self._pods.unplaced(task)

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """The weighted sum of the enabled scorers for this task on this node."""
        # Plain numbers and no helper calls: this runs pods x sampled nodes
        # times per session, and a Python call costs as much as the arithmetic.
        request = task.request
        used = node.used
        allocatable = node.allocatable
        cpu_capacity = allocatable.cpu
        memory_capacity = allocatable.memory
        score = 0.0
        least_weight = self.least_requested_weight
        most_weight = self.most_requested_weight
        if least_weight or most_weight:
            # A zero capacity reads as an infinite fill: no room at all.
            cpu_fill = (
                (used.cpu + (request.cpu or DEFAULT_MILLI_CPU)) / cpu_capacity
                if cpu_capacity > 0
                else _NO_ROOM
            )
            memory_fill = (
                (used.memory + (request.memory or DEFAULT_MEMORY)) / memory_capacity
                if memory_capacity > 0
                else _NO_ROOM
            )
            if least_weight:
                # An overflowing resource scores 0 (kube-scheduler's leastRequestedScore).
                least = (0.0 if cpu_fill > 1.0 else 1.0 - cpu_fill) + (
                    0.0 if memory_fill > 1.0 else 1.0 - memory_fill
                )
                score += least_weight * least * HALF_MAX_SCORE
            if most_weight:
                # Defaults for best-effort pods may overflow; kube-scheduler clamps
                # to full (mostRequestedScore), and scores a zero capacity 0.
                most = (min(cpu_fill, 1.0) if cpu_capacity > 0 else 0.0) + (
                    min(memory_fill, 1.0) if memory_capacity > 0 else 0.0
                )
                score += most_weight * most * HALF_MAX_SCORE
        balanced_weight = self.balanced_weight
        if balanced_weight:
            score += balanced_weight * MAX_NODE_SCORE
            # A resource the node has none of is left out; with one resource
            # left the deviation is 0 and the node counts as balanced.
            if cpu_capacity > 0 and memory_capacity > 0:
                cpu_fraction = min((used.cpu + request.cpu) / cpu_capacity, 1.0)
                memory_fraction = min((used.memory + request.memory) / memory_capacity, 1.0)
                # The standard deviation of two values is half their distance.
                score -= balanced_weight * abs(cpu_fraction - memory_fraction) * HALF_MAX_SCORE
        if self.node_affinity_weight and task.placement.preferred_terms:
            score += self.node_affinity_weight * _preferred_affinity(task, node)
        if self._pods.pods is not None:
            # InterPodAffinity and PodTopologySpread scores, only in sessions that use them.
            score += self._pods.score(
                task,
                node,
                affinity=self.arguments.pod_affinity_weight,
                spread=self.arguments.pod_topology_spread_weight,
            )
        return score


def _preferred_affinity(task: TaskInfo, node: NodeInfo) -> float:
    # kube-scheduler normalises by the best node's sum after scoring all
    # nodes; a session scores nodes one at a time, so it divides by the most
    # any node could get instead.
    possible = 0
    matched = 0
    labels = node.labels
    for weight, term in task.placement.preferred_terms:
        if weight <= 0:
            continue
        possible += weight
        if term_matches(term, labels, node.name):
            matched += weight
    if possible == 0:
        return 0.0
    return matched * MAX_NODE_SCORE / possible
