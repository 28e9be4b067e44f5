"""network-topology-aware: its arguments are checked when the config loads; its topology
problems become warnings; weight 0 gives soft gangs no preference."""

from __future__ import annotations

import pytest

from scheduler.api.errors import ConfigError
from scheduler.api.hypernode import HyperNodeInfo, MemberSelector
from scheduler.api.job import NetworkTopology
from scheduler.api.node import NodeInfo
from scheduler.engine import load_config, schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.plugins import PLUGINS
from scheduler.plugins.networktopology import NetworkTopologyPlugin
from tests.unit.builders import gang, node, snapshot

RACK = "example.com/rack"


def config(arguments: str) -> SchedulerConfig:
    return load_config(
        'actions: "enqueue, allocate"\n'
        "tiers:\n- plugins:\n  - name: gang\n  - name: predicates\n  - name: nodeorder\n"
        f"  - name: network-topology-aware\n    arguments: {arguments}\n"
    )


def test_the_plugin_is_registered_under_volcanos_name() -> None:
    assert PLUGINS["network-topology-aware"] is NetworkTopologyPlugin


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ("{tiers: [{tier: 1, nodeLabel: a}, {tier: 1, nodeLabel: b}]}", "lists tier 1 twice"),
        (
            "{tiers: [{tier: 1, nodeLabel: a}, {tier: 2, nodeLabel: a}]}",
            "lists nodeLabel 'a' twice",
        ),
        ("{tiers: [{tier: 0, nodeLabel: a}]}", "tiers.0.tier=0"),
        ("{tiers: [{tier: -2, nodeLabel: a}]}", "tiers.0.tier=-2"),
        ("{tiers: [{tier: 1, nodeLabel: ''}]}", "tiers.0.nodeLabel='' is empty"),
        ("{tiers: [{tier: 1}]}", "tiers.0.nodeLabel"),
        ("{weight: -1}", "weight=-1"),
        ("{tiers: [{tier: 1, nodeLabel: a, label: b}]}", "tiers.0.label"),
    ],
)
def test_malformed_arguments_are_refused_when_the_config_loads(arguments: str, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config(arguments)
    assert "plugin network-topology-aware" in str(caught.value)
    assert said in str(caught.value)


def test_volcanos_weight_argument_loads() -> None:
    (tier,) = config("{weight: 10}").tiers
    assert tier.plugins[-1].parsed_arguments.weight == 10  # type: ignore[union-attr]


def two_racks() -> list[NodeInfo]:
    # Rack a: a0; rack b: b0, b1. Least-allocated scoring puts a pair on a0 and b0.
    return [node(name, cpu=2, labels={RACK: name[0]}) for name in ("a0", "b0", "b1")]


@pytest.mark.parametrize(("weight", "racks"), [(0, {"a", "b"}), (1, {"a"}), (10, {"a"})])
def test_weight_zero_gives_soft_gangs_no_preference(weight: int, racks: set[str]) -> None:
    soft = gang("soft", 2)
    soft.network_topology = NetworkTopology("soft", 1)
    arguments = f"{{weight: {weight}, tiers: [{{tier: 1, nodeLabel: {RACK}}}]}}"
    result = schedule(snapshot(two_racks(), [soft]), config(arguments))
    assert {b.node[0] for b in result.binds} == racks


def test_weight_zero_still_holds_hard_gangs_to_one_domain() -> None:
    hard = gang("hard", 3)
    hard.network_topology = NetworkTopology("hard", 1)
    arguments = f"{{weight: 0, tiers: [{{tier: 1, nodeLabel: {RACK}}}]}}"
    result = schedule(snapshot(two_racks(), [hard]), config(arguments))
    assert {b.node[0] for b in result.binds} == {"b"}


def test_topology_problems_become_warnings_on_the_hypernode() -> None:
    snap = snapshot(two_racks(), [])
    snap.hypernodes = {
        "loop": HyperNodeInfo("loop", 2, (MemberSelector("HyperNode", exact_name="loop"),)),
    }
    result = schedule(snap, config("{}"))
    (report,) = [r for r in result.invalid if r.kind == "HyperNode"]
    assert (report.name, report.reason) == ("loop", "HyperNodeIgnored")
