"""PodGroup spec.networkTopology: how it is read, and the conditions it gets."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.job import JobInfo, NetworkTopology
from scheduler.api.queue import QueueInfo
from scheduler.api.snapshot import build_snapshot
from scheduler.engine import load_config, schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.decisions import GroupCondition
from tests.unit.builders import gang, node, snapshot

RACK = "example.com/rack"


def podgroup(topology: Any) -> wire.PodGroup:
    return wire.from_dict(
        {
            "metadata": {"name": "ray-pg", "namespace": "ml", "uid": "u1"},
            "spec": {"minMember": 2, "networkTopology": topology},
        },
        wire.PodGroup,
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({}, NetworkTopology("hard", None, "")),
        # What KubeRay writes from volcano.sh/network-topology-mode and -highest-tier-allowed.
        ({"mode": "hard", "highestTierAllowed": 1}, NetworkTopology("hard", 1, "")),
        ({"mode": "soft", "highestTierAllowed": 2}, NetworkTopology("soft", 2, "")),
        ({"highestTierName": "zone"}, NetworkTopology("hard", None, "zone")),
        ({"mode": "", "highestTierAllowed": 0}, NetworkTopology("hard", 0, "")),
    ],
)
def test_network_topology_is_read_with_volcano_defaults(
    raw: dict[str, Any], expected: NetworkTopology
) -> None:
    job = JobInfo.from_podgroup(podgroup(raw))
    assert job.network_topology == expected


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"highestTierAllowed": 1, "highestTierName": "rack"}, "highestTierName"),
        ({"mode": "strict"}, "mode"),
        ({"highestTierAllowed": -1}, "highestTierAllowed"),
        ({"highestTierAllowed": "1"}, "highestTierAllowed"),
        ({"highestTierAllowed": True}, "highestTierAllowed"),
        ({"highestTierName": 3}, "highestTierName"),
        ({"tier": 1}, "tier"),
    ],
)
def test_an_unusable_network_topology_makes_the_podgroup_invalid_naming_the_field(
    raw: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidObject) as caught:
        JobInfo.from_podgroup(podgroup(raw))
    assert caught.value.field == f"spec.networkTopology.{field}"
    job = JobInfo.read(podgroup(raw), 0, "default")
    assert job.invalid is not None and job.network_topology is None


PLUGIN_ON = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: network-topology-aware
    arguments: {tiers: [{tier: 1, nodeLabel: example.com/rack, tierName: rack}]}
"""


def conditions(topology: Any, config: SchedulerConfig | None = None) -> dict[str, GroupCondition]:
    snap = build_snapshot(podgroups=[podgroup(topology)])
    snap.queues["default"] = QueueInfo("default")
    (update,) = schedule(snap, config).podgroups
    return {c.type: c for c in update.conditions}


def test_without_the_plugin_the_condition_says_the_plugin_is_off() -> None:
    found = conditions({"mode": "hard", "highestTierAllowed": 1})
    message = found["FieldsNotHonoured"].message
    assert "spec.networkTopology is not honoured yet" in message
    assert "network-topology-aware plugin is not enabled" in message


def test_with_the_plugin_the_field_is_honoured_and_not_listed() -> None:
    found = conditions({"mode": "hard", "highestTierAllowed": 1}, load_config(PLUGIN_ON))
    assert "FieldsNotHonoured" not in found


def test_invalid_network_topology_gets_the_invalid_podgroup_condition_naming_the_field() -> None:
    found = conditions({"mode": "strict"}, load_config(PLUGIN_ON))
    condition = found["Unschedulable"]
    assert condition.reason == "InvalidPodGroup"
    assert "spec.networkTopology.mode='strict'" in condition.message


def test_a_tier_name_no_domain_has_gets_a_condition_naming_highest_tier_name() -> None:
    job = gang("g", 2)
    job.network_topology = NetworkTopology("hard", None, "spine")
    nodes = [node("n1", labels={RACK: "a"})]
    (update,) = schedule(snapshot(nodes, [job]), load_config(PLUGIN_ON)).podgroups
    (condition,) = [c for c in update.conditions if c.type == "Unschedulable"]
    assert condition.reason == "InvalidNetworkTopology"
    assert "spec.networkTopology.highestTierName='spine' names no tier" in condition.message
    assert "rack (tier 1)" in condition.message
