"""Pods with pod-level resources (spec.resources, PodLevelResources) end to end: muster places
them by their pod-level request, as kube-scheduler does, alone and as a gang, and never by
their containers' smaller one."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    Cluster,
    Obj,
    bound,
    condition,
    make_gang,
    make_pod,
    node_names,
    placement_verdict,
    wait_for,
)

# Containers that ask a tenth of a cpu, and a pod level that asks a whole 4-cpu node.
LITTLE = "100m"
WHOLE_NODE = {"requests": {"cpu": "4"}}


def asking_a_whole_node(pod: Obj) -> Obj:
    pod["spec"]["resources"] = WHOLE_NODE
    return pod


def served(cluster: Cluster, namespace: str, name: str) -> None:
    """Skip when the API server drops spec.resources (PodLevelResources off or too old)."""
    pod = next(p for p in cluster.pods(namespace) if p["metadata"]["name"] == name)
    if "resources" not in pod["spec"]:
        pytest.skip("this API server does not serve spec.resources (PodLevelResources)")


def told(cluster: Cluster, namespace: str, name: str, words: str) -> Obj | None:
    """The pod's PodScheduled=False condition once its message says `words`."""
    pod = next(p for p in cluster.pods(namespace) if p["metadata"]["name"] == name)
    found = condition(pod, "PodScheduled")
    if found and found.get("status") == "False" and words in found.get("message", ""):
        return found
    return None


@pytest.mark.nodes(2, "4")
def test_a_pod_asking_a_whole_node_at_pod_level_goes_alone_to_the_empty_node_or_waits(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler(period=0.5)
    used, empty = node_names(cluster)
    tenant = make_pod("tenant", cpu="1")
    tenant["spec"]["nodeName"] = used  # the partly used node
    cluster.create_pod(namespace, tenant)
    cluster.create_pod(namespace, asking_a_whole_node(make_pod("big-0", cpu=LITTLE)))
    served(cluster, namespace, "big-0")

    wait_for(
        lambda: cluster.placements(namespace).get("big-0"),
        timeout=10,
        message=lambda: f"big-0 bound\n{cluster.describe(namespace)}",
    )
    assert cluster.placements(namespace)["big-0"] == empty

    # By its containers (100m) the next one would fit beside the tenant; by its pod level
    # no node has room for it.
    cluster.create_pod(namespace, asking_a_whole_node(make_pod("big-1", cpu=LITTLE)))
    found = wait_for(
        lambda: told(cluster, namespace, "big-1", "Insufficient cpu"),
        timeout=10,
        message=lambda: f"big-1 told Insufficient cpu\n{cluster.describe(namespace)}",
    )
    assert found["reason"] == "Unschedulable"
    assert "0/2 nodes are available: 2 Insufficient cpu." in found["message"], found
    scheduler.wait_sessions(scheduler.sessions() + 2)
    assert cluster.placements(namespace)["big-1"] is None


@pytest.mark.nodes(2, "4")
def test_a_gang_of_pods_asking_whole_nodes_waits_for_a_node_each_then_runs(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler(period=0.5)
    # 3 x 100m would share one node; 3 x a whole node need three
    podgroup, pods = make_gang("wide", 3, cpu=LITTLE)
    names = [asking_a_whole_node(p)["metadata"]["name"] for p in pods]
    cluster.submit(namespace, podgroup, pods)
    served(cluster, namespace, names[0])

    verdict = wait_for(
        lambda: placement_verdict(cluster.podgroup(namespace, "wide")),
        timeout=10,
        message=lambda: f"Unschedulable condition on podgroup wide\n{cluster.describe(namespace)}",
    )
    assert "Insufficient cpu" in verdict["message"], verdict
    scheduler.wait_sessions(scheduler.sessions() + 2)
    assert bound(cluster.placements(namespace)) == [], "a member was placed before the gang fit"

    cluster.add_node("n2", "4")
    wait_for(
        lambda: len(bound(cluster.placements(namespace), names)) == 3,
        timeout=10,
        message=lambda: f"all 3 members bound\n{cluster.describe(namespace)}",
    )
    placements = cluster.placements(namespace)
    assert len({placements[name] for name in names}) == 3, placements
