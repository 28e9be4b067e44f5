"""Multi-level gangs end to end: a PodGroup's spec.subGroupPolicy as KubeRay's change
writes it for a multi-host worker group, and as Volcano's job controller writes it for a
vcjob's partitionPolicy.

KubeRay (ray-project/kuberay#5249) writes one policy per worker group: name the group,
labelSelector ray.io/group=<group>, subGroupSize numOfHosts, minSubGroups minReplicas
(autoscaling), matchLabelKeys [ray.io/worker-group-replica-name] for a multi-host group;
minMember head + minReplicas x numOfHosts. A vcjob's partitionPolicy becomes a policy
named for the task, labelSelector volcano.sh/task-spec=<task>, matchLabelKeys
[volcano.sh/partition-id].
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    Cluster,
    Obj,
    bound,
    condition,
    make_pod,
    make_podgroup,
    node_names,
    wait_for,
)
from tests.e2e.test_topology import TOPOLOGY, HyperNodes, hypernodes

__all__ = ["hypernodes"]

GROUP = "ray.io/group"
REPLICA = "ray.io/worker-group-replica-name"
ALLOCATED_HYPERNODE = "volcano.sh/job-allocated-hypernode"


def ray_pod(name: str, group: str, replica: str | None, cpu: str) -> Obj:
    labels = {"ray.io/cluster": "tpu", GROUP: group, "ray.io/node-type": "worker"}
    if replica is not None:
        labels[REPLICA] = replica
    else:
        labels["ray.io/node-type"] = "head"
    return make_pod(
        name, group="ray-tpu-pg", role=group, cpu=cpu, scheduler_name="volcano", labels=labels
    )


def exact(names: list[str]) -> list[Obj]:
    return [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in names]


@pytest.mark.nodes(10, "1")
def test_a_multi_host_worker_group_runs_exactly_its_whole_replicas_each_in_one_rack(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler, hypernodes: HyperNodes
) -> None:
    names = node_names(cluster)
    racks = {"rack-a": names[:4], "rack-b": names[4:8], "rack-c": names[8:]}
    for rack, members in racks.items():
        hypernodes.create(rack, 1, exact(members))
    hypernodes.create(
        "spine",
        2,
        [{"type": "HyperNode", "selector": {"exactMatch": {"name": rack}}} for rack in racks],
    )

    # 4 replicas x 4 hosts, 2 needed, each replica in one tier-1 HyperNode; the cluster has
    # room for 2.5 replicas (rack-c: 2 nodes) and the head.
    podgroup = make_podgroup("ray-tpu-pg", 1 + 2 * 4, min_resources={"cpu": "8500m"})
    podgroup["spec"]["subGroupPolicy"] = [
        {
            "name": "tpu",
            "labelSelector": {"matchLabels": {GROUP: "tpu"}},
            "subGroupSize": 4,
            "minSubGroups": 2,
            "matchLabelKeys": [REPLICA],
            "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
        }
    ]
    cluster.create_podgroup(namespace, podgroup)
    pods = [ray_pod("tpu-head", "headgroup", None, "500m")]
    pods += [ray_pod(f"tpu-r{r}-h{h}", "tpu", f"tpu-r{r}", "1") for r in range(4) for h in range(4)]
    for pod in pods:
        cluster.create_pod(namespace, pod)
    # Started once every replica is there, so that its condition counts all four of them.
    start_scheduler(names=("volcano",), plugins=[{"name": "network-topology-aware"}])

    placed = wait_for(
        lambda: (found := cluster.placements(namespace)) and len(bound(found)) == 9 and found,
        timeout=20,
        message=lambda: f"head and 2 replicas bound\n{cluster.describe(namespace)}",
    )
    rack_of = {node: rack for rack, members in racks.items() for node in members}
    by_replica: dict[str, set[str]] = {}
    for pod, node in placed.items():
        if node and pod.startswith("tpu-r"):
            by_replica.setdefault(pod.rsplit("-h", 1)[0], set()).add(rack_of[node])
    assert sorted(len(hosts) for hosts in by_replica.values()) == [1, 1], by_replica
    assert len(by_replica) == 2 and placed["tpu-head"], placed

    def scheduled() -> Obj | None:
        found = condition(cluster.podgroup(namespace, "ray-tpu-pg"), "Scheduled")
        return found if found and "subGroupPolicy tpu" in found.get("message", "") else None

    message = wait_for(scheduled, timeout=10, message="the Scheduled condition names subgroups")[
        "message"
    ]
    assert "2 of 4 subgroups of 4 pods placed (minSubGroups 2)" in message, message
    waiting = sorted(set(f"tpu[tpu-r{r}]" for r in range(4)) - {f"tpu[{r}]" for r in by_replica})
    assert f"waiting: {', '.join(waiting)}" in message, message
    # The replicas left wait whole: no pod of theirs is bound.
    assert len(bound(cluster.placements(namespace))) == 9
    # Volcano's annotation names the HyperNode the gang runs in; the HyperNodes' node
    # counts are written as Volcano's controller writes them.
    wait_for(
        lambda: (
            cluster.podgroup(namespace, "ray-tpu-pg")["metadata"]
            .get("annotations", {})
            .get(ALLOCATED_HYPERNODE)
            == "spine"
        ),
        timeout=10,
        message=lambda: f"annotation\n{cluster.podgroup(namespace, 'ray-tpu-pg')['metadata']}",
    )

    def node_counts() -> dict[str, int | None]:
        return {
            rack: cluster.custom.get_cluster_custom_object(*TOPOLOGY, rack)
            .get("status", {})
            .get("nodeCount")
            for rack in (*racks, "spine")
        }

    wait_for(
        lambda: node_counts() == {"rack-a": 4, "rack-b": 4, "rack-c": 2, "spine": 3},
        timeout=10,
        message=lambda: f"status.nodeCount {node_counts()}",
    )


@pytest.mark.nodes(5, "1")
def test_a_vcjob_partition_policy_places_whole_partitions(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    start_scheduler()
    podgroup = make_podgroup("mpi-job", 4)
    podgroup["spec"]["subGroupPolicy"] = [
        {
            "name": "worker",
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "worker"}},
            "matchLabelKeys": ["volcano.sh/partition-id"],
            "subGroupSize": 2,
            "minSubGroups": 2,
        }
    ]
    cluster.create_podgroup(namespace, podgroup)
    for partition in range(3):
        for index in range(2):
            labels = {"volcano.sh/task-spec": "worker", "volcano.sh/partition-id": str(partition)}
            pod = make_pod(f"worker-{partition}-{index}", group="mpi-job", labels=labels)
            cluster.create_pod(namespace, pod)
    placed = wait_for(
        lambda: (found := cluster.placements(namespace)) and len(bound(found)) == 4 and found,
        timeout=15,
        message=lambda: f"two partitions bound\n{cluster.describe(namespace)}",
    )
    partitions = {name.split("-")[1] for name in bound(placed)}
    assert len(partitions) == 2, placed
    for partition in partitions:
        assert {f"worker-{partition}-0", f"worker-{partition}-1"} <= set(bound(placed))
