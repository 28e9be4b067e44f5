"""The nodeorder plugin: kube-scheduler's node scorers, weighted as Volcano configures them.

Each scorer gives 0..100; the plugin returns their weighted sum:

- least-allocated: mean over cpu and memory of (allocatable - requested) * 100 / allocatable
- most-allocated: mean over cpu and memory of requested * 100 / allocatable
- balanced allocation: 100 * (1 - standard deviation of the cpu and memory fractions)
- node affinity: weights of the matching preferred terms * 100 / the sum of all their weights
- taint toleration: 100 - 100 * (the node's PreferNoSchedule taints the pod does not
  tolerate) / (the most such taints any node of the session has for the pod)
- image locality: the sizes of the pod's images the node holds, each scaled by the share
  of nodes holding it, mapped from 23 MB..1000 MB per container onto 0..100
- pod affinity and topology spread (nodefit/interpodaffinity.py,
  nodefit/podtopologyspread.py), only in sessions where some pod uses them

"requested" is what the node's pods use plus this pod. As in kube-scheduler,
least- and most-allocated count a pod with no cpu (memory) request as
100m (200Mi), so best-effort pods still spread; balanced allocation uses the
real requests. Scores stay floats (kube-scheduler truncates to integers) so
close nodes are still told apart.

kube-scheduler normalises some scores after scoring every feasible node of one pod; a
session scores nodes one at a time, so those divide by a bound known beforehand:

- node affinity divides by the sum of the pod's preferred weights, not by the best
  feasible node's sum: a pod whose best node matches only some terms scores below 100.
- taint toleration divides by the highest untolerated count over every node of the
  session (computed once per session for each set of tolerations), not over the pod's
  feasible nodes. The order of nodes is the same; the scores differ when the most
  tainted nodes are infeasible for the pod (kube-scheduler then spreads 0..100 over
  the feasible ones and scores them lower), and agree whenever a node with the highest
  count is feasible or no node has an untolerated PreferNoSchedule taint.
- image locality needs no normalisation (kube-scheduler has none); its spread counts
  every node of the session, as kube-scheduler counts every node of its snapshot, and an
  image name's size is that of the first node (by name) reporting it, where
  kube-scheduler takes the first node its cache saw.

Image locality is the one score that depends on the pod's images, which the node picker's
shapes (pods of equal placement and request share their scores) do not include: when the
session opens, each pending pod whose images some nodes hold and others do not gets, in
the session's copy, a placement naming its images. Pods whose images no node holds score
0 on every node and keep sharing shapes; so do pods whose held images every node holds,
whose score would add the same to every node (muster leaves it out: the pod's order of
nodes is kube-scheduler's, its sum is lower by that constant). A cluster pays for image
locality only where it decides something.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from scheduler.api.node import NodeInfo
from scheduler.api.placement import PodPlacementSpec, Toleration
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session
from scheduler.nodefit.matching import (
    SCORED_EFFECT,
    scoring_tolerations,
    term_matches,
    untolerated_preferences,
)
from scheduler.nodefit.podtopologyspread import PodTopology
from scheduler.plugins.nodeorder_arguments import NodeOrderArguments

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
TAINT_TOLERATION_WEIGHT = "tainttoleration.weight"
IMAGE_LOCALITY_WEIGHT = "imagelocality.weight"

# ImageLocality's bounds (kube-scheduler's minThreshold and maxContainerThreshold): the
# score grows from 23 MB of held images to 1000 MB per container of the pod.
MB = 1024 * 1024
IMAGE_MIN_BYTES = 23 * MB
IMAGE_MAX_BYTES_PER_CONTAINER = 1000 * MB


# Per set of scoring tolerations: the untolerated PreferNoSchedule count of each node that
# has any, and the highest of them.
_Counts = tuple[dict[str, int], int]


class PreferNoScheduleScores:
    """TaintToleration's score over one session's nodes: for each set of tolerations, the
    PreferNoSchedule taints each node leaves untolerated, against the highest count."""

    def __init__(self, nodes: Iterable[NodeInfo]) -> None:
        self._tainted = [
            (node.name, soft)
            for node in nodes
            if node.taints and (soft := tuple(t for t in node.taints if t.effect == SCORED_EFFECT))
        ]
        self._counts: dict[tuple[Toleration, ...], _Counts] = {}

    def __bool__(self) -> bool:
        """Whether any node has a PreferNoSchedule taint (else every node scores 100)."""
        return bool(self._tainted)

    def penalty(self, tolerations: tuple[Toleration, ...], node_name: str) -> float:
        """100 * the node's untolerated PreferNoSchedule taints / the most any node has;
        the score is 100 minus this (kube's reversed DefaultNormalizeScore)."""
        counts = self._counts.get(tolerations)
        if counts is None:
            counts = self._counts[tolerations] = self._count(tolerations)
        by_node, highest = counts
        count = by_node.get(node_name)
        if not count:
            return 0.0
        return count * MAX_NODE_SCORE / highest

    def _count(self, tolerations: tuple[Toleration, ...]) -> _Counts:
        scoring = scoring_tolerations(tolerations)
        by_node: dict[str, int] = {}
        for name, taints in self._tainted:
            count = untolerated_preferences(taints, scoring)
            if count:
                by_node[name] = count
        return by_node, max(by_node.values(), default=0)


# Per tuple of pod images: (the spread-scaled size and the holders of each image some node
# holds), and the score's upper bound in bytes (1000 MB per container).
_ImagePlan = tuple[tuple[tuple[float, frozenset[str]], ...], float]


class ImageSpread:
    """ImageLocality's score over one session's nodes: each image name the pods use, the
    nodes holding it and its size scaled by their share of all nodes (indexed once per
    session for the names given, and on demand for any other)."""

    def __init__(self, nodes: Sequence[NodeInfo], wanted: Iterable[str] = ()) -> None:
        self._nodes = nodes
        self._scaled: dict[str, tuple[float, frozenset[str]]] = {}
        self._indexed: set[str] = set()
        self._plans: dict[tuple[str, ...], _ImagePlan] = {}
        self._index(set(wanted))

    def __bool__(self) -> bool:
        """Whether some node holds one of the images indexed so far."""
        return bool(self._scaled)

    def tells_nodes_apart(self, images: Iterable[str]) -> bool:
        """Whether the (indexed) images score some nodes above others: some node holds
        one of them and some other node does not (an image on every node adds the same
        to every node)."""
        scaled = self._scaled
        total = len(self._nodes)
        return any(name in scaled and len(scaled[name][1]) < total for name in images)

    def holders(self, images: tuple[str, ...]) -> frozenset[str]:
        """The nodes holding one of the images: the only nodes whose score they raise."""
        plan = self._plans.get(images)
        if plan is None:
            plan = self._plans[images] = self._plan(images)
        return frozenset().union(*(holders for _, holders in plan[0]))

    def score(self, images: tuple[str, ...], node_name: str) -> float:
        """kube-scheduler's ImageLocality score (0..100) of a node for a pod's images."""
        plan = self._plans.get(images)
        if plan is None:
            plan = self._plans[images] = self._plan(images)
        held, ceiling = plan
        if not held:
            return 0.0
        total = 0.0
        for scaled, holders in held:
            if node_name in holders:
                total += scaled
        if total <= IMAGE_MIN_BYTES:
            return 0.0
        if total >= ceiling:
            return MAX_NODE_SCORE
        return MAX_NODE_SCORE * (total - IMAGE_MIN_BYTES) / (ceiling - IMAGE_MIN_BYTES)

    def _plan(self, images: tuple[str, ...]) -> _ImagePlan:
        self._index(set(images))
        scaled = self._scaled
        held = tuple(scaled[name] for name in images if name in scaled)
        return held, float(IMAGE_MAX_BYTES_PER_CONTAINER * len(images))

    def _index(self, names: set[str]) -> None:
        names -= self._indexed
        if not names:
            return
        self._indexed |= names
        holders: dict[str, list[str]] = {}
        sizes: dict[str, int] = {}
        for node in self._nodes:
            images = node.images
            if images is None:
                continue
            for name in names.intersection(images.names):
                held = holders.get(name)
                if held is None:
                    holders[name] = [node.name]
                    sizes[name] = images.size_of(name)
                else:
                    held.append(node.name)
        total = len(self._nodes)
        for name, held in holders.items():
            # kube's scaledImageScore: size * (nodes holding it / all nodes).
            self._scaled[name] = (sizes[name] * (len(held) / total), frozenset(held))


class NodeOrderPlugin(Plugin[NodeOrderArguments]):
    """Scores nodes by free room, packing, cpu/memory balance, preferred node affinity,
    PreferNoSchedule taints, the images they hold, and pod affinity and spread."""

    name = "nodeorder"

    def __init__(self, arguments: NodeOrderArguments | Mapping[str, Any] | None = None) -> None:
        super().__init__(arguments)
        args = self.arguments
        self.least_requested_weight = args.least_requested_weight
        self.most_requested_weight = args.most_requested_weight
        self.balanced_weight = args.balanced_resource_weight
        self.node_affinity_weight = args.node_affinity_weight
        self.taint_toleration_weight = args.taint_toleration_weight
        self.image_locality_weight = args.image_locality_weight
        # Every node without an untolerated PreferNoSchedule taint scores 100: that part
        # of the sum is the same on every node, so it is added up front.
        self._taint_base = self.taint_toleration_weight * MAX_NODE_SCORE
        self._pods = PodTopology(ClusterSnapshot())
        # Set by on_session_open: None while no node has a PreferNoSchedule taint, or no
        # pending pod has images that some nodes hold and others do not (or the weight is 0).
        self._soft_taints: PreferNoScheduleScores | None = None
        self._images: ImageSpread | None = None
        self._taints_or_images = False
        self._nodes: Sequence[NodeInfo] = ()

    def on_session_open(self, session: Session, state: CycleState) -> None:
        """Index the placed pods when some pod's affinity or spread is to be scored, the
        PreferNoSchedule taints when TaintToleration scores, and the pending pods' images
        when ImageLocality does."""
        args = self.arguments
        self._pods = PodTopology(
            session.snapshot,
            affinity=args.pod_affinity_weight > 0,
            spread=args.pod_topology_spread_weight > 0,
            scoring=True,
        )
        self._nodes = session.node_list
        soft = PreferNoScheduleScores(self._nodes) if self.taint_toleration_weight else None
        self._soft_taints = soft if soft else None
        self._images = self._place_by_images(session) if self.image_locality_weight else None
        self._taints_or_images = self._soft_taints is not None or self._images is not None
        if self._images is not None:
            state.image_holders = self._images.holders

    def on_allocate(self, task: TaskInfo) -> None:
        """A placed pod counts for its neighbours' pod affinity and spread scores."""
        if self._pods.pods is not None:  # only in sessions with pod-to-pod terms
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
        score = self._taint_base
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
        if self._taints_or_images:
            # Only in sessions where some node has a PreferNoSchedule taint or holds an
            # image of a pending pod (that some other node does not).
            soft_taints = self._soft_taints
            if soft_taints is not None and node.taints:
                score -= self.taint_toleration_weight * soft_taints.penalty(
                    task.placement.tolerations, node.name
                )
            images = self._images
            if images is not None and task.placement.images:
                score += self.image_locality_weight * images.score(task.placement.images, node.name)
        if self._pods.pods is not None:
            # InterPodAffinity and PodTopologySpread scores, only in sessions that use them.
            score += self._pods.score(
                task,
                node,
                affinity=self.arguments.pod_affinity_weight,
                spread=self.arguments.pod_topology_spread_weight,
            )
        return score

    def _place_by_images(self, session: Session) -> ImageSpread | None:
        """Index the images of the session's pending pods in one pass over the nodes, and
        give each pending pod whose images some nodes hold and others do not a placement
        naming them.

        The node picker shares scores between pods of equal placement (and request):
        pods whose images no node holds score 0 everywhere, and pods whose held images
        every node holds score the same everywhere; both keep sharing shapes (and the
        second leave out a score that would not change their order of nodes). The others
        get a shape per set of images. Only the session's copies of the pods change."""
        nodes = self._nodes
        if all(node.images is None for node in nodes):
            return None
        pending = [
            member
            for job in session.active_jobs.values()
            for member in job.tasks.values()
            if member.images and member.status is TaskStatus.PENDING
        ]
        if not pending:
            return None
        spread = ImageSpread(nodes, {name for member in pending for name in member.images})
        if not spread:
            return None
        placements: dict[tuple[PodPlacementSpec, tuple[str, ...]], PodPlacementSpec] = {}
        for member in pending:
            if spread.tells_nodes_apart(member.images):
                key = (member.placement, member.images)
                placement = placements.get(key)
                if placement is None:
                    placement = placements[key] = replace(member.placement, images=member.images)
                member.placement = placement
        # None when no pod's images tell nodes apart: node_score then skips the scorer.
        return spread if placements else None


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
