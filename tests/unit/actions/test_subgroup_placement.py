"""Gangs with spec.subGroupPolicy: placed one subgroup at a time, each whole or not at all,
each inside one domain of its own networkTopology; what waits is said by name."""

from __future__ import annotations

from collections import Counter

from scheduler.api.hypernode import HyperNodeInfo, MemberSelector
from scheduler.api.job import JobInfo, NetworkTopology
from scheduler.api.node import NodeInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.subgroups import read_policies
from scheduler.api.task import TaskStatus
from scheduler.engine import load_config, schedule
from scheduler.framework.decisions import SessionResult
from tests.unit.builders import REPLICA_NAME, gang, node, replica_gang, snapshot, task

TOPOLOGY_CONFIG = load_config(
    'actions: "enqueue, allocate, backfill"\n'
    "tiers:\n- plugins:\n  - name: priority\n  - name: gang\n  - name: conformance\n"
    "- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n"
    "  - name: nodeorder\n  - name: network-topology-aware\n"
)
PREEMPT_CONFIG = load_config(
    'actions: "enqueue, allocate, preempt, backfill"\n'
    "tiers:\n- plugins:\n  - name: priority\n  - name: gang\n  - name: conformance\n"
    "- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n  - name: nodeorder\n"
)


def one_cpu_nodes(count: int, prefix: str = "n") -> list[NodeInfo]:
    return [node(f"{prefix}{i}", cpu=1) for i in range(count)]


def racks(sizes: dict[str, int]) -> tuple[list[NodeInfo], dict[str, HyperNodeInfo]]:
    """Nodes of 1 cpu in tier-1 HyperNodes (racks) of the given sizes, under one tier-2
    spine."""
    nodes: list[NodeInfo] = []
    hypernodes: dict[str, HyperNodeInfo] = {}
    for rack, size in sizes.items():
        members = one_cpu_nodes(size, f"{rack}-")
        nodes += members
        selectors = tuple(MemberSelector("Node", exact_name=n.name) for n in members)
        hypernodes[rack] = HyperNodeInfo(rack, 1, selectors)
    spine = tuple(MemberSelector("HyperNode", exact_name=rack) for rack in sizes)
    hypernodes["spine"] = HyperNodeInfo("spine", 2, spine)
    return nodes, hypernodes


def with_hypernodes(snap: ClusterSnapshot, hypernodes: dict[str, HyperNodeInfo]) -> ClusterSnapshot:
    snap.hypernodes = hypernodes
    return snap


def replicas_bound(result: SessionResult) -> Counter[str]:
    """Per replica (its pods' names up to the host), how many of its pods are bound."""
    return Counter(b.name.rsplit("-h", 1)[0] for b in result.binds if "-r" in b.name)


def rack_of(name: str) -> str:
    return name.split("-")[0]


def test_room_for_two_and_a_half_replicas_runs_exactly_two_whole_ones() -> None:
    job = replica_gang("ray", 4, 4, min_replicas=2)
    result = schedule(snapshot(one_cpu_nodes(11), [job]))
    assert sorted(replicas_bound(result).values()) == [4, 4]
    assert "ray-head" in {b.name for b in result.binds}
    (update,) = result.podgroups
    scheduled = next(c for c in update.conditions if c.type == "Scheduled")
    assert "2 of 4 subgroups of 4 pods placed (minSubGroups 2)" in scheduled.message
    assert "waiting: workers[workers-r2], workers[workers-r3]" in scheduled.message


def test_each_replica_lands_whole_in_one_rack_of_its_own() -> None:
    # racks of 4, 4 and 2 nodes, and a node outside for the head: room for 2.5 replicas
    nodes, hypernodes = racks({"a": 4, "b": 4, "c": 2})
    job = replica_gang("ray", 4, 4, min_replicas=2, topology={"highestTierAllowed": 1})
    snap = with_hypernodes(snapshot([*nodes, node("head-node", cpu=1)], [job]), hypernodes)
    result = schedule(snap, TOPOLOGY_CONFIG)
    by_replica: dict[str, set[str]] = {}
    for bind in result.binds:
        if "-r" in bind.name:
            by_replica.setdefault(bind.name.rsplit("-h", 1)[0], set()).add(rack_of(bind.node))
    assert sorted(by_replica.values(), key=sorted) == [{"a"}, {"b"}]
    assert sorted(replicas_bound(result).values()) == [4, 4]


def test_a_replica_that_would_straddle_two_racks_waits_saying_why() -> None:
    # Two racks of 3: four pods of a replica fit the cluster but no single rack.
    nodes, hypernodes = racks({"a": 3, "b": 3})
    job = replica_gang("ray", 1, 4, min_replicas=1, head=False, topology={"highestTierAllowed": 1})
    result = schedule(with_hypernodes(snapshot(nodes, [job]), hypernodes), TOPOLOGY_CONFIG)
    assert result.binds == []
    (update,) = result.podgroups
    (waiting,) = [c for c in update.conditions if c.type == "Unschedulable"]
    assert "subgroup workers[workers-r0] waits: no tier-1 HyperNode has room for 4 pods" in (
        waiting.message
    )
    assert "0 of the 1 subgroups of 4 pods subGroupPolicy workers needs" in waiting.message
    messages = {m.name: m.message for m in result.unschedulable}
    assert (
        "subgroup workers[workers-r0] (4 pods, placed whole) waits" in messages["ray-workers-r0-h0"]
    )


def test_too_little_room_for_min_subgroups_places_nothing() -> None:
    job = replica_gang("ray", 4, 4, min_replicas=2)
    result = schedule(snapshot(one_cpu_nodes(6), [job]))
    assert result.binds == []
    (update,) = result.podgroups
    (waiting,) = [c for c in update.conditions if c.type == "Unschedulable"]
    assert waiting.reason == "NotEnoughResources"
    assert "1 of the 2 subgroups of 4 pods subGroupPolicy workers needs" in waiting.message


def test_a_running_gang_gets_a_further_replica_whole_and_never_half_of_one() -> None:
    def running() -> JobInfo:
        return replica_gang(
            "ray",
            4,
            4,
            min_replicas=2,
            head=False,
            phase=PodGroupPhase.RUNNING,
            running=(0, 1),
            on=["full"],
        )

    full = node("full", cpu=8)
    half = schedule(snapshot([full, *one_cpu_nodes(3)], [running()]))
    assert half.binds == []
    whole = schedule(snapshot([node("full", cpu=8), *one_cpu_nodes(4)], [running()]))
    assert list(replicas_bound(whole).values()) == [4]


def test_subgroups_still_needed_go_before_optional_ones() -> None:
    # "extra" is listed first and needs no subgroup; "needed" needs one of 3 pods. Room
    # for 3 pods: placing "extra" first would leave "needed" without room.
    job = JobInfo(namespace="default", name="pg", min_member=3, phase=PodGroupPhase.INQUEUE)
    job.subgroup_policies = read_policies(
        job.key,
        [
            {"name": "extra", "subGroupSize": 3, "labelSelector": {"matchLabels": {"g": "x"}}},
            {
                "name": "needed",
                "subGroupSize": 3,
                "minSubGroups": 1,
                "labelSelector": {"matchLabels": {"g": "n"}},
            },
        ],
    )
    for group in ("x", "n"):
        for i in range(3):
            job.add_task(task(f"{group}{i}", job=job.key, labels={"g": group}))
    result = schedule(snapshot(one_cpu_nodes(3), [job]))
    assert sorted(b.name for b in result.binds) == ["n0", "n1", "n2"]


def test_subgroups_stay_inside_the_gangs_own_domain() -> None:
    # Two zones (tier 2) of two racks; the gang must stay in one zone, each replica in one
    # rack. Zone y has more room in total, but only zone x has two racks of 2.
    nodes, hypernodes = racks({"xa": 2, "xb": 2, "ya": 2, "yb": 1, "yc": 1})
    hypernodes.pop("spine")
    hypernodes["x"] = HyperNodeInfo(
        "x", 2, tuple(MemberSelector("HyperNode", exact_name=r) for r in ("xa", "xb"))
    )
    hypernodes["y"] = HyperNodeInfo(
        "y", 2, tuple(MemberSelector("HyperNode", exact_name=r) for r in ("ya", "yb", "yc"))
    )
    job = replica_gang(
        "ray",
        3,
        2,
        min_replicas=2,
        head=False,
        topology={"highestTierAllowed": 1},
        gang_topology=NetworkTopology("hard", 2),
    )
    result = schedule(with_hypernodes(snapshot(nodes, [job]), hypernodes), TOPOLOGY_CONFIG)
    assert {rack_of(b.node) for b in result.binds} == {"xa", "xb"}
    assert sorted(replicas_bound(result).values()) == [2, 2]


def test_a_volcano_job_partition_policy_shape_places_whole_partitions() -> None:
    # A vcjob's partitionPolicy: a policy per task, volcano.sh/task-spec=<task>, grouped by
    # volcano.sh/partition-id.
    job = JobInfo(namespace="default", name="vcjob-pg", min_member=4, phase=PodGroupPhase.INQUEUE)
    job.subgroup_policies = read_policies(
        job.key,
        [
            {
                "name": "worker",
                "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "worker"}},
                "matchLabelKeys": ["volcano.sh/partition-id"],
                "subGroupSize": 2,
                "minSubGroups": 2,
            }
        ],
    )
    for partition in range(3):
        for i in range(2):
            labels = {"volcano.sh/task-spec": "worker", "volcano.sh/partition-id": str(partition)}
            job.add_task(task(f"w-{partition}-{i}", job=job.key, role="worker", labels=labels))
    result = schedule(snapshot(one_cpu_nodes(5), [job]))
    partitions = Counter(b.name.split("-")[1] for b in result.binds)
    assert sorted(partitions.values()) == [2, 2]


def test_preemption_never_breaks_a_whole_subgroup_below_its_size() -> None:
    # A low-priority gang of two whole replicas of 2 (minMember 1, so plain spares would
    # allow evicting 3 pods) fills 4 nodes; a high-priority pod needs one node. The only
    # way to free a node would break a replica: nothing is evicted.
    low = replica_gang(
        "low",
        2,
        2,
        min_replicas=0,
        head=False,
        phase=PodGroupPhase.RUNNING,
        running=(0, 1),
        on=["n0", "n1", "n2", "n3"],
    )
    low.min_member = 1
    high = gang("high", 1, priority=100)
    result = schedule(snapshot(one_cpu_nodes(4), [low, high]), PREEMPT_CONFIG)
    assert result.evictions == []
    # The same gang without subgroups gives a pod up.
    plain = gang(
        "plain",
        4,
        min_member=1,
        phase=PodGroupPhase.RUNNING,
        status=TaskStatus.RUNNING,
        on=["n0", "n1", "n2", "n3"],
    )
    high = gang("high", 1, priority=100)
    result = schedule(snapshot(one_cpu_nodes(4), [plain, high]), PREEMPT_CONFIG)
    assert len(result.evictions) == 1


def test_a_replica_with_a_member_beyond_its_size_may_give_that_member_up() -> None:
    low = replica_gang(
        "low",
        1,
        2,
        min_replicas=0,
        head=False,
        phase=PodGroupPhase.RUNNING,
        running=(0,),
        on=["n0", "n1"],
    )
    low.min_member = 1
    extra = task(
        "low-workers-r0-h2",
        job=low.key,
        labels={REPLICA_NAME: "workers-r0", "ray.io/group": "workers"},
    )
    low.add_task(extra)
    low.set_task_status(extra, TaskStatus.RUNNING)
    extra.node_name = "n2"
    high = gang("high", 1, priority=100)
    result = schedule(snapshot(one_cpu_nodes(3), [low, high]), PREEMPT_CONFIG)
    assert len(result.evictions) == 1


def test_config_without_the_plugin_places_subgroups_whole_anywhere() -> None:
    # Without network-topology-aware a subgroup's networkTopology is not honoured (and
    # said so), but each subgroup is still placed whole.
    job = replica_gang("ray", 3, 2, min_replicas=2, head=False, topology={"highestTierAllowed": 1})
    result = schedule(
        snapshot(one_cpu_nodes(5), [job]),
        load_config(
            'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'
            "  - name: predicates\n  - name: nodeorder\n"
        ),
    )
    assert sorted(replicas_bound(result).values()) == [2, 2]
    (update,) = result.podgroups
    honoured = next(c for c in update.conditions if c.type == "FieldsNotHonoured")
    assert "spec.subGroupPolicy[].networkTopology is not honoured yet" in honoured.message


def test_backfill_never_places_a_lone_member_of_a_subgroup() -> None:
    # An optional subgroup of 2 best-effort pods has only one pod: it cannot be whole, so
    # neither allocate nor backfill places it; the default group's best-effort pod goes.
    job = JobInfo(namespace="default", name="pg", min_member=1, phase=PodGroupPhase.INQUEUE)
    job.subgroup_policies = read_policies(
        job.key, [{"name": "pair", "subGroupSize": 2, "labelSelector": {"matchLabels": {"g": "p"}}}]
    )
    job.add_task(task("alone", cpu=0, job=job.key, labels={"g": "p"}))
    job.add_task(task("free", cpu=0, job=job.key))
    result = schedule(snapshot(one_cpu_nodes(2), [job]))
    assert [b.name for b in result.binds] == ["free"]


def test_a_subgroup_short_of_pods_is_not_tried_and_says_so() -> None:
    job = JobInfo(namespace="default", name="pg", min_member=1, phase=PodGroupPhase.INQUEUE)
    job.subgroup_policies = read_policies(
        job.key, [{"name": "pair", "subGroupSize": 2, "labelSelector": {"matchLabels": {"g": "p"}}}]
    )
    job.add_task(task("alone", job=job.key, labels={"g": "p"}))
    job.add_task(task("free", job=job.key))
    snap = snapshot(one_cpu_nodes(2), [job])
    result = schedule(snap, copy=False)
    assert [b.name for b in result.binds] == ["free"]
    waits = snap.jobs[job.key].subgroup_waits
    assert waits == {"pair": "it has 1 of its 2 pods; it waits for the rest"}
