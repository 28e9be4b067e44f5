"""What a pod asks of the pods around it, read from its spec: pod (anti-)affinity terms
and topology spread constraints, resolved against the pod (PodTopologySpec)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from scheduler.api import wire
from scheduler.api.selectors import LabelSelector, term_selector


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """A pod (anti-)affinity term, resolved against its pod: matchLabelKeys and
    mismatchLabelKeys merged into the selector, namespaces defaulted to the pod's own."""

    topology_key: str
    # None: the term names no labelSelector and matches no pod.
    selector: LabelSelector | None
    namespaces: frozenset[str]
    # None: only `namespaces`; an empty selector: every namespace.
    namespace_selector: LabelSelector | None = None

    def matches(
        self,
        namespace: str,
        labels: Mapping[str, str],
        namespace_labels: Mapping[str, Mapping[str, str]],
    ) -> bool:
        """Whether a pod in `namespace` with `labels` is one the term is about."""
        if self.selector is None:
            return False
        if namespace not in self.namespaces:
            chooser = self.namespace_selector
            if chooser is None:
                return False
            if chooser.match_labels or chooser.match_expressions:
                known = namespace_labels.get(namespace)
                if known is None or not chooser.matches(known):
                    return False
        return self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A topologySpreadConstraints[] entry, resolved: matchLabelKeys merged into the
    selector, policies and minDomains defaulted as the API defaults them."""

    max_skew: int
    topology_key: str
    # whenUnsatisfiable DoNotSchedule (a filter); ScheduleAnyway is a score.
    hard: bool
    selector: LabelSelector | None
    min_domains: int = 1
    # nodeAffinityPolicy Honor (the default) and nodeTaintsPolicy Honor (Ignore is the default).
    honour_node_affinity: bool = True
    honour_node_taints: bool = False


@dataclass(frozen=True, slots=True)
class PodTopologySpec:
    """What a pod asks of the pods around it: pod (anti-)affinity and topology spread.

    Kept apart from PodPlacementSpec (the node-only constraints the session caches per
    node); None on a task that uses none of these fields, so such pods pay nothing."""

    namespace: str
    required_affinity: tuple[PodAffinityTerm, ...] = ()
    required_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()
    preferred_anti_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    # The pod's own labels under the keys its selectors read: whether it matches its own
    # terms (kube's first-pod-of-a-group rule, spread's self match) depends on them, so
    # pods that differ there never share a node picker shape.
    own_labels: tuple[tuple[str, str], ...] = ()
    # The hash, worked out once: the spec is part of node picker shape keys, looked up on
    # every pick, and hashing its nested terms each time cost more than the pick.
    _hash: int = field(default=0, init=False, repr=False, compare=False)
    # `spread` split by whenUnsatisfiable (DoNotSchedule, ScheduleAnyway), once: the
    # filter asks for the hard ones on every node it checks.
    hard_spread: tuple[SpreadConstraint, ...] = field(
        default=(), init=False, repr=False, compare=False
    )
    soft_spread: tuple[SpreadConstraint, ...] = field(
        default=(), init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "hard_spread", tuple(c for c in self.spread if c.hard))
        object.__setattr__(self, "soft_spread", tuple(c for c in self.spread if not c.hard))
        fields = (
            self.namespace,
            self.required_affinity,
            self.required_anti_affinity,
            self.preferred_affinity,
            self.preferred_anti_affinity,
            self.spread,
            self.own_labels,
        )
        object.__setattr__(self, "_hash", hash(fields))

    def __hash__(self) -> int:
        return self._hash


def _affinity_term(
    term: wire.PodAffinityTerm, namespace: str, labels: Mapping[str, str]
) -> PodAffinityTerm:
    namespace_selector = (
        term_selector(term.namespace_selector, {}) if term.namespace_selector else None
    )
    namespaces = frozenset(term.namespaces)
    if not namespaces and namespace_selector is None:
        namespaces = frozenset({namespace})
    return PodAffinityTerm(
        term.topology_key,
        term_selector(term.label_selector, labels, term.match_label_keys, term.mismatch_label_keys),
        namespaces,
        namespace_selector,
    )


def topology_spec(
    spec: wire.PodSpec, namespace: str, labels: Mapping[str, str]
) -> PodTopologySpec | None:
    """The pod-to-pod constraints of a pod spec, or None when it has none."""
    affinity = spec.affinity
    pod_affinity = affinity.pod_affinity if affinity is not None else None
    anti_affinity = affinity.pod_anti_affinity if affinity is not None else None
    if pod_affinity is None and anti_affinity is None and not spec.topology_spread_constraints:
        return None

    def required(terms: wire.PodAffinity | None) -> tuple[PodAffinityTerm, ...]:
        if terms is None:
            return ()
        return tuple(
            _affinity_term(t, namespace, labels)
            for t in terms.required_during_scheduling_ignored_during_execution
        )

    def preferred(terms: wire.PodAffinity | None) -> tuple[tuple[int, PodAffinityTerm], ...]:
        if terms is None:
            return ()
        return tuple(
            (w.weight, _affinity_term(w.pod_affinity_term, namespace, labels))
            for w in terms.preferred_during_scheduling_ignored_during_execution
        )

    spread = tuple(
        SpreadConstraint(
            max_skew=c.max_skew,
            topology_key=c.topology_key,
            hard=c.when_unsatisfiable != "ScheduleAnyway",
            selector=term_selector(c.label_selector, labels, c.match_label_keys),
            min_domains=c.min_domains if c.min_domains is not None else 1,
            honour_node_affinity=c.node_affinity_policy != "Ignore",
            honour_node_taints=c.node_taints_policy == "Honor",
        )
        for c in spec.topology_spread_constraints
    )
    result = PodTopologySpec(
        namespace=namespace,
        required_affinity=required(pod_affinity),
        required_anti_affinity=required(anti_affinity),
        preferred_affinity=preferred(pod_affinity),
        preferred_anti_affinity=preferred(anti_affinity),
        spread=spread,
    )
    keys: set[str] = set()
    for term in (
        *result.required_affinity,
        *result.required_anti_affinity,
        *(t for _, t in result.preferred_affinity),
        *(t for _, t in result.preferred_anti_affinity),
    ):
        if term.selector is not None:
            keys |= term.selector.keys()
    for constraint in spread:
        if constraint.selector is not None:
            keys |= constraint.selector.keys()
    own = tuple(sorted((key, labels[key]) for key in keys if key in labels))
    return replace(result, own_labels=own)
