"""Pod affinity, anti-affinity and topology spread end to end, gang-aware: members of one
gang placed in the same session count for each other."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    Cluster,
    Obj,
    bound,
    label_nodes,
    make_gang,
    make_pod,
    node_names,
    placement_verdict,
    wait_for,
)

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ANTI = "node(s) didn't match pod anti-affinity rules"


def label_zones(cluster: Cluster, zones: dict[str, str]) -> None:
    """Label each node (by name) with its zone."""
    label_nodes(cluster, ZONE, zones)


def add_node(cluster: Cluster, name: str, cpu: str) -> str:
    """Add a node; returns its name as the API server knows it (prefixed on real clusters)."""
    before = set(node_names(cluster))
    cluster.add_node(name, cpu)
    (added,) = set(node_names(cluster)) - before
    return added


def required(kind: str, key: str, **labels: str) -> Obj:
    """spec.affinity with one required podAffinity or podAntiAffinity term."""
    term = {"topologyKey": key, "labelSelector": {"matchLabels": labels}}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def gang_with(name: str, size: int, spec: Obj, cpu: str = "1") -> tuple[Obj, list[Obj]]:
    podgroup, pods = make_gang(name, size, cpu=cpu, labels={"gang": name})
    for pod in pods:
        pod["spec"].update(spec)
    return podgroup, pods


def placed_nodes(cluster: Cluster, namespace: str, names: list[str]) -> list[str]:
    placements = cluster.placements(namespace)
    return [node for name in names if (node := placements.get(name))]


def wait_all_bound(
    cluster: Cluster, namespace: str, names: list[str], timeout: float = 15
) -> list[str]:
    wait_for(
        lambda: len(bound(cluster.placements(namespace), names)) == len(names),
        timeout=timeout,
        message=lambda: f"all of {names} bound\n{cluster.describe(namespace)}",
    )
    return placed_nodes(cluster, namespace, names)


def zone_of(cluster: Cluster) -> dict[str, str]:
    return {
        node.metadata.name: (node.metadata.labels or {}).get(ZONE, "")
        for node in cluster.core.list_node().items
    }


@pytest.mark.nodes(3, "2")
def test_gang_with_anti_affinity_to_itself_lands_on_four_nodes(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    # A big node the resource scores alone would fill with the whole gang.
    add_node(cluster, "big", "32")
    start_scheduler()
    podgroup, pods = gang_with("db", 4, {"affinity": required("podAntiAffinity", HOST, gang="db")})
    names = [p["metadata"]["name"] for p in pods]
    cluster.submit(namespace, podgroup, pods)
    nodes = wait_all_bound(cluster, namespace, names)
    assert len(set(nodes)) == 4, nodes


@pytest.mark.nodes(3, "8")
def test_gang_with_anti_affinity_to_itself_on_three_nodes_waits_whole(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler()
    podgroup, pods = gang_with("db", 4, {"affinity": required("podAntiAffinity", HOST, gang="db")})
    names = [p["metadata"]["name"] for p in pods]
    cluster.submit(namespace, podgroup, pods)

    def unschedulable_message() -> str | None:
        found = placement_verdict(cluster.podgroup(namespace, "db"))
        return found.get("message") if found else None

    message = wait_for(
        unschedulable_message,
        timeout=15,
        message=lambda: f"Unschedulable condition on podgroup db\n{cluster.describe(namespace)}",
    )
    assert ANTI in message, message
    scheduler.wait_sessions(3)
    assert bound(cluster.placements(namespace), names) == [], "a member was placed alone"


@pytest.mark.nodes(4, "4")
def test_gang_with_zone_affinity_to_itself_lands_in_one_zone(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    names = node_names(cluster)
    label_zones(cluster, {names[0]: "a", names[1]: "a", names[2]: "b", names[3]: "b"})
    start_scheduler()
    # On four equal nodes least-allocated alone would put one member on each: both zones.
    podgroup, pods = gang_with("ring", 4, {"affinity": required("podAffinity", ZONE, gang="ring")})
    members = [p["metadata"]["name"] for p in pods]
    cluster.submit(namespace, podgroup, pods)
    nodes = wait_all_bound(cluster, namespace, members)
    zones = zone_of(cluster)
    assert len({zones[node] for node in nodes}) == 1, nodes


@pytest.mark.nodes(3, "4")
def test_gang_of_six_spread_max_skew_one_over_three_zones_lands_two_per_zone(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    names = node_names(cluster)
    big = add_node(cluster, "big", "32")
    # Zone a also has the big node, which the resource scores alone would fill.
    label_zones(cluster, {names[0]: "a", big: "a", names[1]: "b", names[2]: "c"})
    start_scheduler()
    constraint: dict[str, Any] = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"gang": "spread"}},
    }
    podgroup, pods = gang_with("spread", 6, {"topologySpreadConstraints": [constraint]})
    members = [p["metadata"]["name"] for p in pods]
    cluster.submit(namespace, podgroup, pods)
    nodes = wait_all_bound(cluster, namespace, members)
    zones = zone_of(cluster)
    assert Counter(zones[node] for node in nodes) == {"a": 2, "b": 2, "c": 2}, nodes


@pytest.mark.nodes(1, "2")
def test_an_existing_pods_anti_affinity_keeps_a_new_pod_off_its_node(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    big = add_node(cluster, "big", "32")
    start_scheduler()
    # The guard sits on the big node, where the resource scores would send the new pod.
    guard = make_pod("guard", cpu="100m")
    guard["spec"]["nodeSelector"] = {HOST: big}
    guard["spec"]["affinity"] = required("podAntiAffinity", HOST, app="web")
    cluster.create_pod(namespace, guard)
    (guard_node,) = wait_all_bound(cluster, namespace, ["guard"])
    assert guard_node == big
    cluster.create_pod(namespace, make_pod("web", cpu="1", labels={"app": "web"}))
    (web_node,) = wait_all_bound(cluster, namespace, ["web"])
    assert web_node != big


@pytest.mark.nodes(1, "2")
def test_a_namespace_selector_reads_the_namespaces_labels_from_the_api_server(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    big = add_node(cluster, "big", "32")
    cluster.core.patch_namespace(namespace, {"metadata": {"labels": {"team": "ml"}}})
    start_scheduler()
    # The guard's term names no namespaces, only a namespaceSelector: it keeps web pods
    # away only if muster knows this namespace carries team=ml.
    term = {
        "topologyKey": HOST,
        "labelSelector": {"matchLabels": {"app": "web"}},
        "namespaceSelector": {"matchLabels": {"team": "ml"}},
    }
    guard = make_pod("guard", cpu="100m")
    guard["spec"]["nodeSelector"] = {HOST: big}
    guard["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    }
    cluster.create_pod(namespace, guard)
    wait_all_bound(cluster, namespace, ["guard"])
    cluster.create_pod(namespace, make_pod("web", cpu="1", labels={"app": "web"}))
    (web_node,) = wait_all_bound(cluster, namespace, ["web"])
    assert web_node != big
