"""Topology-aware gangs end to end: a PodGroup's spec.networkTopology over HyperNodes or
node-label tiers (the network-topology-aware plugin).

The KubeRay test makes KubeRay's calls with --batch-scheduler=volcano for a RayCluster
labelled volcano.sh/network-topology-mode and ...-highest-tier-allowed (its volcano plugin,
ray-operator/controllers/ray/batchscheduler/volcano): the PodGroup `ray-<cluster>-pg` first,
with minMember head + workers, minResources and spec.networkTopology {mode,
highestTierAllowed}; then the pods, with schedulerName volcano and the annotations
scheduling.k8s.io/group-name and volcano.sh/task-spec.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes.client import ApiException

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    Cluster,
    Obj,
    bound,
    condition,
    label_nodes,
    make_gang,
    make_pod,
    make_podgroup,
    node_names,
    placement_verdict,
    wait_for,
)

RACK = "example.com/rack"
ZONE = "topology.kubernetes.io/zone"
TOPOLOGY = ("topology.volcano.sh", "v1alpha1", "hypernodes")
LABEL_TIERS = {
    "name": "network-topology-aware",
    "arguments": {"tiers": [{"tier": 1, "nodeLabel": RACK}, {"tier": 2, "nodeLabel": ZONE}]},
}
HYPERNODES = {"name": "network-topology-aware"}


class HyperNodes:
    """HyperNodes a test creates (cluster-scoped: deleted after the test)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.created: list[str] = []

    def create(self, name: str, tier: int, members: list[Obj]) -> None:
        body = {
            "apiVersion": f"{TOPOLOGY[0]}/{TOPOLOGY[1]}",
            "kind": "HyperNode",
            "metadata": {"name": name},
            "spec": {"tier": tier, "members": members},
        }
        self.cluster.custom.create_cluster_custom_object(*TOPOLOGY, body)
        self.created.append(name)

    def cleanup(self) -> None:
        for name in self.created:
            try:
                self.cluster.custom.delete_cluster_custom_object(*TOPOLOGY, name)
            except ApiException as error:
                if error.status != 404:
                    raise


@pytest.fixture
def hypernodes(cluster: Cluster) -> Iterator[HyperNodes]:
    made = HyperNodes(cluster)
    yield made
    made.cleanup()


def nodes_of(cluster: Cluster, namespace: str, names: list[str], timeout: float = 15) -> set[str]:
    """Wait until every pod named is bound; their nodes."""
    wait_for(
        lambda: len(bound(cluster.placements(namespace), names)) == len(names),
        timeout=timeout,
        message=lambda: f"all of {names} bound\n{cluster.describe(namespace)}",
    )
    placements = cluster.placements(namespace)
    return {node for name in names if (node := placements.get(name))}


def topology_gang(name: str, size: int, mode: str, tier: int) -> tuple[Obj, list[Obj]]:
    podgroup, pods = make_gang(name, size)
    podgroup["spec"]["networkTopology"] = {"mode": mode, "highestTierAllowed": tier}
    return podgroup, pods


@pytest.mark.nodes(5, "3")
def test_kuberay_cluster_with_topology_labels_lands_in_one_rack(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler, hypernodes: HyperNodes
) -> None:
    names = node_names(cluster)
    # rack-a (6 cpus) holds the 4-pod gang with 2 to spare, rack-b (9 cpus) with 5: tightest
    # fit is rack-a, while least-allocated alone would spread the gang over both racks.
    # rack-c, one node of 1 cpu, is the tightest fit for a lone pod of 1 cpu.
    label_nodes(cluster, RACK, {names[2]: "b", names[3]: "b", names[4]: "b"})
    cluster.add_node("small", "1")
    (small,) = set(node_names(cluster)) - set(names)
    hypernodes.create("rack-c", 1, [{"type": "Node", "selector": {"exactMatch": {"name": small}}}])
    hypernodes.create(
        "rack-a", 1, [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in names[:2]]
    )
    hypernodes.create(
        "rack-b", 1, [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {RACK: "b"}}}}]
    )
    hypernodes.create(
        "spine",
        2,
        [
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "rack-a"}}},
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "rack-b"}}},
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "rack-c"}}},
        ],
    )
    start_scheduler(names=("volcano",), plugins=[HYPERNODES])

    # KubeRay's PodGroup for RayCluster "llm", labelled mode=hard, highest-tier-allowed=1
    podgroup = make_podgroup("ray-llm-pg", 4, min_resources={"cpu": "4", "memory": "512Mi"})
    podgroup["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    cluster.create_podgroup(namespace, podgroup)
    pods = [make_pod("llm-head", group="ray-llm-pg", role="headgroup", scheduler_name="volcano")]
    pods += [
        make_pod(f"llm-worker-{i}", group="ray-llm-pg", role="workers", scheduler_name="volcano")
        for i in range(3)
    ]
    for pod in pods:
        pod["metadata"]["labels"] = {"ray.io/cluster": "llm"}
        cluster.create_pod(namespace, pod)

    placed = nodes_of(cluster, namespace, [p["metadata"]["name"] for p in pods])
    assert placed == set(names[:2]), placed
    wait_for(
        lambda: (
            cluster.podgroup(namespace, "ray-llm-pg").get("status", {}).get("phase")
            in ("Running", "Inqueue")
        ),
        timeout=10,
        message="ray-llm-pg admitted",
    )
    honoured = condition(cluster.podgroup(namespace, "ray-llm-pg"), "FieldsNotHonoured")
    assert honoured is None or "networkTopology" not in honoured.get("message", ""), honoured

    # A RayJob's submitter joins the running group later (a member beyond minMember): it
    # goes to the gang's rack, not to rack-c, the tightest fit for a pod of its own.
    submitter = make_pod("llm-submitter", group="ray-llm-pg", scheduler_name="volcano")
    cluster.create_pod(namespace, submitter)
    (node,) = nodes_of(cluster, namespace, ["llm-submitter"])
    assert node in names[:2], node


@pytest.mark.nodes(4, "2")
def test_hard_gang_too_big_for_any_rack_waits_whole_saying_why(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    names = node_names(cluster)
    label_nodes(cluster, RACK, {names[0]: "a", names[1]: "a", names[2]: "b", names[3]: "b"})
    label_nodes(cluster, ZONE, dict.fromkeys(names, "z"))
    scheduler = start_scheduler(plugins=[LABEL_TIERS])
    # 5 pods of 1 cpu: each rack has 4 cpus, the zone 8; hard mode allows tier 1 only
    podgroup, pods = topology_gang("allreduce", 5, "hard", 1)
    cluster.submit(namespace, podgroup, pods)

    def waiting_message() -> str | None:
        found = placement_verdict(cluster.podgroup(namespace, "allreduce"))
        return found.get("message") if found else None

    message = wait_for(
        waiting_message,
        timeout=15,
        message=lambda: f"Unschedulable on allreduce\n{cluster.describe(namespace)}",
    )
    assert "no tier-1" in message and "room for 5 pods" in message, message
    assert "largest free" in message and f"{RACK}=" in message, message
    scheduler.wait_sessions(3)
    assert bound(cluster.placements(namespace)) == [], "a member crossed the rack"


@pytest.mark.nodes(6, "2")
def test_soft_gang_too_big_for_a_rack_spills_into_one_zone(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    names = node_names(cluster)
    racks = {names[0]: "a", names[1]: "a", names[2]: "b", names[3]: "b"}
    racks.update({names[4]: "c", names[5]: "c"})
    label_nodes(cluster, RACK, racks)
    zones = {n: ("x" if racks[n] in ("a", "b") else "y") for n in names}
    label_nodes(cluster, ZONE, zones)
    start_scheduler(plugins=[LABEL_TIERS])
    # 5 pods: no 4-cpu rack holds them; zone x (8 cpus) does, zone y (4) does not
    podgroup, pods = topology_gang("ring", 5, "soft", 1)
    cluster.submit(namespace, podgroup, pods)
    placed = nodes_of(cluster, namespace, [p["metadata"]["name"] for p in pods])
    assert {zones[node] for node in placed} == {"x"}, placed
