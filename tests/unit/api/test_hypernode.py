"""HyperNodeInfo.from_wire: each member selector read, and each HyperNode muster cannot use
refused with the field named (what the CRD's schema and CEL rules let through)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from scheduler.api.errors import InvalidObject
from scheduler.api.hypernode import HyperNode, HyperNodeInfo, MemberSelector
from scheduler.api.selectors import LabelSelector, SelectorRequirement


def hypernode(*members: dict[str, Any], tier: int = 1, **spec: Any) -> HyperNode:
    body = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "rack-a", "resourceVersion": "7"},
        "spec": {"tier": tier, "members": list(members), **spec},
        "status": {"nodeCount": 4},
    }
    return msgspec.json.decode(msgspec.json.encode(body), type=HyperNode)


def node_member(**selector: Any) -> dict[str, Any]:
    return {"type": "Node", "selector": selector}


def refusal(obj: HyperNode) -> InvalidObject:
    with pytest.raises(InvalidObject) as caught:
        HyperNodeInfo.from_wire(obj)
    return caught.value


def test_an_exact_match_member_is_read_by_name_with_tier_and_tier_name() -> None:
    info = HyperNodeInfo.from_wire(
        hypernode(node_member(exactMatch={"name": "node-1"}), tier=2, tierName="spine")
    )
    assert info == HyperNodeInfo(
        name="rack-a",
        tier=2,
        members=(MemberSelector("Node", exact_name="node-1"),),
        tier_name="spine",
    )


def test_a_regex_match_member_keeps_its_pattern() -> None:
    info = HyperNodeInfo.from_wire(hypernode(node_member(regexMatch={"pattern": "^node-[0-9]+$"})))
    assert info.members == (MemberSelector("Node", pattern="^node-[0-9]+$"),)


def test_a_label_match_member_becomes_a_label_selector() -> None:
    label_match = {
        "matchLabels": {"example.com/rack": "a"},
        "matchExpressions": [{"key": "gpu", "operator": "In", "values": ["h100", "a100"]}],
    }
    (member,) = HyperNodeInfo.from_wire(hypernode(node_member(labelMatch=label_match))).members
    assert member == MemberSelector(
        "Node",
        labels=LabelSelector(
            (("example.com/rack", "a"),), (SelectorRequirement("gpu", "In", ("h100", "a100")),)
        ),
    )
    assert member.labels is not None
    assert member.labels.matches({"example.com/rack": "a", "gpu": "h100"})
    assert not member.labels.matches({"example.com/rack": "b", "gpu": "h100"})


def test_a_hypernode_member_is_read_by_exact_name_in_member_order() -> None:
    info = HyperNodeInfo.from_wire(
        hypernode(
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "rack-b"}}},
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "rack-c"}}},
            tier=2,
        )
    )
    assert info.members == (
        MemberSelector("HyperNode", exact_name="rack-b"),
        MemberSelector("HyperNode", exact_name="rack-c"),
    )


def test_a_hypernode_without_members_has_none() -> None:
    obj = msgspec.convert({"metadata": {"name": "empty"}, "spec": {"tier": 1}}, HyperNode)
    assert HyperNodeInfo.from_wire(obj) == HyperNodeInfo("empty", 1)


def test_a_member_without_a_selector_is_refused_naming_it() -> None:
    error = refusal(hypernode({"type": "Node"}))
    assert (error.kind, error.name, error.field) == (
        "HyperNode",
        "rack-a",
        "spec.members[0].selector",
    )
    assert "chooses no member" in error.problem


def test_an_empty_selector_is_refused() -> None:
    error = refusal(hypernode(node_member(exactMatch={"name": "n"}), node_member()))
    assert error.field == "spec.members[1].selector"


def test_two_selectors_on_one_member_are_refused_naming_both() -> None:
    error = refusal(hypernode(node_member(exactMatch={"name": "n"}, regexMatch={"pattern": "n"})))
    assert error.field == "spec.members[0].selector"
    assert error.value == ["exactMatch", "regexMatch"]
    assert "keep only one" in str(error)


def test_a_pattern_pythons_re_cannot_compile_is_refused() -> None:
    # RE2's \z (end of text) is not Python's.
    error = refusal(hypernode(node_member(regexMatch={"pattern": "^node-a\\z"})))
    assert error.field == "spec.members[0].selector.regexMatch.pattern"
    assert error.value == "^node-a\\z"
    assert "Python's re" in error.problem


def test_a_posix_class_python_would_read_as_a_nested_set_is_refused() -> None:
    error = refusal(hypernode(node_member(regexMatch={"pattern": "^node-[[:digit:]]+$"})))
    assert error.field == "spec.members[0].selector.regexMatch.pattern"


def test_an_unbalanced_pattern_is_refused() -> None:
    error = refusal(hypernode(node_member(regexMatch={"pattern": "node-(a"})))
    assert error.field == "spec.members[0].selector.regexMatch.pattern"


@pytest.mark.parametrize(
    "selector",
    [
        pytest.param({"labelMatch": {"matchLabels": {"rack": "a"}}}, id="labelMatch"),
        pytest.param({"regexMatch": {"pattern": "rack-.*"}}, id="regexMatch"),
    ],
)
def test_a_hypernode_member_chosen_other_than_by_exact_name_is_refused(
    selector: dict[str, Any],
) -> None:
    (used,) = selector
    error = refusal(hypernode({"type": "HyperNode", "selector": selector}, tier=2))
    assert error.field == f"spec.members[0].selector.{used}"
    assert "exactMatch only" in error.problem


def test_an_empty_label_match_is_refused_rather_than_matching_every_node() -> None:
    error = refusal(hypernode(node_member(labelMatch={})))
    assert error.field == "spec.members[0].selector.labelMatch"


@pytest.mark.parametrize(
    ("expression", "field"),
    [
        pytest.param({"key": "k", "operator": "Gt", "values": ["1"]}, "operator", id="unknown-op"),
        pytest.param({"key": "k", "operator": "In"}, "values", id="in-without-values"),
        pytest.param(
            {"key": "k", "operator": "Exists", "values": ["v"]}, "values", id="exists-with-values"
        ),
    ],
)
def test_a_label_expression_metav1_would_refuse_is_refused(
    expression: dict[str, Any], field: str
) -> None:
    error = refusal(hypernode(node_member(labelMatch={"matchExpressions": [expression]})))
    assert error.field == f"spec.members[0].selector.labelMatch.matchExpressions[0].{field}"


def test_an_unknown_member_type_is_refused() -> None:
    error = refusal(hypernode({"type": "Rack", "selector": {"exactMatch": {"name": "n"}}}))
    assert (error.field, error.value) == ("spec.members[0].type", "Rack")
