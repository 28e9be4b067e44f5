"""InterPodAffinity: kube-scheduler's pod affinity and anti-affinity filter and score, over
an index of the pods on nodes that members of a gang join as the session places them.

The predicates plugin runs `InterPodAffinity.filter` and nodeorder `InterPodAffinity.score`;
both are built only when some pod of the session uses pod (anti-)affinity, so other
sessions pay nothing. `PlacedPods` is kube-scheduler's PreFilter state made once per
session and kept current by the plugins' on_allocate / on_deallocate (a statement's
discard unplaces, which takes its pods out again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from scheduler.api.node import NodeInfo
from scheduler.api.pod_topology import PodAffinityTerm
from scheduler.api.selectors import LabelSelector
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.framework.status import OK, Status, unresolvable, unschedulable

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

# kube-scheduler's InterPodAffinityArgs.hardPodAffinityWeight default: how much an existing
# pod's required affinity to the incoming pod counts in the score.
DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MAX_NODE_SCORE = 100.0

# kube-scheduler's codes: affinity cannot be helped by preemption, anti-affinity can.
_AFFINITY_MISMATCH = unresolvable(REASON_AFFINITY)
_ANTI_AFFINITY_MISMATCH = unschedulable(REASON_ANTI_AFFINITY)
_EXISTING_ANTI_AFFINITY_MISMATCH = unschedulable(REASON_EXISTING_ANTI_AFFINITY)

TopologyPair = tuple[str, str]


def uses_pod_affinity(task: TaskInfo) -> bool:
    """Whether a pod has pod affinity or anti-affinity terms (required or preferred)."""
    spec = task.topology
    return spec is not None and bool(
        spec.required_affinity
        or spec.required_anti_affinity
        or spec.preferred_affinity
        or spec.preferred_anti_affinity
    )


def selector_anchors(snapshot: ClusterSnapshot) -> frozenset[TopologyPair] | None:
    """The anchor pairs of every label selector the session's pods use (pod affinity
    terms, spread constraints), or None when some selector has no anchor pair."""
    anchors: set[TopologyPair] = set()
    for spec in snapshot.topology_specs():
        selectors = [t.selector for t in (*spec.required_affinity, *spec.required_anti_affinity)]
        selectors.extend(
            t.selector for _, t in (*spec.preferred_affinity, *spec.preferred_anti_affinity)
        )
        selectors.extend(c.selector for c in spec.spread)
        for selector in selectors:
            if selector is None:
                continue  # matches no pod
            anchor = selector.anchor()
            if anchor is None:
                return None
            anchors.add(anchor)
    return frozenset(anchors)


def _scored(task: TaskInfo) -> bool:
    spec = task.topology
    return spec is not None and bool(
        spec.required_affinity or spec.preferred_affinity or spec.preferred_anti_affinity
    )


def _placed(task: TaskInfo) -> bool:
    return bool(task.node_name) and task.status not in (TaskStatus.SUCCEEDED, TaskStatus.FAILED)


class PlacedPods:
    """The pods on nodes, indexed by label pair, kept current as the session places and
    unplaces tasks; `version` moves on every change, so per-pod counts can be cached."""

    def __init__(
        self, snapshot: ClusterSnapshot, anchors: frozenset[TopologyPair] | None = None
    ) -> None:
        self.nodes = snapshot.nodes
        self.topology_tasks = snapshot.topology_tasks()
        self.namespace_labels: Mapping[str, Mapping[str, str]] = snapshot.namespaces
        # When every selector of the session has an anchor pair (selector_anchors), only
        # pods carrying one can match any: the others are not indexed at all.
        self.anchors = anchors
        self.everyone: dict[str, TaskInfo] = {}
        self.by_label: dict[TopologyPair, dict[str, TaskInfo]] = {}
        self.version = 0
        for node in snapshot.nodes.values():
            for task in node.tasks.values():
                self.add(task)

    def add(self, task: TaskInfo) -> bool:
        """Count a task that was placed on a node; False when it was counted already."""
        anchors = self.anchors
        if anchors is not None and anchors.isdisjoint(task.labels.items()):
            return False  # no selector of the session can match it: most pods
        if task.uid in self.everyone or not _placed(task):
            return False
        self.everyone[task.uid] = task
        for pair in task.labels.items():
            self.by_label.setdefault(pair, {})[task.uid] = task
        self.version += 1
        return True

    def remove(self, task: TaskInfo) -> bool:
        """Stop counting a task (unplaced or evicted); False when it was not counted."""
        stored = self.everyone.pop(task.uid, None)
        if stored is None:
            return False
        for pair in stored.labels.items():
            bucket = self.by_label.get(pair)
            if bucket is not None:
                bucket.pop(task.uid, None)
        self.version += 1
        return True

    def candidates(self, selector: LabelSelector) -> Iterable[TaskInfo]:
        """Pods that may match the selector: those carrying its anchor pair, or all."""
        anchor = selector.anchor()
        if anchor is None:
            return self.everyone.values()
        return self.by_label.get(anchor, {}).values()

    def domain(self, task: TaskInfo, key: str) -> str | None:
        """The value of `key` on the node the task is placed on, or None."""
        node = self.nodes.get(task.node_name)
        if node is None:
            return None
        return node.labels.get(key)


@dataclass(slots=True)
class _Counts:
    """kube's preFilterState for one incoming pod: matching pods per topology pair."""

    version: int
    affinity: dict[TopologyPair, int] = field(default_factory=dict)
    anti_affinity: dict[TopologyPair, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Scores:
    """kube's preScoreState for one incoming pod: summed weights per topology pair."""

    version: int
    by_pair: dict[TopologyPair, float] = field(default_factory=dict)
    lowest: float = 0.0
    highest: float = 0.0


class InterPodAffinity:
    """Required pod (anti-)affinity as a filter (with existing pods' anti-affinity against
    the incoming pod), preferred terms as a score, for one session."""

    def __init__(
        self, pods: PlacedPods, *, hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    ) -> None:
        self.pods = pods
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        # Placed pods' required anti-affinity terms, under the label pair any pod the term
        # matches must carry (None: no such pair), with the domain each term holds.
        self._existing_anti: dict[
            TopologyPair | None, dict[str, list[tuple[PodAffinityTerm, str]]]
        ] = {}
        # Placed pods whose terms score the incoming pod (required affinity, preferences).
        self._scoring_holders: dict[str, TaskInfo] = {}
        self._counts: dict[str, _Counts] = {}
        self._scores: dict[str, _Scores] = {}
        self._holding: set[str] = set()
        for task in pods.topology_tasks:
            if _placed(task) and task.node_name in pods.nodes:
                self._holder_added(task)

    @staticmethod
    def needed(snapshot: ClusterSnapshot, *, scoring: bool = False) -> bool:
        """Whether any pod of the session, placed or pending, uses pod (anti-)affinity: for
        the filter, any term; for the score, preferred terms and required affinity (which
        scores the pods it is about)."""
        wanted = _scored if scoring else uses_pod_affinity
        return any(wanted(task) for task in snapshot.topology_tasks())

    # Keeping the index current ---------------------------------------------
    def placed(self, task: TaskInfo) -> None:
        """A task joined `pods` (allocated, pipelined, or un-evicted): its anti-affinity
        now keeps others away. Call after PlacedPods.add."""
        self._holder_added(task)

    def unplaced(self, task: TaskInfo) -> None:
        """A task is leaving `pods` (discarded or evicted). Call before PlacedPods.remove."""
        self._holder_removed(task)

    def _holder_added(self, task: TaskInfo) -> None:
        spec = task.topology
        if spec is None or task.uid in self._holding:
            return
        self._holding.add(task.uid)
        for term in spec.required_anti_affinity:
            value = self.pods.domain(task, term.topology_key)
            if value is None or term.selector is None:
                continue  # a term with no domain or no selector keeps no pod away
            bucket = self._existing_anti.setdefault(term.selector.anchor(), {})
            bucket.setdefault(task.uid, []).append((term, value))
        if spec.required_affinity or spec.preferred_affinity or spec.preferred_anti_affinity:
            self._scoring_holders[task.uid] = task

    def _holder_removed(self, task: TaskInfo) -> None:
        if task.uid not in self._holding:
            return
        self._holding.discard(task.uid)
        for bucket in self._existing_anti.values():
            bucket.pop(task.uid, None)
        self._scoring_holders.pop(task.uid, None)

    # Filter -----------------------------------------------------------------
    def filter(self, task: TaskInfo, node: NodeInfo) -> Status:
        """kube's Filter, in its order: the pod's affinity, its anti-affinity, then the
        anti-affinity of the pods already placed against it."""
        spec = task.topology
        if spec is not None and (spec.required_affinity or spec.required_anti_affinity):
            counts = self._counts_for(task)
            if spec.required_affinity and not self._affinity_holds(task, counts, node):
                return _AFFINITY_MISMATCH
            labels = node.labels
            for term in spec.required_anti_affinity:
                value = labels.get(term.topology_key)
                if value is not None and counts.anti_affinity.get((term.topology_key, value)):
                    return _ANTI_AFFINITY_MISMATCH
        if self._existing_anti and self._existing_anti_blocks(task, node):
            return _EXISTING_ANTI_AFFINITY_MISMATCH
        return OK

    def _affinity_holds(self, task: TaskInfo, counts: _Counts, node: NodeInfo) -> bool:
        spec = task.topology
        assert spec is not None
        labels = node.labels
        pods_exist = True
        for term in spec.required_affinity:
            value = labels.get(term.topology_key)
            if value is None:
                return False  # every term's topology label must be on the node
            if counts.affinity.get((term.topology_key, value), 0) <= 0:
                pods_exist = False
        if pods_exist:
            return True
        # The first pod of a group with affinity to itself: no pod anywhere matches, and
        # the pod matches its own terms, so it may start the group.
        return not counts.affinity and self._matches_all(spec.required_affinity, task)

    def _matches_all(self, terms: tuple[PodAffinityTerm, ...], pod: TaskInfo) -> bool:
        namespaces = self.pods.namespace_labels
        return all(term.matches(pod.namespace, pod.labels, namespaces) for term in terms)

    def _counts_for(self, task: TaskInfo) -> _Counts:
        version = self.pods.version
        cached = self._counts.get(task.uid)
        if cached is not None and cached.version == version:
            return cached
        spec = task.topology
        assert spec is not None
        counts = _Counts(version)
        pods = self.pods
        namespaces = pods.namespace_labels
        terms = spec.required_affinity
        first = terms[0].selector if terms else None
        if first is not None:
            # A pod counts for affinity only if it matches every term (kube's rule).
            for other in pods.candidates(first):
                if other.uid == task.uid or not self._matches_all(terms, other):
                    continue
                for term in terms:
                    value = pods.domain(other, term.topology_key)
                    if value is not None:
                        pair = (term.topology_key, value)
                        counts.affinity[pair] = counts.affinity.get(pair, 0) + 1
        for term in spec.required_anti_affinity:
            if term.selector is None:
                continue
            for other in pods.candidates(term.selector):
                if other.uid == task.uid or not term.matches(
                    other.namespace, other.labels, namespaces
                ):
                    continue
                value = pods.domain(other, term.topology_key)
                if value is not None:
                    pair = (term.topology_key, value)
                    counts.anti_affinity[pair] = counts.anti_affinity.get(pair, 0) + 1
        self._counts[task.uid] = counts
        return counts

    def _existing_anti_blocks(self, task: TaskInfo, node: NodeInfo) -> bool:
        existing = self._existing_anti
        if None not in existing and existing.keys().isdisjoint(task.labels.items()):
            return False  # no placed pod's term can match this pod: the common case
        namespaces = self.pods.namespace_labels
        labels = node.labels
        buckets = [existing.get(None)]
        buckets.extend(existing.get(pair) for pair in task.labels.items())
        for bucket in buckets:
            if not bucket:
                continue
            for holder, entries in bucket.items():
                if holder == task.uid:
                    continue
                for term, value in entries:
                    if labels.get(term.topology_key) == value and term.matches(
                        task.namespace, task.labels, namespaces
                    ):
                        return True
        return False

    # Score ------------------------------------------------------------------
    def scores_any_pod(self) -> bool:
        """Whether placed pods' terms score pods that have no terms of their own."""
        return bool(self._scoring_holders)

    def scores(self, task: TaskInfo) -> bool:
        """Whether the score can tell nodes apart for this task at all."""
        return bool(self._scoring_holders) or (
            task.topology is not None
            and bool(task.topology.preferred_affinity or task.topology.preferred_anti_affinity)
        )

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        """kube's score, 0..100: summed weights of the terms the node's domains satisfy,
        normalised between the lowest and highest sums any node of the session gets."""
        state = self._scores_for(task)
        if state.highest == state.lowest:
            return 0.0
        raw = 0.0
        labels = node.labels
        for (key, value), weight in state.by_pair.items():
            if labels.get(key) == value:
                raw += weight
        return MAX_NODE_SCORE * (raw - state.lowest) / (state.highest - state.lowest)

    def _scores_for(self, task: TaskInfo) -> _Scores:
        version = self.pods.version
        cached = self._scores.get(task.uid)
        if cached is not None and cached.version == version:
            return cached
        state = _Scores(version)
        pods = self.pods
        namespaces = pods.namespace_labels
        by_pair = state.by_pair

        def add(term: PodAffinityTerm, weight: float, holder: TaskInfo) -> None:
            value = pods.domain(holder, term.topology_key)
            if value is not None:
                pair = (term.topology_key, value)
                by_pair[pair] = by_pair.get(pair, 0.0) + weight

        spec = task.topology
        if spec is not None:
            for sign, weighted in (
                (1, spec.preferred_affinity),
                (-1, spec.preferred_anti_affinity),
            ):
                for weight, term in weighted:
                    if term.selector is None:
                        continue
                    for other in pods.candidates(term.selector):
                        if other.uid != task.uid and term.matches(
                            other.namespace, other.labels, namespaces
                        ):
                            add(term, sign * weight, other)
        # The terms of placed pods about the incoming pod (kube scores them symmetrically).
        for holder in self._scoring_holders.values():
            theirs = holder.topology
            if theirs is None or holder.uid == task.uid:
                continue
            for term in theirs.required_affinity:
                if self.hard_pod_affinity_weight and term.matches(
                    task.namespace, task.labels, namespaces
                ):
                    add(term, self.hard_pod_affinity_weight, holder)
            for sign, weighted in (
                (1, theirs.preferred_affinity),
                (-1, theirs.preferred_anti_affinity),
            ):
                for weight, term in weighted:
                    if term.matches(task.namespace, task.labels, namespaces):
                        add(term, sign * weight, holder)
        if by_pair:
            sums = [self._raw(by_pair, node) for node in pods.nodes.values()]
            state.lowest = min(sums)
            state.highest = max(sums)
        self._scores[task.uid] = state
        return state

    @staticmethod
    def _raw(by_pair: dict[TopologyPair, float], node: NodeInfo) -> float:
        labels = node.labels
        return sum(w for (key, value), w in by_pair.items() if labels.get(key) == value)
