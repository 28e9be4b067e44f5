"""PodTopologySpread: kube-scheduler's topology spread filter (DoNotSchedule) and score
(ScheduleAnyway), counting the pods of the session's PlacedPods index, so members of a
gang placed in this session count for each other.

The predicates plugin runs `PodTopologySpread.filter`, nodeorder `PodTopologySpread.score`;
both are built only when some pending pod of the session has spread constraints.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler.api.node import NodeInfo
from scheduler.api.pod_topology import SpreadConstraint
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.framework.status import OK, Status, unresolvable, unschedulable
from scheduler.nodefit.interpodaffinity import (
    InterPodAffinity,
    PlacedPods,
    TopologyPair,
    selector_anchors,
)
from scheduler.nodefit.matching import first_untolerated, required_affinity_matches

REASON_SKEW = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = (
    "node(s) didn't match pod topology spread constraints (missing required label)"
)
MAX_NODE_SCORE = 100.0


_SKEW_EXCEEDED = unschedulable(REASON_SKEW)
# A node without the topology label can never be in a domain: preemption does not help.
_MISSING_LABEL = unresolvable(REASON_MISSING_LABEL)


@dataclass(slots=True)
class _Domains:
    """Which nodes count for a pod's constraints (policies and topology labels), and the
    domains they form: the part of kube's PreFilter state that placements do not move."""

    # Nodes with every constraint's topology label (the others are not scored).
    labelled: dict[str, NodeInfo]
    # Per constraint (by index): the nodes its policies count, and their domain values.
    nodes: list[dict[str, NodeInfo]]
    values: list[frozenset[str]]
    # Per constraint, its (topology key, value) pairs; and every pair at a count of 0,
    # which each count over placed pods starts from (counts are taken again after
    # every placement).
    pairs: list[list[TopologyPair]]
    zero: dict[TopologyPair, int]


@dataclass(slots=True)
class _Counts:
    """Matching pods per topology pair, and per constraint the smallest count."""

    version: int
    by_pair: dict[TopologyPair, int] = field(default_factory=dict)
    minimum: list[int] = field(default_factory=list)
    # The lowest and highest raw scores over the labelled nodes (scores only).
    bounds: tuple[float, float] | None = None
    # The filter's verdicts by the node's value of each constraint's key: nodes of one
    # domain get one answer, worked out once (the picker's failure message asks every node).
    refusals: dict[tuple[str, ...], TopologyPair | None] = field(default_factory=dict)


class PodTopologySpread:
    """Hard constraints as a filter, soft ones as a score, for one session."""

    def __init__(self, pods: PlacedPods) -> None:
        self.pods = pods
        self._domains: dict[tuple[object, ...], _Domains] = {}
        self._domains_of: dict[str, tuple[_Domains, _Domains]] = {}
        self._counts: dict[tuple[str, bool], _Counts] = {}

    @staticmethod
    def needed(snapshot: ClusterSnapshot, *, scoring: bool = False) -> bool:
        """Whether any pod waiting in this session has topology spread constraints (for the
        score: ScheduleAnyway ones; for the filter: DoNotSchedule ones)."""
        jobs = snapshot.jobs
        for task in snapshot.topology_tasks():
            spec = task.topology
            if (
                spec is not None
                and task.job in jobs
                and any(c.hard is not scoring for c in spec.spread)
            ):
                return True
        return False

    # Filter -----------------------------------------------------------------
    def filter(self, task: TaskInfo, node: NodeInfo) -> Status:
        """kube's Filter: for each DoNotSchedule constraint, the node's domain with this
        pod must not exceed the smallest domain by more than maxSkew."""
        spec = task.topology
        if spec is None:
            return OK
        constraints = spec.hard_spread
        if not constraints:
            return OK
        labels = node.labels
        for constraint in constraints:
            if constraint.topology_key not in labels:
                return _MISSING_LABEL
        if self._refused_pair(task, constraints, labels) is not None:
            return _SKEW_EXCEEDED
        return OK

    def refusing_domain(self, task: TaskInfo, node: NodeInfo) -> TopologyPair | None:
        """The topology domain (key, value) of the node whose skew refuses the task, or None
        (the task has no DoNotSchedule constraint, the node lacks a label, or it fits). The
        verdict reads the domain only: every node of it refuses the task alike until a
        placement or removal moves the counts (the node picker parks them by domain)."""
        spec = task.topology
        if spec is None or self.filter(task, node) is not _SKEW_EXCEEDED:
            return None
        return self._refused_pair(task, spec.hard_spread, node.labels)  # the filter's, memoised

    def domain_refuses(self, task: TaskInfo, domain: TopologyPair) -> bool:
        """Whether the task's DoNotSchedule constraint on the domain's key still refuses
        every node of the domain (as `refusing_domain` found it)."""
        spec = task.topology
        if spec is None:
            return False
        key, value = domain
        constraints = spec.hard_spread
        domains = self._domains_for(task, hard=True)
        counts = self._counts_for(task, constraints, domains, hard=True)
        for index, constraint in enumerate(constraints):
            if constraint.topology_key == key and self._exceeds(
                task, index, constraint, domains, counts, value
            ):
                return True
        return False

    def _refused_pair(
        self,
        task: TaskInfo,
        constraints: tuple[SpreadConstraint, ...],
        labels: Mapping[str, str],
    ) -> TopologyPair | None:
        domains = self._domains_for(task, hard=True)
        counts = self._counts_for(task, constraints, domains, hard=True)
        values = tuple([labels[constraint.topology_key] for constraint in constraints])
        refusals = counts.refusals
        if values in refusals:
            return refusals[values]
        refused: TopologyPair | None = None
        for index, constraint in enumerate(constraints):
            value = values[index]
            if self._exceeds(task, index, constraint, domains, counts, value):
                refused = constraint.topology_key, value
                break
        refusals[values] = refused
        return refused

    def _exceeds(
        self,
        task: TaskInfo,
        index: int,
        constraint: SpreadConstraint,
        domains: _Domains,
        counts: _Counts,
        value: str,
    ) -> bool:
        """kube's skew rule: the domain with this pod must not exceed the smallest domain
        by more than maxSkew."""
        own = 1 if self._matches_self(constraint, task) else 0
        matched = counts.by_pair.get((constraint.topology_key, value), 0)
        minimum = counts.minimum[index]
        # minDomains: fewer eligible domains than asked means the global minimum is 0.
        if len(domains.values[index]) < constraint.min_domains:
            minimum = 0
        return matched + own - minimum > constraint.max_skew

    # Score ------------------------------------------------------------------
    def scores(self, task: TaskInfo) -> bool:
        """Whether the task has ScheduleAnyway constraints to score."""
        spec = task.topology
        return spec is not None and any(not c.hard for c in spec.spread)

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        """kube's score, 0..100: fewer matching pods in the node's domains score higher,
        each constraint weighted by log(domains + 2); normalised over the session's nodes
        (a node without every topology label scores 0)."""
        spec = task.topology
        if spec is None:
            return 0.0
        constraints = spec.soft_spread
        if not constraints:
            return 0.0
        domains = self._domains_for(task, hard=False)
        if node.name not in domains.labelled:
            return 0.0
        counts = self._counts_for(task, constraints, domains, hard=False)
        if counts.bounds is None:
            raws = [self._raw(constraints, domains, counts, n) for n in domains.labelled.values()]
            counts.bounds = (min(raws), max(raws))
        lowest, highest = counts.bounds
        raw = self._raw(constraints, domains, counts, node)
        if highest == 0:
            return MAX_NODE_SCORE
        return MAX_NODE_SCORE * (highest + lowest - raw) / highest

    def _raw(
        self,
        constraints: tuple[SpreadConstraint, ...],
        domains: _Domains,
        counts: _Counts,
        node: NodeInfo,
    ) -> float:
        total = 0.0
        for index, constraint in enumerate(constraints):
            key = constraint.topology_key
            weight = math.log(len(domains.values[index]) + 2)
            matched = counts.by_pair.get((key, node.labels[key]), 0)
            total += matched * weight + (constraint.max_skew - 1)
        return total

    # State ------------------------------------------------------------------
    @staticmethod
    def _matches_self(constraint: SpreadConstraint, task: TaskInfo) -> bool:
        return constraint.selector is not None and constraint.selector.matches(task.labels)

    def _domains_for(self, task: TaskInfo, *, hard: bool) -> _Domains:
        both = self._domains_of.get(task.uid)
        if both is None:
            both = (self._eligible(task, hard=True), self._eligible(task, hard=False))
            self._domains_of[task.uid] = both
        return both[0] if hard else both[1]

    def _eligible(self, task: TaskInfo, *, hard: bool) -> _Domains:
        spec = task.topology
        assert spec is not None
        constraints = spec.hard_spread if hard else spec.soft_spread
        # Which nodes count depends on the keys and policies, not on the selectors.
        key = (
            task.placement,
            tuple(
                (c.topology_key, c.honour_node_affinity, c.honour_node_taints) for c in constraints
            ),
        )
        cached = self._domains.get(key)
        if cached is not None:
            return cached
        placement = task.placement
        labelled: dict[str, NodeInfo] = {}
        nodes: list[dict[str, NodeInfo]] = [{} for _ in constraints]
        values: list[set[str]] = [set() for _ in constraints]
        for node in self.pods.nodes.values():
            labels = node.labels
            if not all(c.topology_key in labels for c in constraints):
                continue  # kube counts only nodes with every constraint's label
            labelled[node.name] = node
            affinity_ok: bool | None = None
            taints_ok: bool | None = None
            for index, constraint in enumerate(constraints):
                # nodeAffinityPolicy / nodeTaintsPolicy, per constraint.
                if constraint.honour_node_affinity:
                    if affinity_ok is None:
                        affinity_ok = required_affinity_matches(placement, node)
                    if not affinity_ok:
                        continue
                if constraint.honour_node_taints:
                    if taints_ok is None:
                        taints_ok = first_untolerated(node.taints, placement.tolerations) is None
                    if not taints_ok:
                        continue
                nodes[index][node.name] = node
                values[index].add(labels[constraint.topology_key])
        pairs = [
            [(constraint.topology_key, value) for value in found]
            for constraint, found in zip(constraints, values, strict=True)
        ]
        zero = dict.fromkeys((pair for listed in pairs for pair in listed), 0)
        cached = self._domains[key] = _Domains(
            labelled, nodes, [frozenset(v) for v in values], pairs, zero
        )
        return cached

    def _counts_for(
        self,
        task: TaskInfo,
        constraints: tuple[SpreadConstraint, ...],
        domains: _Domains,
        *,
        hard: bool,
    ) -> _Counts:
        version = self.pods.version
        memo_key = (task.uid, hard)
        cached = self._counts.get(memo_key)
        if cached is not None and cached.version == version:
            return cached
        spec = task.topology
        assert spec is not None
        by_pair = dict(domains.zero)
        counts = _Counts(version, by_pair)
        for index, constraint in enumerate(constraints):
            key = constraint.topology_key
            selector = constraint.selector
            if selector is None:
                continue  # no labelSelector: no pod matches
            counted = domains.nodes[index]
            for other in self.pods.candidates(selector):
                # kube counts the pod's own namespace only, and not pods being deleted.
                if (
                    other.uid == task.uid
                    or other.namespace != spec.namespace
                    or other.status is TaskStatus.RELEASING
                    or other.node_name not in counted
                    or not selector.matches(other.labels)
                ):
                    continue
                pair = (key, counted[other.node_name].labels[key])
                by_pair[pair] += 1
        for pairs in domains.pairs:
            counts.minimum.append(min(map(by_pair.__getitem__, pairs)) if pairs else 0)
        self._counts[memo_key] = counts
        return counts


class PodTopology:
    """The pod-to-pod checks of one session: InterPodAffinity and PodTopologySpread over
    one PlacedPods index, each built only when some pod of the session uses it."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        *,
        affinity: bool = True,
        spread: bool = True,
        hard_pod_affinity_weight: int = 1,
        scoring: bool = False,
    ) -> None:
        # `scoring`: for nodeorder, which needs only the pods whose terms score.
        use_affinity = affinity and InterPodAffinity.needed(snapshot, scoring=scoring)
        use_spread = spread and PodTopologySpread.needed(snapshot, scoring=scoring)
        self.pods: PlacedPods | None = None
        self.affinity: InterPodAffinity | None = None
        self.spread: PodTopologySpread | None = None
        if use_affinity or use_spread:
            self.pods = PlacedPods(snapshot, selector_anchors(snapshot))
        if use_affinity and self.pods is not None:
            self.affinity = InterPodAffinity(
                self.pods, hard_pod_affinity_weight=hard_pod_affinity_weight
            )
        if use_spread and self.pods is not None:
            self.spread = PodTopologySpread(self.pods)

    def placed(self, task: TaskInfo) -> None:
        """A task got a node in this session (gang members count for each other)."""
        if self.pods is None:
            return
        self.pods.add(task)
        if self.affinity is not None and task.topology is not None:
            self.affinity.placed(task)

    def unplaced(self, task: TaskInfo) -> None:
        """A task gave its node back (a discard) or is being evicted."""
        if self.pods is None:
            return
        if self.affinity is not None and task.topology is not None:
            self.affinity.unplaced(task)
        self.pods.remove(task)

    def filter(self, task: TaskInfo, node: NodeInfo) -> Status:
        """kube-scheduler's order: PodTopologySpread, then InterPodAffinity."""
        if task.topology is None:
            # Spread holds a pod only to its own constraints: a plain pod answers to the
            # anti-affinity of placed pods alone.
            return OK if self.affinity is None else self.affinity.filter(task, node)
        if self.spread is not None:
            status = self.spread.filter(task, node)
            if not status.ok:
                return status
        if self.affinity is not None:
            return self.affinity.filter(task, node)
        return OK

    def score(self, task: TaskInfo, node: NodeInfo, *, affinity: float, spread: float) -> float:
        """The weighted pod affinity and spread scores (each 0..100 before its weight)."""
        if task.topology is None and (self.affinity is None or not self.affinity.scores_any_pod()):
            return 0.0  # a plain pod that no placed pod's terms are about
        total = 0.0
        if affinity and self.affinity is not None and self.affinity.scores(task):
            total += affinity * self.affinity.score(task, node)
        if spread and self.spread is not None and self.spread.scores(task):
            total += spread * self.spread.score(task, node)
        return total
