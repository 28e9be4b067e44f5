"""muster beside other schedulers: two muster instances under different names on one API
server, and kube-scheduler's pods in the same namespace. Each instance places its own gangs
and leaves every other PodGroup byte for byte as its writer left it; pods another scheduler
bound take their node's room."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.effects.recorder import COMPONENT as MUSTER_COMPONENT
from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    Cluster,
    Obj,
    Scheduler,
    bound,
    make_gang,
    make_pod,
    make_podgroup,
    node_names,
    wait_for,
    wait_for_phase,
)

# A PodGroup with no pods yet names its scheduler here (docs/operations.md).
SCHEDULER_NAME = "muster.dev/scheduler-name"
KUBE_SCHEDULER = "default-scheduler"


def gang_of(name: str, scheduler: str, size: int, cpu: str) -> tuple[Obj, list[Obj]]:
    """A gang for `scheduler`, its PodGroup annotated for it, as one created before its pods."""
    podgroup, pods = make_gang(name, size, cpu=cpu, scheduler_name=scheduler)
    podgroup["metadata"]["annotations"] = {SCHEDULER_NAME: scheduler}
    return podgroup, pods


def sessions_run(scheduler: Scheduler) -> float:
    """Sessions that ran (not periods skipped because nothing changed)."""
    return scheduler.metrics().value("muster_scheduling_cycles_total", result="session")


def musters_events(cluster: Cluster, namespace: str, kind: str, name: str) -> list[Obj]:
    """Events about one object that muster wrote (kube-scheduler writes its own)."""
    return [
        event
        for event in cluster.events(namespace, kind, name)
        if (event.get("source") or {}).get("component") == MUSTER_COMPONENT
    ]


def as_left(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    """A PodGroup as stored, whole: metadata (resourceVersion too), spec and status."""
    return cluster.podgroup(namespace, name)


@pytest.mark.timeout(120)
@pytest.mark.nodes(2, "4")
def test_two_musters_and_kube_scheduler_each_keep_to_their_own_podgroups(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    # kube-scheduler's share: a pod it bound, taking 3 of a node's 4 cpu, and a gang of its
    # own whose pods wait (no kube-scheduler places them on sim)
    first = node_names(cluster)[0]
    placed = make_pod("kube-bound", cpu="3", scheduler_name=KUBE_SCHEDULER)
    placed["spec"]["nodeName"] = first
    cluster.create_pod(namespace, placed)
    cluster.create_podgroup(namespace, make_podgroup("kube-gang", 2))
    for index in range(2):
        pod = make_pod(
            f"kube-gang-{index}", group="kube-gang", cpu="100m", scheduler_name=KUBE_SCHEDULER
        )
        cluster.create_pod(namespace, pod)
    kube_gang = as_left(cluster, namespace, "kube-gang")

    a = start_scheduler(names=("muster-a",), extra=["--no-claim-podgroups-without-pods"])
    b = start_scheduler(names=("muster-b",))
    cluster.submit(namespace, *gang_of("gang-a", "muster-a", 2, cpu="1"))
    cluster.submit(namespace, *gang_of("gang-b", "muster-b", 2, cpu="1"))
    # sim's kubelets start the pods; a real cluster's suite nodes have none
    running = 2 if cluster.sim is not None else 0
    for name in ("gang-a", "gang-b"):
        wait_for_phase(cluster, namespace, name, "Running", timeout=20)
        wait_for(
            lambda name=name: (
                as_left(cluster, namespace, name)["status"].get("running", 0) == running
            ),
            10,
            message=lambda name=name: f"{name}'s pods counted running: {running}",
        )
    placements = cluster.placements(namespace)
    assert len(bound(placements, ["gang-a-0", "gang-a-1", "gang-b-0", "gang-b-1"])) == 4
    # 1 cpu free on the first node: the gangs' 4 pods of 1 cpu mostly went to the second
    on_first = [
        p for p in ("gang-a-0", "gang-a-1", "gang-b-0", "gang-b-1") if placements[p] == first
    ]
    assert len(on_first) <= 1, f"pods placed on room kube-scheduler's pod holds: {on_first}"

    left = {name: as_left(cluster, namespace, name) for name in ("gang-a", "gang-b")}
    # each instance runs whole sessions over the other's PodGroup and kube-scheduler's: a new
    # pod (of kube-scheduler's) is a change both see
    before = {scheduler: sessions_run(scheduler) for scheduler in (a, b)}
    later = make_pod("kube-later", cpu="100m", scheduler_name=KUBE_SCHEDULER)
    cluster.create_pod(namespace, later)
    for scheduler in (a, b):
        wait_for(
            lambda scheduler=scheduler: sessions_run(scheduler) >= before[scheduler] + 2,
            30,
            message="two sessions of each instance after the change",
        )
    assert as_left(cluster, namespace, "gang-a") == left["gang-a"], "gang-a rewritten"
    assert as_left(cluster, namespace, "gang-b") == left["gang-b"], "gang-b rewritten"
    assert as_left(cluster, namespace, "kube-gang") == kube_gang, (
        "kube-scheduler's PodGroup was written to"
    )
    assert musters_events(cluster, namespace, "PodGroup", "kube-gang") == []
    for pod in ("kube-gang-0", "kube-gang-1", "kube-bound"):
        assert musters_events(cluster, namespace, "Pod", pod) == [], f"muster wrote on {pod}"
    for scheduler in (a, b):
        metrics = scheduler.metrics()
        counted = sum(value for _, value in metrics.series("muster_podgroups"))
        assert counted == 1, "a PodGroup of another scheduler counted as this one's"
