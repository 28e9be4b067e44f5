"""World keeps HyperNodes: upserted and deleted by watch events, shared read-only by
snapshots (copied once per change), and an unusable one reported, not used."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from scheduler.api.hypernode import HyperNode, MemberSelector
from scheduler.api.task import TaskStatus
from scheduler.cache.kinds import hypernodes, nodes, pods
from scheduler.cache.world import World
from scheduler.engine import schedule
from tests.unit.cache.test_world import node, pod, ready_world


def hypernode(name: str, *members: str, tier: int = 1, node_count: int = 0) -> HyperNode:
    body: dict[str, Any] = {
        "metadata": {"name": name},
        "spec": {
            "tier": tier,
            "members": [{"type": "Node", "selector": {"exactMatch": {"name": m}}} for m in members],
        },
        "status": {"nodeCount": node_count},
    }
    return msgspec.convert(body, HyperNode)


def unusable(name: str) -> HyperNode:
    # A member with no selector: the CRD's rules let it through, muster cannot use it.
    return msgspec.convert(
        {"metadata": {"name": name}, "spec": {"tier": 1, "members": [{"type": "Node"}]}},
        HyperNode,
    )


def test_an_upserted_hypernode_is_in_every_snapshot() -> None:
    world = World()
    hypernodes.upsert(world, hypernode("rack-a", "n1", "n2"))
    info = world.snapshot().hypernodes["rack-a"]
    assert info.tier == 1
    assert info.members == (
        MemberSelector("Node", exact_name="n1"),
        MemberSelector("Node", exact_name="n2"),
    )
    assert world.counts()["hypernode"] == 1


def test_a_changed_hypernode_replaces_the_old_one() -> None:
    world = World()
    hypernodes.upsert(world, hypernode("rack-a", "n1"))
    hypernodes.upsert(world, hypernode("rack-a", "n1", "n3"))
    members = world.snapshot().hypernodes["rack-a"].members
    assert [m.exact_name for m in members] == ["n1", "n3"]


def test_a_deleted_hypernode_leaves_the_snapshots() -> None:
    world = World()
    hypernodes.upsert(world, hypernode("rack-a", "n1"))
    hypernodes.upsert(world, hypernode("rack-b", "n2"))
    hypernodes.delete(world, "rack-a")
    assert sorted(world.snapshot().hypernodes) == ["rack-b"]
    assert world.counts()["hypernode"] == 1


def test_snapshots_share_one_read_only_mapping_until_a_hypernode_changes() -> None:
    world = World()
    hypernodes.upsert(world, hypernode("rack-a", "n1"))
    first, second = world.snapshot(), world.snapshot()
    assert first.hypernodes is second.hypernodes
    assert first.clone().hypernodes is first.hypernodes
    with pytest.raises(TypeError):
        first.hypernodes["rack-z"] = first.hypernodes["rack-a"]  # type: ignore[index]
    hypernodes.upsert(world, hypernode("rack-b", "n2"))
    third = world.snapshot()
    assert third.hypernodes is not first.hypernodes
    assert sorted(first.hypernodes) == ["rack-a"]  # a session's view does not move under it
    assert sorted(third.hypernodes) == ["rack-a", "rack-b"]


def test_a_status_only_update_changes_nothing_a_session_reads() -> None:
    world = World()
    hypernodes.upsert(world, hypernode("rack-a", "n1"))
    generation, view = world.generation, world.hypernodes.view()
    hypernodes.upsert(world, hypernode("rack-a", "n1", node_count=1))
    assert world.generation == generation
    assert world.hypernodes.view() is view


def test_a_topology_change_bumps_the_generation_and_retries_failed_gangs_at_once() -> None:
    world = ready_world()
    nodes.upsert(world, node("n1", cpu="1"))
    pods.upsert(world, pod("big", cpu="2"))
    snapshot = world.snapshot()
    world.record_session(schedule(snapshot, copy=False), now=1.0)
    assert world.live.failures, "the pod that does not fit failed its placement"
    generation = world.generation
    hypernodes.upsert(world, hypernode("rack-a", "n1"))
    assert world.generation > generation
    assert not world.live.failures
    assert world.tasks["uid-big"].status is TaskStatus.PENDING


def test_an_unusable_hypernode_is_reported_and_not_used() -> None:
    world = World()
    hypernodes.upsert(world, hypernode("rack-a", "n1"))
    hypernodes.upsert(world, unusable("rack-a"))
    snapshot = world.snapshot()
    assert "rack-a" not in snapshot.hypernodes
    (error,) = snapshot.invalid
    assert (error.kind, error.name, error.field) == (
        "HyperNode",
        "rack-a",
        "spec.members[0].selector",
    )
    assert world.counts()["hypernode"] == 0


def test_an_unusable_hypernode_becomes_an_invalid_object_report_of_the_session() -> None:
    world = ready_world()
    hypernodes.upsert(world, unusable("rack-a"))
    reports = [r for r in schedule(world.snapshot()).invalid if r.kind == "HyperNode"]
    assert [(r.name, r.reason) for r in reports] == [("rack-a", "InvalidObject")]
    assert "spec.members[0].selector" in reports[0].message


def test_a_fixed_hypernode_is_no_longer_reported() -> None:
    world = World()
    hypernodes.upsert(world, unusable("rack-a"))
    hypernodes.upsert(world, hypernode("rack-a", "n1"))
    snapshot = world.snapshot()
    assert snapshot.invalid == []
    assert "rack-a" in snapshot.hypernodes


def test_a_deleted_unusable_hypernode_is_no_longer_reported() -> None:
    world = World()
    hypernodes.upsert(world, unusable("rack-a"))
    hypernodes.delete(world, "rack-a")
    assert world.snapshot().invalid == []
