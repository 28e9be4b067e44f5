"""HyperNodes (topology.volcano.sh/v1alpha1): named network domains of nodes, in tiers.

A HyperNode of tier 1 usually stands for a rack or an NVLink domain, tier 2 for a spine
or a zone; its members are Nodes or lower-tier HyperNodes, chosen by exact name, by a
regular expression over names, or by a label selector (Node members only, as Volcano)."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Literal

import msgspec

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.selectors import LabelSelector, label_selector

# The API group and version HyperNodes are served at.
API_VERSION = "topology.volcano.sh/v1alpha1"

MemberType = Literal["Node", "HyperNode"]


@dataclass(frozen=True, slots=True)
class MemberSelector:
    """One `spec.members` entry: exactly one of `exact_name`, `pattern` (a regular
    expression found anywhere in the name, as Go's MatchString; anchor it with ^...$ for a
    whole-name match) and `labels` is set, as the CRD's validation requires."""

    type: MemberType
    exact_name: str | None = None
    pattern: str | None = None
    labels: LabelSelector | None = None


@dataclass(frozen=True, slots=True)
class HyperNodeInfo:
    """A HyperNode as sessions read it: its tier (1 is the closest), and its members."""

    name: str
    tier: int
    members: tuple[MemberSelector, ...] = ()
    tier_name: str = ""

    @classmethod
    def from_wire(cls, obj: HyperNode) -> HyperNodeInfo:
        """The HyperNode as sessions read it; InvalidObject names the first field muster
        cannot use as written (what the CRD's schema and rules let through)."""
        name = obj.metadata.name
        members = tuple(
            _member(name, f"spec.members[{index}]", member)
            for index, member in enumerate(obj.spec.members)
        )
        return cls(name=name, tier=obj.spec.tier, members=members, tier_name=obj.spec.tier_name)


# Wire structs ----------------------------------------------------------------------------
# The subset of topology.volcano.sh/v1alpha1 HyperNode JSON that muster reads, in the style
# of api/wire/ (unknown fields skipped, camelCase names). status.nodeCount is no input to
# placement: it is read to write it only when it changed (job_status.hypernode_updates).


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True):
    """Base of the HyperNode wire structs."""


class ExactMatch(_Wire):
    """spec.members[].selector.exactMatch."""

    name: str = ""


class RegexMatch(_Wire):
    """spec.members[].selector.regexMatch."""

    pattern: str = ""


class HyperNodeMemberSelector(_Wire):
    """spec.members[].selector: the CRD's rules allow exactly one of the three."""

    exact_match: ExactMatch | None = None
    regex_match: RegexMatch | None = None
    label_match: wire.LabelSelector | None = None


class HyperNodeMember(_Wire):
    """spec.members[]."""

    # "type" is required by the CRD; "" (never stored by an API server) is refused.
    type: str = ""
    selector: HyperNodeMemberSelector | None = None


class HyperNodeSpec(_Wire):
    """HyperNode spec."""

    tier: int = 0
    tier_name: str = ""
    members: list[HyperNodeMember] = msgspec.field(default_factory=list)


class HyperNodeStatus(_Wire):
    """HyperNode status: the count of nodes Volcano's controller (or muster) wrote."""

    node_count: int | None = None


class HyperNode(_Wire):
    """A HyperNode (cluster-scoped)."""

    metadata: wire.ObjectMeta = msgspec.field(default_factory=wire.ObjectMeta)
    spec: HyperNodeSpec = msgspec.field(default_factory=HyperNodeSpec)
    status: HyperNodeStatus = msgspec.field(default_factory=HyperNodeStatus)


# Reading members -------------------------------------------------------------------------

_MEMBER_TYPES: tuple[MemberType, ...] = ("Node", "HyperNode")
# metav1.LabelSelectorAsSelector's operators, and whether each takes values.
_OPERATORS_WITH_VALUES = frozenset({"In", "NotIn"})
_OPERATORS_WITHOUT_VALUES = frozenset({"Exists", "DoesNotExist"})


def _invalid(name: str, field: str, value: object, problem: str) -> InvalidObject:
    return InvalidObject("HyperNode", name, field, value, problem)


def _member(name: str, path: str, member: HyperNodeMember) -> MemberSelector:
    member_type = next((t for t in _MEMBER_TYPES if t == member.type), None)
    if member_type is None:
        raise _invalid(name, f"{path}.type", member.type, "must be Node or HyperNode")
    selector = member.selector
    chosen = _selectors_set(selector) if selector is not None else []
    if selector is None or len(chosen) != 1:
        # The CRD's CEL rules refuse none or two on a selector that is there; a member
        # with no selector at all passes them (selector is optional in the schema).
        problem = (
            f"sets {' and '.join(chosen)}; keep only one"
            if chosen
            else "chooses no member; set one of exactMatch, regexMatch and labelMatch"
        )
        raise _invalid(name, f"{path}.selector", chosen, problem)
    if selector.exact_match is not None:
        exact = selector.exact_match.name
        if not exact:
            raise _invalid(name, f"{path}.selector.exactMatch.name", exact, "name a member")
        return MemberSelector(member_type, exact_name=exact)
    if member_type == "HyperNode":
        # Volcano reads only exactMatch for HyperNode members (a regexMatch or labelMatch
        # there adds no child); muster says so rather than building another hierarchy.
        raise _invalid(
            name,
            f"{path}.selector.{chosen[0]}",
            chosen[0],
            "a HyperNode member is chosen by exactMatch only (regexMatch and labelMatch "
            "choose Nodes); list each child HyperNode by name",
        )
    if selector.regex_match is not None:
        pattern = selector.regex_match.pattern
        _check_pattern(name, f"{path}.selector.regexMatch.pattern", pattern)
        return MemberSelector(member_type, pattern=pattern)
    label_match = selector.label_match or wire.LabelSelector()
    labels = _labels(name, f"{path}.selector.labelMatch", label_match)
    return MemberSelector(member_type, labels=labels)


def _selectors_set(selector: HyperNodeMemberSelector) -> list[str]:
    return [
        field
        for field, value in (
            ("exactMatch", selector.exact_match),
            ("regexMatch", selector.regex_match),
            ("labelMatch", selector.label_match),
        )
        if value is not None
    ]


def _check_pattern(name: str, field: str, pattern: str) -> None:
    if not pattern:
        raise _invalid(name, field, pattern, "give a regular expression over member names")
    try:
        with warnings.catch_warnings():
            # Python's re warns (FutureWarning) where it reads a pattern another way than
            # RE2 would, as in "[[:digit:]]": refused too, not matched differently.
            warnings.simplefilter("error")
            re.compile(pattern)
    except (re.error, Warning) as error:
        raise _invalid(
            name,
            field,
            pattern,
            f"is not a regular expression Python's re module reads the same way ({error}); "
            "use the common syntax of RE2 and Python (no \\z, \\p{..} or [[:class:]])",
        ) from None


def _labels(name: str, field: str, selector: wire.LabelSelector) -> LabelSelector:
    if not selector.match_labels and not selector.match_expressions:
        # Volcano chooses no Node for an empty labelMatch, where an empty label selector
        # elsewhere matches every label set: refused rather than read either way.
        raise _invalid(
            name,
            field,
            {},
            "an empty labelMatch chooses no Node; give matchLabels or matchExpressions",
        )
    for index, requirement in enumerate(selector.match_expressions):
        where = f"{field}.matchExpressions[{index}]"
        operator = requirement.operator
        if operator in _OPERATORS_WITH_VALUES:
            if not requirement.values:
                raise _invalid(
                    name, f"{where}.values", [], f"operator {operator} needs one or more values"
                )
        elif operator in _OPERATORS_WITHOUT_VALUES:
            if requirement.values:
                raise _invalid(
                    name,
                    f"{where}.values",
                    requirement.values,
                    f"operator {operator} takes no values",
                )
        else:
            raise _invalid(
                name,
                f"{where}.operator",
                operator,
                "must be In, NotIn, Exists or DoesNotExist",
            )
    return label_selector(selector)
