"""Topology gangs: placed whole inside one domain, tightest fit first, and explained."""

from __future__ import annotations

from scheduler.api.hypernode import HyperNodeInfo, MemberSelector
from scheduler.api.job import JobInfo, NetworkTopology
from scheduler.api.node import NodeInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskStatus
from scheduler.engine import load_config, schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.decisions import SessionResult
from tests.unit.builders import gang, node, running_gang, snapshot

RACK = "example.com/rack"
ZONE = "topology.kubernetes.io/zone"


def config(
    actions: str = "enqueue, allocate, backfill", *, plugin: bool = True, normal_pods: bool = True
) -> SchedulerConfig:
    tiers = f"[{{tier: 1, nodeLabel: {RACK}}}, {{tier: 2, nodeLabel: {ZONE}}}]"
    packing = "" if normal_pods else ", hypernode.binpack.normal-pod.enable: false"
    topology = (
        f"  - name: network-topology-aware\n    arguments: {{tiers: {tiers}{packing}}}\n"
        if plugin
        else ""
    )
    return load_config(
        f'actions: "{actions}"\n'
        "tiers:\n"
        "- plugins:\n  - name: priority\n  - name: gang\n  - name: conformance\n"
        "- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n"
        f"  - name: nodeorder\n{topology}"
    )


def rack(name: str, count: int, cpu: float = 2, zone: str = "z1") -> list[NodeInfo]:
    return [
        node(
            f"{name}{i}",
            cpu=cpu,
            labels={"kubernetes.io/hostname": f"{name}{i}", RACK: name, ZONE: zone},
        )
        for i in range(count)
    ]


def topology_gang(
    name: str, size: int, mode: str = "hard", tier: int | None = 1, **kw: object
) -> JobInfo:
    job = gang(name, size, **kw)  # type: ignore[arg-type]
    job.network_topology = NetworkTopology("hard" if mode == "hard" else "soft", tier)
    return job


def racks_of(result: SessionResult, snap: ClusterSnapshot) -> set[str]:
    return {snap.nodes[b.node].labels[RACK] for b in result.binds}


def test_hard_gang_lands_in_one_rack_choosing_the_tightest_fit() -> None:
    # Rack a has room for 8 pods, rack b for 4: the 4-pod gang takes rack b whole.
    snap = snapshot([*rack("a", 4), *rack("b", 2)], [topology_gang("g", 4)])
    result = schedule(snap, config())
    assert len(result.binds) == 4
    assert racks_of(result, snap) == {"b"}


def test_without_the_plugin_a_gang_spreads_over_racks_and_with_it_keeps_to_one() -> None:
    # Least-allocated scoring spreads 4 pods over the 6 nodes' first 4 (a0, a1, b0, b1).
    snap = snapshot([*rack("a", 2), *rack("b", 4)], [topology_gang("g", 4)])
    assert racks_of(schedule(snap, config(plugin=False)), snap) == {"a", "b"}
    assert racks_of(schedule(snap, config()), snap) == {"a"}


def test_hard_gang_too_big_for_any_rack_waits_with_the_message_and_places_nothing() -> None:
    snap = snapshot([*rack("a", 4), *rack("b", 2)], [topology_gang("g", 16)])
    result = schedule(snap, config())
    assert result.binds == []
    (update,) = result.podgroups
    (condition,) = [c for c in update.conditions if c.type == "Unschedulable"]
    assert condition.reason == "NoTopologyDomainFits"
    assert condition.message == (
        f"16/16 tasks in gang unschedulable: no tier-1 domain ({RACK}) has room for 16 pods "
        f"(largest free: {RACK}=a, 8 pods' room)"
    )


def test_hard_gang_allowed_tier_two_takes_one_zone() -> None:
    # No rack holds 7 pods (4, 4, 6); zone z1 does (8), zone z2 does not (6).
    nodes = [*rack("a", 2), *rack("b", 2), *rack("c", 3, zone="z2")]
    snap = snapshot(nodes, [topology_gang("g", 7, tier=2)])
    result = schedule(snap, config())
    assert len(result.binds) == 7
    assert {snap.nodes[b.node].labels[ZONE] for b in result.binds} == {"z1"}


def test_soft_gang_spills_to_the_zone_then_anywhere() -> None:
    nodes = [*rack("a", 2), *rack("b", 2), *rack("c", 2, zone="z2")]
    # 6 pods: no rack holds them (4 each), zone z1 does (8).
    snap = snapshot(nodes, [topology_gang("zone", 6, mode="soft")])
    result = schedule(snap, config())
    assert len(result.binds) == 6
    assert racks_of(result, snap) == {"a", "b"}
    # 10 pods: no zone holds them (8 and 4): placed anywhere, as without topology.
    snap = snapshot(nodes, [topology_gang("any", 10, mode="soft")])
    result = schedule(snap, config())
    assert len(result.binds) == 10
    assert racks_of(result, snap) == {"a", "b", "c"}


def test_a_later_member_joins_the_rack_of_its_placed_members() -> None:
    # Two members run on rack b (one pod's room left there); rack a is empty and would
    # win least-allocated scoring.
    job = gang(
        "ray",
        3,
        min_member=2,
        phase=PodGroupPhase.RUNNING,
        statuses=[TaskStatus.RUNNING] * 2,
        on=["b0"],
    )
    job.network_topology = NetworkTopology("hard", 1)
    snap = snapshot([*rack("a", 2), *rack("b", 2)], [job])
    result = schedule(snap, config())
    assert [(b.name, snap.nodes[b.node].labels[RACK]) for b in result.binds] == [("ray-2", "b")]


def test_a_later_hard_member_waits_when_its_rack_is_full_and_a_soft_one_goes_elsewhere() -> None:
    def late(mode: str) -> tuple[SessionResult, ClusterSnapshot]:
        job = gang(
            "ray",
            3,
            min_member=2,
            phase=PodGroupPhase.RUNNING,
            statuses=[TaskStatus.RUNNING] * 2,
            on=["b0"],
        )
        job.network_topology = NetworkTopology("hard" if mode == "hard" else "soft", 1)
        snap = snapshot([*rack("a", 2), *rack("b", 1)], [job])
        return schedule(snap, config()), snap

    result, _ = late("hard")
    assert result.binds == []
    # The gang runs: its waiting member's PodScheduled=False message says why.
    (pod,) = result.unschedulable
    assert pod.name == "ray-2"
    assert f"holding the gang's placed pods ({RACK}=b) has room for its 1 other pods" in pod.message
    result, snap = late("soft")
    assert racks_of(result, snap) == {"a"}


def test_a_failed_domain_attempt_is_discarded_without_a_trace() -> None:
    # Rack a's free cpu adds up to the gang's 6 but no node holds two 2-cpu pods: the
    # attempt there fails and is discarded; rack b (tied, tried second) holds the gang.
    nodes = [*rack("a", 2, cpu=3), *rack("b", 3, cpu=2)]
    snap = snapshot(nodes, [topology_gang("g", 3, cpu=2)])
    result = schedule(snap, config(), copy=False)
    assert len(result.binds) == 3
    assert racks_of(result, snap) == {"b"}
    for name in ("a0", "a1"):
        assert snap.nodes[name].pod_count == 0
        assert snap.nodes[name].idle == snap.nodes[name].allocatable


def test_a_gang_that_fits_no_domain_leaves_every_node_as_it_was() -> None:
    nodes = [*rack("a", 2, cpu=3), *rack("b", 2, cpu=3)]
    snap = snapshot(nodes, [topology_gang("g", 3, cpu=2)])
    result = schedule(snap, config(), copy=False)
    assert result.binds == []
    assert all(n.pod_count == 0 and n.idle == n.allocatable for n in snap.nodes.values())
    assert all(t.status is TaskStatus.PENDING for t in snap.jobs["default/g"].tasks.values())


def test_hypernodes_are_the_domains_when_the_cluster_has_them() -> None:
    nodes = [*rack("a", 4), *rack("b", 2)]
    snap = snapshot(nodes, [topology_gang("g", 4)])
    # HyperNodes group the nodes differently from the rack labels: a0, a1 and b0, b1.
    snap.hypernodes = {
        "left": HyperNodeInfo("left", 1, (MemberSelector("Node", pattern="^a[01]$"),)),
        "right": HyperNodeInfo("right", 1, (MemberSelector("Node", pattern="^(a[23]|b.)$"),)),
    }
    result = schedule(snap, config())
    assert {b.node for b in result.binds} <= {"a0", "a1"}
    assert len(result.binds) == 4


def test_preempt_chooses_victims_inside_one_rack() -> None:
    # Every node is full of one-pod jobs. Cheapest victims overall are on a0 (priority 1)
    # and then rack b (priority 2); rack a's a1 holds priority 5. A hard gang of 4 takes
    # its room in one rack; without the plugin it would take a0 and rack b.
    low = [
        *(running_gang(f"a0-{i}", 1, priority=1, on=["a0"]) for i in range(2)),
        *(running_gang(f"a1-{i}", 1, priority=5, on=["a1"]) for i in range(2)),
        *(
            running_gang(f"b{n}-{i}", 1, priority=2, on=[f"b{n}"])
            for n in range(2)
            for i in range(2)
        ),
    ]
    actions = "enqueue, allocate, preempt, backfill"

    def evicted_racks(plugin: bool) -> set[str]:
        high = topology_gang("high", 4, priority=100)
        snap = snapshot([*rack("a", 2), *rack("b", 2)], [*low, high])
        result = schedule(snap, config(actions, plugin=plugin))
        assert len(result.evictions) == 4
        return {snap.nodes[e.node].labels[RACK] for e in result.evictions}

    assert len(evicted_racks(plugin=True)) == 1
    assert evicted_racks(plugin=False) == {"a", "b"}


def test_without_normal_pod_packing_gangs_without_network_topology_are_placed_as_before() -> None:
    nodes = [*rack("a", 4), *rack("b", 2)]
    plain = schedule(snapshot(nodes, [gang("g", 4)]), config(plugin=False))
    with_plugin = schedule(snapshot(nodes, [gang("g", 4)]), config(normal_pods=False))
    assert sorted(b.node for b in plain.binds) == sorted(b.node for b in with_plugin.binds)
