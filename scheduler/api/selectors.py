"""Selectors as records: a node selector term's requirements, and a metav1.LabelSelector
compiled for matching label sets (pod affinity and spread terms, budgets, HyperNode members,
subgroups, volume claims)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scheduler.api import wire


@dataclass(frozen=True, slots=True)
class SelectorRequirement:
    """One matchExpressions or matchFields entry of a node selector term."""

    key: str
    operator: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SelectorTerm:
    """A node selector term: all its requirements must hold."""

    match_expressions: tuple[SelectorRequirement, ...]
    match_fields: tuple[SelectorRequirement, ...]


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A metav1.LabelSelector: every matchLabels pair and matchExpressions entry must hold
    (an empty selector matches every label set)."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[SelectorRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a label set satisfies the selector (metav1.LabelSelectorAsSelector)."""
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for requirement in self.match_expressions:
            operator = requirement.operator
            present = requirement.key in labels
            if operator == "In":
                if not present or labels[requirement.key] not in requirement.values:
                    return False
            elif operator == "NotIn":
                if present and labels[requirement.key] in requirement.values:
                    return False
            elif operator == "Exists":
                if not present:
                    return False
            elif operator == "DoesNotExist":
                if present:
                    return False
            else:
                # The API server refuses other operators; a selector it let through with
                # one (an older server) matches nothing rather than everything.
                return False
        return True

    def anchor(self) -> tuple[str, str] | None:
        """A label pair every matching set must carry, for index lookups, or None."""
        if self.match_labels:
            return self.match_labels[0]
        for requirement in self.match_expressions:
            if requirement.operator == "In" and len(requirement.values) == 1:
                return (requirement.key, requirement.values[0])
        return None

    def keys(self) -> frozenset[str]:
        """The label keys the selector reads."""
        return frozenset(
            [key for key, _ in self.match_labels] + [r.key for r in self.match_expressions]
        )


def label_selector(selector: wire.LabelSelector) -> LabelSelector:
    """A wire LabelSelector compiled for matching label sets (a claim's volume selector)."""
    return term_selector(selector, {}) or LabelSelector()


def term_selector(
    selector: wire.LabelSelector | None,
    labels: Mapping[str, str],
    match_keys: Iterable[str] = (),
    mismatch_keys: Iterable[str] = (),
) -> LabelSelector | None:
    """A term's selector (None when the term names none), with matchLabelKeys and
    mismatchLabelKeys resolved against the pod's own `labels`."""
    if selector is None:
        return None
    expressions = list(_requirements_of(selector.match_expressions))
    # matchLabelKeys / mismatchLabelKeys: the pod's own values, ANDed in as In / NotIn
    # (kube-apiserver merges them the same way; a key the pod lacks is ignored).
    expressions.extend(
        SelectorRequirement(key, "In", (labels[key],)) for key in match_keys if key in labels
    )
    expressions.extend(
        SelectorRequirement(key, "NotIn", (labels[key],)) for key in mismatch_keys if key in labels
    )
    return LabelSelector(tuple(sorted(selector.match_labels.items())), tuple(expressions))


def _requirements_of(
    items: list[wire.LabelSelectorRequirement],
) -> Iterable[SelectorRequirement]:
    return (SelectorRequirement(r.key, r.operator, tuple(r.values)) for r in items)
