"""Node selector and toleration matching with Kubernetes' exact semantics.

Shared by the predicates plugin (required node affinity, taints) and the
nodeorder plugin (preferred node affinity, PreferNoSchedule taints). Mirrors
k8s.io/component-helpers/scheduling/corev1/nodeaffinity and
v1.Toleration.ToleratesTaint.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from scheduler.api.node import NodeInfo, Taint
from scheduler.api.task import PodPlacementSpec, SelectorRequirement, SelectorTerm, Toleration

# The only field a node selector's matchFields may name.
NODE_NAME_FIELD = "metadata.name"
# Taint effects the scheduler filters on; PreferNoSchedule only affects scoring.
FILTERED_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
SCORED_EFFECT = "PreferNoSchedule"

# strconv.ParseInt(s, 10, 64): an optional sign and ASCII digits, nothing else
# (Python's int() would also take spaces, underscores and non-ASCII digits).
_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def parse_int64(value: str) -> int | None:
    """The value as Go's strconv.ParseInt(value, 10, 64) reads it, or None."""
    if _INT64.fullmatch(value) is None:
        return None
    number = int(value)
    if number < _INT64_MIN or number > _INT64_MAX:
        return None
    return number


def requirement_matches(requirement: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    """Whether node labels satisfy one matchExpressions entry.

    A requirement the API would call invalid (In without values, Exists with
    values, Gt with a non-integer bound, an unknown operator) matches nothing,
    which makes its whole term match nothing, as kube-scheduler does.
    """
    operator = requirement.operator
    values = requirement.values
    key = requirement.key
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        # A node without the label satisfies NotIn.
        return bool(values) and (key not in labels or labels[key] not in values)
    if operator == "Exists":
        return not values and key in labels
    if operator == "DoesNotExist":
        return not values and key not in labels
    if operator == "Gt" or operator == "Lt":
        if len(values) != 1 or key not in labels:
            return False
        bound = parse_int64(values[0])
        actual = parse_int64(labels[key])
        if bound is None or actual is None:
            return False
        return actual > bound if operator == "Gt" else actual < bound
    return False


def field_requirement_matches(requirement: SelectorRequirement, node_name: str) -> bool:
    """Whether a node satisfies one matchFields entry (only metadata.name, In/NotIn, one value)."""
    if requirement.key != NODE_NAME_FIELD or len(requirement.values) != 1:
        return False
    if requirement.operator == "In":
        return node_name == requirement.values[0]
    if requirement.operator == "NotIn":
        return node_name != requirement.values[0]
    return False


def term_matches(term: SelectorTerm, labels: Mapping[str, str], node_name: str) -> bool:
    """Whether a node satisfies every requirement of a term; an empty term matches nothing."""
    if not term.match_expressions and not term.match_fields:
        return False
    for requirement in term.match_expressions:
        if not requirement_matches(requirement, labels):
            return False
    for requirement in term.match_fields:
        if not field_requirement_matches(requirement, node_name):
            return False
    return True


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


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """v1.Toleration.ToleratesTaint: empty effect and empty key match any; Exists ignores value."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator
    if operator == "Exists":
        return True
    if operator == "Equal" or operator == "":
        return toleration.value == taint.value
    return False


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
