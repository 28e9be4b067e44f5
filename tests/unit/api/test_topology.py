"""Topology resolution: HyperNodes and node-label tiers become tiers of domains."""

from __future__ import annotations

import pytest

from scheduler.api.hypernode import HyperNodeInfo, MemberSelector
from scheduler.api.node import NodeInfo
from scheduler.api.selectors import LabelSelector, SelectorRequirement
from scheduler.api.topology import (
    HYPERNODE_IGNORED,
    LabelTier,
    Topology,
    resolve,
    resolve_cached,
)
from tests.unit.builders import node

RACK = "example.com/rack"
ZONE = "topology.kubernetes.io/zone"


def nodes(*specs: tuple[str, dict[str, str]]) -> dict[str, NodeInfo]:
    return {name: node(name, labels=labels) for name, labels in specs}


CLUSTER = nodes(
    ("rack-a-1", {RACK: "a", ZONE: "z1", "gpu": "h100"}),
    ("rack-a-2", {RACK: "a", ZONE: "z1", "gpu": "h100"}),
    ("rack-b-1", {RACK: "b", ZONE: "z1"}),
    ("lonely", {}),
)


def by_name(topology: Topology) -> dict[str, frozenset[str]]:
    return {d.name: d.nodes for domains in topology.tiers.values() for d in domains}


def nodes_member(**selector: object) -> MemberSelector:
    return MemberSelector("Node", **selector)  # type: ignore[arg-type]


def child(name: str) -> MemberSelector:
    return MemberSelector("HyperNode", exact_name=name)


@pytest.mark.parametrize(
    ("member", "expected"),
    [
        (nodes_member(exact_name="rack-b-1"), {"rack-b-1"}),
        # An exact name no node has adds nothing (the node may come later).
        (nodes_member(exact_name="gone"), set()),
        # Go's MatchString is not anchored: "rack-a" matches inside the names.
        (nodes_member(pattern="rack-a"), {"rack-a-1", "rack-a-2"}),
        (nodes_member(pattern="^rack-.-1$"), {"rack-a-1", "rack-b-1"}),
        (
            nodes_member(labels=LabelSelector(match_labels=(("gpu", "h100"),))),
            {"rack-a-1", "rack-a-2"},
        ),
        (
            nodes_member(
                labels=LabelSelector(match_expressions=(SelectorRequirement(RACK, "In", ("b",)),))
            ),
            {"rack-b-1"},
        ),
        # As in Volcano, an empty labelMatch selects no node rather than every node.
        (nodes_member(labels=LabelSelector()), set()),
    ],
)
def test_node_members_are_chosen_by_exact_name_regex_or_labels(
    member: MemberSelector, expected: set[str]
) -> None:
    topology = resolve({"hn": HyperNodeInfo("hn", 1, (member,))}, CLUSTER)
    assert by_name(topology).get("hn", frozenset()) == expected
    assert topology.problems == ()


def test_nested_hypernodes_union_their_nodes_upward() -> None:
    hypernodes = {
        "rack-a": HyperNodeInfo("rack-a", 1, (nodes_member(pattern="rack-a"),)),
        "rack-b": HyperNodeInfo("rack-b", 1, (nodes_member(exact_name="rack-b-1"),)),
        "spine": HyperNodeInfo("spine", 2, (child("rack-a"), child("rack-b"))),
        "top": HyperNodeInfo("top", 3, (child("spine"), nodes_member(exact_name="lonely"))),
    }
    topology = resolve(hypernodes, CLUSTER)
    assert by_name(topology) == {
        "rack-a": {"rack-a-1", "rack-a-2"},
        "rack-b": {"rack-b-1"},
        "spine": {"rack-a-1", "rack-a-2", "rack-b-1"},
        "top": set(CLUSTER),
    }
    assert [d.name for d in topology.containing({"rack-a-1", "rack-b-1"}, 3)] == ["spine", "top"]
    assert topology.source == "HyperNode" and topology.highest_tier == 3


def test_a_cycle_of_hypernodes_is_left_out_and_named() -> None:
    hypernodes = {
        "x": HyperNodeInfo("x", 2, (child("y"), nodes_member(exact_name="rack-a-1"))),
        "y": HyperNodeInfo("y", 2, (child("x"),)),
        "ok": HyperNodeInfo("ok", 1, (nodes_member(exact_name="rack-b-1"),)),
    }
    topology = resolve(hypernodes, CLUSTER)
    assert set(by_name(topology)) == {"ok"}
    named = {p.name for p in topology.problems if p.reason == HYPERNODE_IGNORED}
    assert named == {"x", "y"}


def test_a_member_of_a_tier_not_below_its_parent_leaves_the_parent_out() -> None:
    hypernodes = {
        "rack": HyperNodeInfo("rack", 2, (nodes_member(exact_name="rack-a-1"),)),
        "parent": HyperNodeInfo("parent", 2, (child("rack"),)),
    }
    topology = resolve(hypernodes, CLUSTER)
    assert set(by_name(topology)) == {"rack"}
    (problem,) = topology.problems
    assert problem.name == "parent" and "tier 2" in problem.message


def test_a_bad_regex_and_a_missing_child_are_problems_not_errors() -> None:
    hypernodes = {
        "bad": HyperNodeInfo("bad", 1, (nodes_member(pattern="rack-("),)),
        "parent": HyperNodeInfo("parent", 2, (child("nobody"), child("bad"))),
    }
    topology = resolve(hypernodes, CLUSTER)
    assert by_name(topology) == {}
    messages = " | ".join(p.message for p in topology.problems)
    assert "'rack-(' is not a valid regular expression" in messages
    assert "'nobody', which does not exist" in messages


def test_label_tiers_group_nodes_by_value_and_a_node_without_the_label_is_in_none() -> None:
    topology = resolve({}, CLUSTER, [LabelTier(2, ZONE, "zone"), LabelTier(1, RACK)])
    assert [tier for tier in topology.tiers] == [1, 2]
    assert by_name(topology) == {
        f"{RACK}=a": {"rack-a-1", "rack-a-2"},
        f"{RACK}=b": {"rack-b-1"},
        f"{ZONE}=z1": {"rack-a-1", "rack-a-2", "rack-b-1"},
    }
    assert topology.tier_names == {"zone": 2}
    assert not topology.containing({"lonely"}, 2)
    assert topology.describe_tiers(1) == f"tier-1 domain ({RACK})"


def test_hypernodes_win_over_label_tiers_and_say_the_labels_are_unused() -> None:
    hypernodes = {"hn": HyperNodeInfo("hn", 1, (nodes_member(exact_name="lonely"),))}
    topology = resolve(hypernodes, CLUSTER, [LabelTier(1, RACK)])
    assert by_name(topology) == {"hn": {"lonely"}}
    assert any(RACK in p.message for p in topology.problems)


def test_resolution_is_reused_while_hypernodes_and_node_labels_are_the_same_objects() -> None:
    hypernodes = {"hn": HyperNodeInfo("hn", 1, (nodes_member(pattern="rack"),))}
    first = resolve_cached(hypernodes, CLUSTER)
    assert resolve_cached(hypernodes, CLUSTER) is first
    relabelled = dict(CLUSTER)
    relabelled["rack-c-1"] = node("rack-c-1")
    assert by_name(resolve_cached(hypernodes, relabelled))["hn"] >= {"rack-c-1"}
