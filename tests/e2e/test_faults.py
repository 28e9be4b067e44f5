"""An unreliable API server: failed binds, dropped watches, compacted history."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    BindingLog,
    Cluster,
    Sim,
    bound,
    make_gang,
    make_pod,
    node_names,
    scheduled_events,
    wait_for,
)

GANGS = 4
GANG_SIZE = 6


@pytest.mark.timeout(90)
@pytest.mark.nodes(4, "4")
def test_every_pod_is_bound_exactly_once_through_bind_errors_watch_drops_and_410s(
    cluster: Cluster, namespace: str, needs_sim: Sim, start_scheduler: StartScheduler
) -> None:
    needs_sim.set_faults(
        {
            "errors": [
                {"rate": 0.1, "code": 500, "verbs": ["create"], "resources": ["pods/binding"]}
            ],
            "watch_drop_seconds": 1.0,
            "seed": 7,  # with this seed, 6 of the first 24 bind requests fail
        }
    )
    scheduler = start_scheduler()
    relists_before = scheduler.metrics().value("muster_relists_total")

    with BindingLog(cluster, namespace) as log:
        for g in range(GANGS):
            name = f"gang-{g}"
            cluster.submit(namespace, *make_gang(name, GANG_SIZE, cpu="500m"))
            # forget the history and cut every watch: reflectors resuming from before get 410
            needs_sim.compact()
            needs_sim.drop_watches()
            members = [f"{name}-{i}" for i in range(GANG_SIZE)]
            wait_for(
                lambda members=members: (
                    len(bound(cluster.placements(namespace), members)) == GANG_SIZE
                ),
                timeout=20,
                interval=0.1,
                message=lambda name=name: f"gang {name} bound\n{cluster.describe(namespace)}",
            )
        assert log.double_binds() == {}

    total = GANGS * GANG_SIZE
    assert len(bound(cluster.placements(namespace))) == total
    wait_for(
        lambda: scheduler.binds() == total,
        timeout=5,
        message=lambda: f"binds_total{{result=success}} == {total}, is {scheduler.binds()}",
    )
    repeated = {pod: n for pod, n in scheduled_events(cluster, namespace).items() if n > 1}
    assert repeated == {}, f"pods reported Scheduled more than once: {repeated}"
    assert scheduler.metrics().value("muster_relists_total") > relists_before, (
        "no relist after the compactions: the 410 path was never taken"
    )


@pytest.mark.timeout(90)
@pytest.mark.nodes(1, "4")
def test_no_session_places_pods_while_a_watch_is_broken(
    cluster: Cluster, namespace: str, needs_sim: Sim, start_scheduler: StartScheduler
) -> None:
    """A pod bound by someone else while the scheduler's pod watch is broken is missing from
    its cache until the watch works again: a session meanwhile would place a gang on the room
    that pod took (the reliability campaign's seed 1758526124 did, after an API server
    restart). The scheduler waits for the watch, then sees the room taken."""
    scheduler = start_scheduler()
    (node,) = node_names(cluster)
    # One member of two: the gang waits, and the scheduler has read its pod.
    podgroup, pods = make_gang("late", 1, cpu="2", min_member=2)
    cluster.submit(namespace, podgroup, pods)
    wait_for(
        lambda: (cluster.podgroup(namespace, "late").get("status") or {}).get("conditions"),
        timeout=20,
        message=lambda: f"the scheduler's verdict on gang late\n{cluster.describe(namespace)}",
    )
    failures = scheduler.metrics().value("muster_watch_failures_total", resource="pod")
    needs_sim.set_faults(
        {"errors": [{"rate": 1.0, "code": 500, "verbs": ["watch"], "resources": ["pods"]}]}
    )
    needs_sim.drop_watches()
    wait_for(
        lambda: scheduler.metrics().value("muster_watch_failures_total", resource="pod") > failures,
        timeout=20,
        message="the scheduler's pod watch failing",
    )
    # Another scheduler binds 3 of the node's 4 cpu, unseen by muster's broken watch.
    cluster.create_pod(namespace, make_pod("foreign", cpu="3", scheduler_name="other"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "foreign"}}
    binding["target"] = {"apiVersion": "v1", "kind": "Node", "name": node}
    cluster.core.create_namespaced_pod_binding(
        "foreign", namespace, binding, _preload_content=False
    )
    # The gang may start now, as the scheduler's (working) PodGroup watch tells it.
    waited = scheduler.metrics().value("muster_scheduling_cycles_total", result="watch_broken")
    cluster.patch_podgroup(namespace, "late", {"spec": {"minMember": 1}})
    scheduler.wait_sessions(3)
    assert cluster.placements(namespace)["late-0"] is None, "placed from a stale cache"
    assert (
        scheduler.metrics().value("muster_scheduling_cycles_total", result="watch_broken") > waited
    )
    # The watch works again: the foreign pod is seen, and the node has 1 cpu for a 2-cpu pod.
    needs_sim.set_faults({})
    sessions = scheduler.metrics().value("muster_scheduling_cycles_total", result="session")
    wait_for(
        lambda: (
            scheduler.metrics().value("muster_scheduling_cycles_total", result="session")
            >= sessions + 2
        ),
        timeout=30,
        message="sessions once the watch works again",
    )
    assert cluster.placements(namespace)["late-0"] is None, f"{cluster.describe(namespace)}"
