"""Sharing over time, end to end: a big gang under a stream of small ones is placed once it
starves (room is held for it), and preemption asks PodDisruptionBudgets through the
Eviction API, taking the victim whose budget allows it and nothing a budget refuses."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client

from scheduler.effects.evictor import Evictor
from scheduler.framework.decisions import Evict
from scheduler.kube.client import KubeClient
from scheduler.kube.config import load_configuration
from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    DURATION,
    Cluster,
    Obj,
    condition,
    make_gang,
    make_pod,
    wait_for,
)

PREEMPT = "enqueue, allocate, preempt, backfill"


@pytest.fixture
def kubelet(cluster: Cluster) -> Iterator[None]:
    """Pods that run and finish: sim's kubelet does it; on a real cluster the suite does."""
    if cluster.sim is not None:
        yield
        return
    stop = threading.Event()
    thread = threading.Thread(target=cluster.run_pods, args=(stop,), daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(timeout=5)


@pytest.fixture
def classes(cluster: Cluster) -> Iterator[dict[str, str]]:
    """PriorityClasses low (10), mid (100) and high (1000), named for this test."""
    suffix = uuid.uuid4().hex[:6]
    api = client.SchedulingV1Api(cluster.api)
    names = {level: f"{level}-{suffix}" for level in ("low", "mid", "high")}
    for level, value in (("low", 10), ("mid", 100), ("high", 1000)):
        api.create_priority_class({"metadata": {"name": names[level]}, "value": value})
    yield names
    for name in names.values():
        api.delete_priority_class(name)


def bound(cluster: Cluster, namespace: str, prefix: str) -> set[str]:
    return {
        p["metadata"]["name"]
        for p in cluster.pods(namespace)
        if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName")
    }


@pytest.mark.nodes(4, "4")
def test_a_big_gang_under_a_stream_of_small_ones_runs_once_it_starves(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler, kubelet: None
) -> None:
    # 4 nodes x 4 cpu. Gangs of 2 x 1 cpu arrive every 0.5 s and each runs 3 s: the
    # cluster never has 16 cpu free at once. A gang of 16 x 1 cpu arrives at 4 s and may
    # wait 5 s (volcano.sh/sla-waiting-time); then it holds what frees until it fits.
    start_scheduler(period=0.2)
    waiting_time, drain = 5.0, 3.0
    stop = threading.Event()

    def stream() -> None:
        index = 0
        while not stop.wait(0.5):
            podgroup, pods = make_gang(f"small-{index}", 2, annotations={DURATION: f"{drain}s"})
            cluster.submit(namespace, podgroup, pods)
            index += 1

    feeder = threading.Thread(target=stream, daemon=True)
    feeder.start()
    try:
        time.sleep(4.0)  # the stream's head start: the cluster is busy when the big gang comes
        big, pods = make_gang("big", 16)
        big["metadata"]["annotations"] = {"volcano.sh/sla-waiting-time": f"{waiting_time:g}s"}
        arrived = time.monotonic()
        cluster.submit(namespace, big, pods)
        seen: set[str] = set()

        def placed() -> bool:
            starving = condition(cluster.podgroup(namespace, "big"), "Starving")
            if starving is not None:
                seen.add(starving["reason"])
            return len(bound(cluster, namespace, "big-")) == 16

        # Its waiting time, then the drain of what runs (3 s), plus sessions and binds.
        wait_for(
            placed,
            timeout=waiting_time + drain + 6.0,
            message=lambda: f"the big gang placed whole\n{cluster.describe(namespace)}",
        )
        took = time.monotonic() - arrived
    finally:
        stop.set()
        feeder.join(timeout=5)
    assert took >= waiting_time - 1.0, "placed before it starved: the stream was not busy"
    assert "HoldingResources" in seen


def budget(
    cluster: Cluster, namespace: str, name: str, selects: dict[str, str], **spec: object
) -> None:
    client.PolicyV1Api(cluster.api).create_namespaced_pod_disruption_budget(
        namespace,
        {"metadata": {"name": name}, "spec": {"selector": {"matchLabels": selects}, **spec}},
    )


def budget_computed(cluster: Cluster, namespace: str, name: str, allowed: int) -> None:
    """Wait for the disruption controller's figures (skip where none runs)."""
    policy = client.PolicyV1Api(cluster.api)

    def computed() -> bool:
        # The server answers every eviction "still being processed" until the controller
        # has observed this generation; before that the status's zeros are defaults.
        pdb = policy.read_namespaced_pod_disruption_budget(name, namespace)
        status = pdb.status
        return (
            status is not None
            and status.observed_generation == pdb.metadata.generation
            and status.disruptions_allowed == allowed
        )

    try:
        wait_for(computed, timeout=15, message=lambda: f"budget {name} allows {allowed}")
    except AssertionError:
        if cluster.sim is None:
            pytest.skip("needs kube-controller-manager's disruption controller")
        raise


def running(cluster: Cluster, namespace: str, names: list[str]) -> None:
    wait_for(
        lambda: all(
            p["status"].get("phase") == "Running"
            for p in cluster.pods(namespace)
            if p["metadata"]["name"] in names
        ),
        timeout=10,
        message=lambda: f"{names} running\n{cluster.describe(namespace)}",
    )


def one_pod(cluster: Cluster, namespace: str, name: str, level: str, cpu: str = "2") -> None:
    pod = make_pod(name, cpu=cpu, labels={"app": name})
    pod["spec"]["priorityClassName"] = level
    cluster.create_pod(namespace, pod)


@pytest.mark.nodes(1, "4")
def test_preemption_takes_the_victim_whose_budget_allows_it_over_a_cheaper_one(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    classes: dict[str, str],
    kubelet: None,
) -> None:
    start_scheduler(actions=PREEMPT, period=0.2)
    one_pod(cluster, namespace, "guarded", classes["low"])
    one_pod(cluster, namespace, "allowed", classes["mid"])
    running(cluster, namespace, ["guarded", "allowed"])
    budget(cluster, namespace, "guarded", {"app": "guarded"}, minAvailable=1)
    # minAvailable as a number: the disruption controller counts bare pods only so.
    budget(cluster, namespace, "allowed", {"app": "allowed"}, minAvailable=0)
    budget_computed(cluster, namespace, "guarded", 0)
    budget_computed(cluster, namespace, "allowed", 1)
    one_pod(cluster, namespace, "urgent", classes["high"])
    wait_for(
        lambda: bound(cluster, namespace, "urgent") == {"urgent"},
        timeout=15,
        message=lambda: f"urgent placed\n{cluster.describe(namespace)}",
    )
    names = {p["metadata"]["name"] for p in cluster.pods(namespace)}
    # The cheaper victim (lower priority) is protected by its budget: the other one went.
    assert "guarded" in names and "allowed" not in names


@pytest.mark.nodes(1, "4")
def test_a_budget_refusing_at_eviction_time_stops_the_decision_and_is_said(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    classes: dict[str, str],
    kubelet: None,
) -> None:
    # The budget changed between the decision and the eviction (sim's fault answers as the
    # Eviction API does): nothing is evicted, the preemptor's condition names the budget,
    # and once the budget allows it the eviction goes.
    if cluster.sim is None:
        pytest.skip("needs muster sim's fault injection (MUSTER_E2E_KUBECONFIG is set)")
    sim = cluster.sim
    sim.set_faults(
        {
            "errors": [
                {
                    "verbs": ["create"],
                    "resources": ["pods/eviction"],
                    "rate": 1.0,
                    "code": 429,
                    "budget": "late",
                }
            ]
        }
    )
    start_scheduler(actions=PREEMPT, period=0.2)
    one_pod(cluster, namespace, "victim", classes["low"], cpu="4")
    running(cluster, namespace, ["victim"])
    podgroup, pods = make_gang("urgent", 1, cpu="4")
    podgroup["spec"]["priorityClassName"] = classes["high"]
    pods[0]["spec"]["priorityClassName"] = classes["high"]
    cluster.submit(namespace, podgroup, pods)

    def refusal_said() -> bool:
        waiting = condition(cluster.podgroup(namespace, "urgent"), "Unschedulable")
        return waiting is not None and "The disruption budget late" in waiting["message"]

    wait_for(refusal_said, timeout=15, message=lambda: cluster.describe(namespace))
    victim = next(p for p in cluster.pods(namespace) if p["metadata"]["name"] == "victim")
    assert not victim["metadata"].get("deletionTimestamp")
    assert not any(c["type"] == "DisruptionTarget" for c in victim["status"].get("conditions", []))
    sim.set_faults({})
    wait_for(
        lambda: bound(cluster, namespace, "urgent-") == {"urgent-0"},
        timeout=15,
        message=lambda: f"urgent placed once the budget allows\n{cluster.describe(namespace)}",
    )


@pytest.mark.nodes(1, "4")
def test_the_evictor_reads_the_api_servers_refusal_and_sends_none_of_the_group(
    cluster: Cluster, namespace: str, kubelet: None
) -> None:
    # Against the API server under test (a real kube-apiserver with MUSTER_E2E_KUBECONFIG):
    # the 429 a budget answers is read as a refusal naming it, and no pod is evicted.
    for name in ("a", "b"):
        cluster.create_pod(
            namespace, _bound(make_pod(name, cpu="1", labels={"app": "pair"}), cluster)
        )
    running(cluster, namespace, ["a", "b"])
    budget(cluster, namespace, "pair", {"app": "pair"}, minAvailable=2)
    budget_computed(cluster, namespace, "pair", 0)
    pods = {p["metadata"]["name"]: p for p in cluster.pods(namespace)}
    group = [
        Evict(
            namespace,
            name,
            pods[name]["metadata"]["uid"],
            "",
            f"{namespace}/x",
            "test",
            "me/urgent",
        )
        for name in ("a", "b")
    ]
    refusals: list[tuple[str, str]] = []

    async def evict() -> list[bool]:
        kube = KubeClient(load_configuration(str(cluster.kubeconfig)))
        recorder: object = _NoEvents()
        try:
            evictor = Evictor(
                kube,
                recorder,  # type: ignore[arg-type]
                on_refused=lambda preemptor, why: refusals.append((preemptor, why)),
            )
            return await evictor.evict_group(group)
        finally:
            await kube.close()

    assert asyncio.run(evict()) == [False, False]
    ((preemptor, why),) = refusals
    assert preemptor == "me/urgent"
    assert "The disruption budget pair needs 2 healthy pods and has 2 currently" in why
    assert all(not p["metadata"].get("deletionTimestamp") for p in cluster.pods(namespace))


class _NoEvents:
    def record(self, *args: object) -> None:
        raise AssertionError("no pod was marked for eviction, so none is announced")


def _bound(pod: Obj, cluster: Cluster) -> Obj:
    """The pod placed directly on the test's node (no scheduler in this test)."""
    nodes = cluster.nodes_created or ["sim-node-0000"]
    pod["spec"]["nodeName"] = nodes[0]
    pod["spec"]["schedulerName"] = "default-scheduler"
    return pod
