"""network-topology-aware: its arguments are checked when the config loads; its topology
problems become warnings; weight 0 gives soft gangs no preference."""

from __future__ import annotations

import pytest

from scheduler.api.errors import ConfigError
from scheduler.api.hypernode import HyperNodeInfo, MemberSelector
from scheduler.api.job import JobInfo, NetworkTopology
from scheduler.api.node import NodeInfo
from scheduler.engine import load_config, schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.cycle import open_cycle
from scheduler.plugins import PLUGINS
from scheduler.plugins.networktopology import NetworkTopologyArguments, NetworkTopologyPlugin
from tests.unit.builders import gang, node, running_gang, snapshot

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


def test_volcanos_hypernode_arguments_load() -> None:
    (tier,) = config(
        "{hypernode.binpack.cpu: 5, hypernode.binpack.memory: 0, "
        "hypernode.binpack.resources: 'nvidia.com/gpu, example.com/foo', "
        "hypernode.binpack.resources.nvidia.com/gpu: 2, "
        "hypernode.binpack.normal-pod.enable: false, hypernode.binpack.normal-pod.fading: 0.5, "
        "hypernode.gradient.evict.max-hypernodes: 3}"
    ).tiers
    parsed = tier.plugins[-1].parsed_arguments
    assert isinstance(parsed, NetworkTopologyArguments)
    weights = parsed.domain_weights()
    assert (weights.cpu, weights.memory) == (5.0, 0.0)
    assert dict(weights.scalars) == {"nvidia.com/gpu": 2.0, "example.com/foo": 1.0}
    assert (parsed.normal_pod_enable, parsed.normal_pod_fading) == (False, 0.5)
    assert parsed.evict_max_hypernodes == 3


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ("{hypernode.binpack.resources.nvidia.com/gpu: 2}", "not in hypernode.binpack.resources"),
        ("{hypernode.binpack.cpu: -1}", "hypernode.binpack.cpu=-1"),
        ("{hypernode.binpack.normal-pod.fading: -0.5}", "hypernode.binpack.normal-pod.fading"),
        ("{hypernode.gradient.evict.max-hypernodes: 0}", "max-hypernodes=0"),
    ],
)
def test_malformed_hypernode_arguments_are_refused_naming_the_key(
    arguments: str, said: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        config(arguments)
    assert said in str(caught.value)


def gpu_racks() -> tuple[list[NodeInfo], dict[str, HyperNodeInfo]]:
    # Rack a: cpu-rich (2 x 8 cpu, 2 gpu); rack b: gpu-rich (2 x 2 cpu, 4 gpu).
    nodes = [node(f"a{i}", cpu=8, gpu=2) for i in range(2)]
    nodes += [node(f"b{i}", cpu=2, gpu=4) for i in range(2)]
    hypernodes = {
        rack: HyperNodeInfo(
            rack,
            1,
            tuple(MemberSelector("Node", exact_name=f"{rack}{i}") for i in range(2)),
        )
        for rack in ("a", "b")
    }
    return nodes, hypernodes


@pytest.mark.parametrize(
    ("arguments", "rack"),
    [
        pytest.param("{}", "b", id="cpu-weighs-alone"),
        pytest.param(
            "{hypernode.binpack.resources: nvidia.com/gpu, "
            "hypernode.binpack.resources.nvidia.com/gpu: 10}",
            "a",
            id="gpu-weighs-most",
        ),
    ],
)
def test_hypernode_binpack_weights_choose_the_rack_a_gang_fills_most(
    arguments: str, rack: str
) -> None:
    # The gang (2 cpu, 2 gpu) fills rack b's cpu to 1/2 and rack a's to 1/8; rack a's gpu
    # to 1/2 and rack b's to 1/4: weighing the gpu turns the choice.
    nodes, hypernodes = gpu_racks()
    job = gang("g", 2, cpu=1, gpu=1)
    job.network_topology = NetworkTopology("hard", 1)
    snap = snapshot(nodes, [job])
    snap.hypernodes = hypernodes
    result = schedule(snap, config(arguments))
    assert {b.node[0] for b in result.binds} == {rack}


def packing_snapshot() -> tuple[list[NodeInfo], list[JobInfo]]:
    # Racks x (both nodes half used) and y, 2 nodes of 2 cpu each; a lone pod of 1 cpu.
    nodes = [node(name, cpu=2, labels={RACK: name[0]}) for name in ("x0", "x1", "y0", "y1")]
    busy = running_gang("busy", 2, on=["x0", "x1"])
    return nodes, [busy, gang("lone", 1)]


def test_normal_pods_fill_the_fullest_rack_first() -> None:
    nodes, jobs = packing_snapshot()
    tiers = f"tiers: [{{tier: 1, nodeLabel: {RACK}}}]"
    packed = schedule(snapshot(nodes, jobs), config(f"{{weight: 10, {tiers}}}"))
    (bind,) = [b for b in packed.binds if b.name.startswith("lone")]
    assert bind.node[0] == "x"
    nodes, jobs = packing_snapshot()
    spread = schedule(
        snapshot(nodes, jobs),
        config(f"{{weight: 10, hypernode.binpack.normal-pod.enable: false, {tiers}}}"),
    )
    (bind,) = [b for b in spread.binds if b.name.startswith("lone")]
    assert bind.node[0] == "y"  # nodeorder's least-allocated spreads it


def test_fading_weighs_higher_tiers_less() -> None:
    plugin = NetworkTopologyPlugin(
        {
            "hypernode.binpack.normal-pod.fading": 0.0,
            "tiers": [{"tier": 1, "nodeLabel": RACK}, {"tier": 2, "nodeLabel": "zone"}],
        }
    )
    # a0 and b0 alone in their racks; zone z2 (b0 and busy b1) fuller than z1 (a0, a1)
    nodes = [
        node("a0", cpu=2, labels={RACK: "a", "zone": "z1"}),
        node("a1", cpu=2, labels={RACK: "a2", "zone": "z1"}),
        node("b0", cpu=2, labels={RACK: "b", "zone": "z2"}),
        node("b1", cpu=2, labels={RACK: "b2", "zone": "z2"}),
    ]
    snap = snapshot(nodes, [running_gang("busy", 1, on=["b1"]), gang("lone", 1)])
    cycle = open_cycle(snap, config("{}"), PLUGINS)
    plugin.on_session_open(cycle.session, cycle.state)
    lone = next(iter(snap.jobs["default/lone"].tasks.values()))
    # fading 0: only racks count; a and b are alike (zone z2 is fuller but weighs nothing)
    assert plugin.node_score(lone, snap.nodes["a0"]) == plugin.node_score(lone, snap.nodes["b0"])
    halves = NetworkTopologyPlugin(
        {
            "hypernode.binpack.normal-pod.fading": 0.5,
            "tiers": [{"tier": 1, "nodeLabel": RACK}, {"tier": 2, "nodeLabel": "zone"}],
        }
    )
    halves.on_session_open(cycle.session, cycle.state)
    assert halves.node_score(lone, snap.nodes["b0"]) > halves.node_score(lone, snap.nodes["a0"])


def test_evictions_for_a_topology_gang_try_at_most_max_hypernodes_domains() -> None:
    # Rack a has the most free room but only high-priority pods; rack b can be freed.
    def placed(max_domains: int) -> int:
        nodes = [node(name, cpu=2, labels={RACK: name[0]}) for name in ("a0", "a1", "b0", "b1")]
        guard = running_gang("guard", 1, priority=1000, on=["a0"])
        guard.min_member = 1
        low = running_gang("low", 4, on=["b0", "b1"], priority=0)
        low.min_member = 0
        high = gang("high", 4, priority=100)
        high.network_topology = NetworkTopology("hard", 1)
        tiers = f"tiers: [{{tier: 1, nodeLabel: {RACK}}}]"
        result = schedule(
            snapshot(nodes, [guard, low, high]),
            load_config(
                'actions: "enqueue, allocate, preempt"\n'
                "tiers:\n- plugins:\n  - name: priority\n  - name: gang\n"
                "  - name: predicates\n  - name: nodeorder\n"
                f"  - name: network-topology-aware\n    arguments: {{{tiers}, "
                f"hypernode.gradient.evict.max-hypernodes: {max_domains}}}\n"
            ),
        )
        return len(result.evictions)

    assert placed(1) == 0
    assert placed(8) == 4


def test_a_topology_gang_placed_in_a_hypernode_gets_volcanos_annotation() -> None:
    nodes, hypernodes = gpu_racks()
    job = gang("g", 2, cpu=1)
    job.network_topology = NetworkTopology("hard", 1)
    plain = gang("plain", 1, cpu=1)
    snap = snapshot(nodes, [job, plain])
    snap.hypernodes = hypernodes
    result = schedule(snap, config("{}"))
    annotated = {u.name: u.allocated_hypernode for u in result.podgroups}
    assert annotated["g"] == {b.node[0] for b in result.binds if b.job == "default/g"}.pop()
    assert annotated["plain"] == ""
