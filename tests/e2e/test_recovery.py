"""A scheduler killed with SIGKILL mid-binding: its successor finishes, binding nothing twice."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import BindingLog, Cluster, bound, make_gang, scheduled_events, wait_for

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
        first = start_scheduler()
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
