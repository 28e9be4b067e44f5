"""A pod's node affinity and tolerations against a node, with Kubernetes' exact semantics.

Shared by the predicates plugin (required node affinity, taints) and the
nodeorder plugin (preferred node affinity, PreferNoSchedule taints). The rules of one
term and one toleration (nodeaffinity, v1.Toleration.ToleratesTaint) are
api/matching.py's, which DRA's devices match with too.
"""

from __future__ import annotations

from collections.abc import Iterable

# Re-exported: the plugins and volumebinding read term_matches from here.
from scheduler.api.matching import term_matches as term_matches
from scheduler.api.matching import tolerates
from scheduler.api.node import NodeInfo, Taint
from scheduler.api.placement import PodPlacementSpec, Toleration

# Taint effects the scheduler filters on; PreferNoSchedule only affects scoring.
FILTERED_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
SCORED_EFFECT = "PreferNoSchedule"


def required_affinity_matches(placement: PodPlacementSpec, node: NodeInfo) -> bool:
    """spec.nodeSelector (every pair) and required node affinity (any term) both hold."""
    labels = node.labels
    for key, value in placement.node_selector:
        if labels.get(key) != value:
            return False
    terms = placement.required_terms
    if not terms:
        return True
    return any(term_matches(term, labels, node.name) for term in terms)


def tolerated(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """Whether any of the tolerations tolerates the taint."""
    return any(tolerates(toleration, taint) for toleration in tolerations)


def first_untolerated(taints: Iterable[Taint], tolerations: tuple[Toleration, ...]) -> Taint | None:
    """The first NoSchedule or NoExecute taint that no toleration covers, or None."""
    for taint in taints:
        if taint.effect in FILTERED_EFFECTS and not tolerated(tolerations, taint):
            return taint
    return None


def scoring_tolerations(tolerations: Iterable[Toleration]) -> tuple[Toleration, ...]:
    """The tolerations TaintToleration's score reads: effect PreferNoSchedule, or no
    effect (which tolerates every effect)."""
    return tuple(t for t in tolerations if not t.effect or t.effect == SCORED_EFFECT)


def untolerated_preferences(taints: Iterable[Taint], tolerations: tuple[Toleration, ...]) -> int:
    """How many PreferNoSchedule taints no toleration covers (kube-scheduler's
    countIntolerableTaintsPreferNoSchedule; pass scoring_tolerations' answer)."""
    return sum(
        1 for taint in taints if taint.effect == SCORED_EFFECT and not tolerated(tolerations, taint)
    )
