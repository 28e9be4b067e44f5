"""HyperNodes' status.nodeCount: counted as Volcano's HyperNode controller counts it and
written only where the API server holds another number."""

from __future__ import annotations

from scheduler.api.hypernode import HyperNodeInfo, MemberSelector
from scheduler.api.selectors import LabelSelector
from scheduler.api.topology import member_counts
from scheduler.framework.decisions import HyperNodeStatusUpdate
from scheduler.framework.job_status import hypernode_updates
from tests.unit.builders import node, snapshot

RACK = "example.com/rack"


def cluster_hypernodes() -> dict[str, HyperNodeInfo]:
    return {
        # by name (one of them names no node), and by pattern
        "rack-a": HyperNodeInfo(
            "rack-a",
            1,
            (
                MemberSelector("Node", exact_name="a0"),
                MemberSelector("Node", exact_name="gone"),
                MemberSelector("Node", pattern="^a[12]$"),
            ),
        ),
        "rack-b": HyperNodeInfo(
            "rack-b",
            1,
            (MemberSelector("Node", labels=LabelSelector(((RACK, "b"),))),),
        ),
        # two member HyperNodes: two names, as Volcano counts them
        "spine": HyperNodeInfo(
            "spine",
            2,
            (
                MemberSelector("HyperNode", exact_name="rack-a"),
                MemberSelector("HyperNode", exact_name="rack-b"),
            ),
        ),
    }


def nodes() -> list:  # type: ignore[type-arg]
    return [
        node("a0"),
        node("a1"),
        node("a2"),
        node("b0", labels={RACK: "b"}),
        node("b1", labels={RACK: "b"}),
    ]


def test_node_count_is_counted_as_volcanos_controller_counts_it() -> None:
    snap = snapshot(nodes(), [])
    counts = member_counts(cluster_hypernodes(), snap.nodes)
    assert counts == {"rack-a": 4, "rack-b": 2, "spine": 2}


def test_only_counts_the_api_server_holds_otherwise_are_written() -> None:
    snap = snapshot(nodes(), [])
    snap.hypernodes = cluster_hypernodes()
    snap.hypernode_counts = {"rack-a": 4, "rack-b": 1, "spine": None}
    assert hypernode_updates(snap) == [
        HyperNodeStatusUpdate("rack-b", 2),
        HyperNodeStatusUpdate("spine", 2),
    ]


def test_a_cluster_without_hypernodes_writes_none() -> None:
    assert hypernode_updates(snapshot(nodes(), [])) == []
