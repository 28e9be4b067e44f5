"""A scheduler killed with SIGKILL mid-binding: its successor finishes, binding nothing twice;
and a gang it left part-bound, whose bound members finished before the successor came, is
completed, not left short for good."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    BindingLog,
    Cluster,
    bound,
    make_gang,
    make_pod,
    node_names,
    scheduled_events,
    wait_for,
    wait_for_phase,
)

GANGS = 6
GANG_SIZE = 50
PODS = GANGS * GANG_SIZE


@pytest.mark.timeout(120)
@pytest.mark.nodes(4, "8", "64Gi")
def test_scheduler_killed_mid_binding_is_replaced_without_double_binds(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    if cluster.sim is not None:
        # slow binds down so that the kill lands while a gang is half bound
        cluster.sim.set_faults(
            {"latency": [{"ms": 200, "verbs": ["create"], "resources": ["pods/binding"]}]}
        )
    for g in range(GANGS):
        podgroup, pods = make_gang(f"gang-{g}", GANG_SIZE, cpu="100m", memory="64Mi")
        cluster.submit(namespace, podgroup, pods)

    with BindingLog(cluster, namespace) as log:
        # Binds trickle (the client's own rate limit), so the kill lands mid-binding on any
        # API server: a real one, where no latency can be injected, took all 300 binds in
        # less time than one look at the pods.
        first = start_scheduler(extra=("--kube-api-qps", "40", "--kube-api-burst", "10"))
        wait_for(
            lambda: bound(cluster.placements(namespace)),
            timeout=30,
            interval=0.02,
            message="the first scheduler's first bind",
        )
        first.process.kill()
        before_restart = len(bound(cluster.placements(namespace)))
        if before_restart >= PODS:
            pytest.fail("every pod was bound before the kill: raise the bind latency")

        second = start_scheduler()
        wait_for(
            lambda: len(bound(cluster.placements(namespace))) == PODS,
            timeout=60,
            interval=0.2,
            message=lambda: (
                f"all {PODS} pods bound after the restart; "
                f"{len(bound(cluster.placements(namespace)))} are"
            ),
        )
        assert log.double_binds() == {}, "pods seen on more than one node"

    placements = cluster.placements(namespace)
    for g in range(GANGS):
        members = [n for n in placements if n.startswith(f"gang-{g}-")]
        assert len(bound(placements, members)) >= GANG_SIZE, f"gang-{g} below minMember"
    # the successor bound only what was left; a bind it repeated would count here
    assert second.binds() <= PODS - before_restart
    repeated = {pod: n for pod, n in scheduled_events(cluster, namespace).items() if n > 1}
    assert repeated == {}, f"pods reported Scheduled more than once: {repeated}"
    wait_for(
        lambda: all(
            cluster.podgroup(namespace, f"gang-{g}").get("status", {}).get("phase") == "Running"
            for g in range(GANGS)
        ),
        timeout=15,
        message=lambda: f"every gang Running\n{cluster.describe(namespace)}",
    )


@pytest.mark.timeout(60)
@pytest.mark.nodes(1, "8")
def test_gang_left_part_bound_whose_bound_members_finished_is_completed(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    # What a leader killed between two binds leaves when its bound members then run to
    # completion before the next leader comes: 5 of 8 members bound and Succeeded, the
    # PodGroup never written (Pending), minResources asking for all 8. Meanwhile another
    # tenant took half the node. The 3 left need 3 cpus of the 4 free: the finished five
    # need no room again, so the gang is admitted and completed.
    (node,) = node_names(cluster)
    podgroup, pods = make_gang("cut", 8, cpu="1")
    podgroup["spec"]["minResources"] = {"cpu": "8"}
    cluster.create_podgroup(namespace, podgroup)
    done = [p["metadata"]["name"] for p in pods[:5]]
    for pod in pods[:5]:
        pod["spec"]["nodeName"] = node  # bound by the dead leader
        if cluster.sim is not None:
            pod["metadata"]["annotations"]["sim.muster.dev/duration"] = "0.2s"
    for pod in pods:
        cluster.create_pod(namespace, pod)
    if cluster.sim is None:
        for name in done:  # the kubelet's part: they ran and exited 0
            cluster.core.patch_namespaced_pod_status(
                name, namespace, {"status": {"phase": "Succeeded"}}
            )

    def phases() -> dict[str, str]:
        return {
            p["metadata"]["name"]: p["status"].get("phase", "") for p in cluster.pods(namespace)
        }

    wait_for(
        lambda: all(phases().get(name) == "Succeeded" for name in done),
        timeout=15,
        message=lambda: f"the five bound members Succeeded: {phases()}",
    )
    tenant = make_pod("tenant", cpu="4", scheduler_name="other-scheduler")
    tenant["spec"]["nodeName"] = node
    cluster.create_pod(namespace, tenant)

    start_scheduler()
    rest = [p["metadata"]["name"] for p in pods[5:]]
    wait_for(
        lambda: len(bound(cluster.placements(namespace), rest)) == 3,
        timeout=15,
        message=lambda: f"the last 3 members bound\n{cluster.describe(namespace)}",
    )
    wait_for_phase(cluster, namespace, "cut", "Running", timeout=10)
