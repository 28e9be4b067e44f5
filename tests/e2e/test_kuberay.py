"""KubeRay's objects, as its --batch-scheduler=volcano integration writes them, on muster."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import Cluster, Obj, bound, make_pod, make_podgroup, wait_for

PODGROUP = "ray-demo-pg"


def ray_pod(name: str, role: str | None, cpu: str) -> Obj:
    pod = make_pod(name, group=PODGROUP, role=role, cpu=cpu, scheduler_name="volcano")
    pod["metadata"]["labels"] = {"ray.io/cluster": "ray-demo", "ray.io/node-type": role or "job"}
    return pod


def phase(cluster: Cluster, namespace: str) -> str | None:
    return cluster.podgroup(namespace, PODGROUP).get("status", {}).get("phase")


@pytest.mark.nodes(2, "4")
def test_kuberay_cluster_gang_then_submitter_alone_then_scale_up_in_place(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    start_scheduler(names=("volcano",))
    # minMember = head + workers; minResources = every request, the submitter's included
    cluster.create_podgroup(
        namespace,
        make_podgroup(PODGROUP, 3, min_resources={"cpu": "3500m", "memory": "512Mi"}),
    )
    head = ray_pod("ray-demo-head", "headgroup", "1")
    workers = [ray_pod(f"ray-demo-worker-{i}", "worker-group", "1") for i in range(2)]
    for pod in [head, *workers]:
        cluster.create_pod(namespace, pod)
    wait_for(
        lambda: phase(cluster, namespace) == "Running",
        timeout=10,
        message=lambda: f"{PODGROUP} Running\n{cluster.describe(namespace)}",
    )
    # Running counts the members placed in the session; their binds may land just after it
    gang = wait_for(
        lambda: (found := cluster.placements(namespace)) and len(bound(found)) == 3 and found,
        timeout=10,
        message=lambda: f"the gang's 3 pods bound\n{cluster.describe(namespace)}",
    )

    # the RayJob submitter joins after the gang runs: a member beyond minMember, placed alone
    cluster.create_pod(namespace, ray_pod("ray-demo-submitter", None, "500m"))
    wait_for(
        lambda: cluster.placements(namespace).get("ray-demo-submitter"),
        timeout=10,
        message=lambda: f"the submitter placed\n{cluster.describe(namespace)}",
    )

    # scaling up: KubeRay raises minMember and minResources in place, then adds workers
    cluster.patch_podgroup(
        namespace,
        PODGROUP,
        {"spec": {"minMember": 5, "minResources": {"cpu": "5500m", "memory": "768Mi"}}},
    )
    for i in (2, 3):
        cluster.create_pod(namespace, ray_pod(f"ray-demo-worker-{i}", "worker-group", "1"))
    wait_for(
        lambda: len(bound(cluster.placements(namespace))) == 6,
        timeout=10,
        message=lambda: f"the new workers placed\n{cluster.describe(namespace)}",
    )
    after = cluster.placements(namespace)
    assert {n: after[n] for n in gang} == gang, "running members moved"
    pg = cluster.podgroup(namespace, PODGROUP)
    assert pg["spec"]["minMember"] == 5
    if cluster.sim is not None:  # only sim's kubelet runs pods on simulated nodes
        wait_for(
            lambda: cluster.podgroup(namespace, PODGROUP).get("status", {}).get("running") == 6,
            timeout=10,
            message=lambda: f"status.running 6\n{cluster.describe(namespace)}",
        )
    assert phase(cluster, namespace) == "Running"
