"""Node selector terms and taint tolerations, matched with Kubernetes' exact rules.

The rules of k8s.io/component-helpers/scheduling/corev1/nodeaffinity (a term's
matchExpressions over node labels, its matchFields over the node's name) and of
v1.Toleration.ToleratesTaint, which DRA's device tolerations repeat word for word
(resourceclaim.ToleratesTaint). Pods' node affinity and taints (nodefit/) and the devices
of ResourceSlices (dra/) both match with them, so the rule has one home.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Protocol

from scheduler.api import wire
from scheduler.api.selectors import SelectorRequirement, SelectorTerm

# The only field a node selector's matchFields may name.
NODE_NAME_FIELD = "metadata.name"

# strconv.ParseInt(s, 10, 64): an optional sign and ASCII digits, nothing else
# (Python's int() would also take spaces, underscores and non-ASCII digits).
_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


class TaintLike(Protocol):
    """A taint as a toleration reads it (a node's or a device's)."""

    @property
    def key(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def effect(self) -> str: ...


class TolerationLike(Protocol):
    """A toleration as it is matched (a pod's or a device request's)."""

    @property
    def key(self) -> str: ...
    @property
    def operator(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def effect(self) -> str: ...


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


def tolerates(toleration: TolerationLike, taint: TaintLike) -> bool:
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


def wire_term(term: wire.NodeSelectorTerm) -> SelectorTerm:
    """A node selector term as decoded from the API, in the form the matchers take."""
    return SelectorTerm(
        tuple(
            SelectorRequirement(r.key, r.operator, tuple(r.values)) for r in term.match_expressions
        ),
        tuple(SelectorRequirement(r.key, r.operator, tuple(r.values)) for r in term.match_fields),
    )


def selector_matches(terms: tuple[SelectorTerm, ...], labels: Mapping[str, str], node: str) -> bool:
    """Whether a node satisfies a node selector: any of its terms (none: no node)."""
    return any(term_matches(term, labels, node) for term in terms)
