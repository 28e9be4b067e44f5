"""Preemption and reclaim end to end on muster sim: exactly enough victims, whole gangs or
none, queues converging to their shares, a quiet steady state, and a queue tree's split."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from kubernetes import client

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    GROUP,
    QUEUE_NAME,
    VERSION,
    Cluster,
    Obj,
    Scheduler,
    make_gang,
    make_pod,
    wait_for,
)

ACTIONS = "enqueue, allocate, preempt, reclaim, backfill"
PERIOD = 0.2


@pytest.fixture
def suffix() -> str:
    return uuid.uuid4().hex[:6]


@pytest.fixture
def priority_classes(cluster: Cluster, suffix: str) -> Iterator[tuple[str, str]]:
    api = client.SchedulingV1Api(cluster.api)
    names = (f"low-{suffix}", f"high-{suffix}")
    for name, value in zip(names, (10, 1000), strict=True):
        api.create_priority_class({"metadata": {"name": name}, "value": value})
    yield names
    for name in names:
        api.delete_priority_class(name)


def create_queue(cluster: Cluster, name: str, weight: int = 1, parent: str | None = None) -> None:
    spec: Obj = {"weight": weight, "reclaimable": True}
    if parent is not None:
        spec["parent"] = parent
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Queue", "metadata": {"name": name}}
    cluster.create_queue({**body, "spec": spec})


def with_class(pod: Obj, class_name: str) -> Obj:
    pod["spec"]["priorityClassName"] = class_name
    return pod


def submit_gang(
    cluster: Cluster, namespace: str, name: str, size: int, cpu: str, class_name: str
) -> list[str]:
    """A PodGroup and its pods, all of one PriorityClass; returns the pods' names."""
    podgroup, pods = make_gang(name, size, cpu=cpu)
    podgroup["spec"]["priorityClassName"] = class_name
    cluster.submit(namespace, podgroup, [with_class(p, class_name) for p in pods])
    return [p["metadata"]["name"] for p in pods]


def running_names(cluster: Cluster, namespace: str, prefix: str = "") -> set[str]:
    return {
        p["metadata"]["name"]
        for p in cluster.pods(namespace)
        if p["metadata"]["name"].startswith(prefix)
        and p["spec"].get("nodeName")
        and not p["metadata"].get("deletionTimestamp")
    }


def all_names(cluster: Cluster, namespace: str, prefix: str) -> set[str]:
    return {
        p["metadata"]["name"]
        for p in cluster.pods(namespace)
        if p["metadata"]["name"].startswith(prefix)
    }


def bound_victim_gang(cluster: Cluster, namespace: str, low: str) -> None:
    """A low-priority gang of 4 (minMember 4, 1 cpu each), once all of it is bound."""
    submit_gang(cluster, namespace, "victim", 4, "1", low)
    wait_for(
        lambda: len(running_names(cluster, namespace, "victim-")) == 4,
        timeout=10,
        message=lambda: f"victim gang bound\n{cluster.describe(namespace)}",
    )


def fill_with_low_pods(cluster: Cluster, namespace: str, count: int, low: str) -> None:
    for index in range(count):
        cluster.create_pod(namespace, with_class(make_pod(f"low-{index}"), low))
    wait_for(
        lambda: len(running_names(cluster, namespace, "low-")) == count,
        timeout=10,
        message=lambda: f"{count} low pods bound\n{cluster.describe(namespace)}",
    )


def stays(scheduler: Scheduler, sessions: int, check: Callable[[], bool]) -> None:
    """Assert `check` holds between sessions, for at least the next `sessions` of them."""
    for _ in range(max(1, sessions // 2)):
        scheduler.wait_sessions(1)  # returns after two whole sessions
        assert check(), "the cluster changed in the steady state"


@pytest.mark.nodes(2, "4")
def test_high_priority_gang_preempts_exactly_enough_low_priority_pods_and_no_more(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    priority_classes: tuple[str, str],
) -> None:
    low, high = priority_classes
    scheduler = start_scheduler(actions=ACTIONS, period=PERIOD)
    fill_with_low_pods(cluster, namespace, 8, low)

    submit_gang(cluster, namespace, "high", 3, "1", high)
    wait_for(
        lambda: len(running_names(cluster, namespace, "high-")) == 3,
        timeout=15,
        message=lambda: f"the high gang bound\n{cluster.describe(namespace)}",
    )
    # exactly three one-cpu pods made room for three one-cpu members, and no more go
    assert len(all_names(cluster, namespace, "low-")) == 5
    stays(scheduler, 10, lambda: len(all_names(cluster, namespace, "low-")) == 5)
    events = [e for n in range(8) for e in cluster.events(namespace, "Pod", f"low-{n}")]
    preempted = [e for e in events if e.get("reason") == "Preempted"]
    assert len(preempted) == 3
    assert all(f"preempted by {namespace}/high" in e["message"] for e in preempted)


@pytest.mark.nodes(2, "2")
def test_victim_gang_is_evicted_whole_or_not_at_all(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    priority_classes: tuple[str, str],
) -> None:
    low, high = priority_classes
    # Volcano never evicts a running gang it cannot spare members of: muster does only
    # when asked to
    whole = [{"name": "preempt", "arguments": {"evictWholeGangs": True}}]
    scheduler = start_scheduler(actions=ACTIONS, period=PERIOD, configurations=whole)
    bound_victim_gang(cluster, namespace, low)

    # 5 cpu on a 4-cpu cluster: evicting everything would not do; nothing is evicted
    toobig = submit_gang(cluster, namespace, "toobig", 5, "1", high)
    stays(scheduler, 10, lambda: len(all_names(cluster, namespace, "victim-")) == 4)
    for name in toobig:
        cluster.core.delete_namespaced_pod(name, namespace)

    # one 2-cpu pod needs a whole node: the 4-pod gang (minMember 4) goes whole
    submit_gang(cluster, namespace, "big", 1, "2", high)
    wait_for(
        lambda: len(running_names(cluster, namespace, "big-")) == 1,
        timeout=15,
        message=lambda: f"the 2-cpu pod bound\n{cluster.describe(namespace)}",
    )
    # The evictions go out together, but the preemptor binds once its node is free: on a
    # real server the last victims may still be going when it does.
    wait_for(
        lambda: all_names(cluster, namespace, "victim-") == set(),
        timeout=10,
        message=lambda: f"every victim gone\n{cluster.describe(namespace)}",
    )
    # As in Volcano, the evicted gang's PodGroup leaves Running (to Pending; with room for
    # its minResources it is admitted again, Inqueue, waiting for its pods to come back).
    wait_for(
        lambda: (
            cluster.podgroup(namespace, "victim").get("status", {}).get("phase")
            in ("Pending", "Inqueue")
            and cluster.podgroup(namespace, "victim")["status"].get("running") == 0
        ),
        timeout=5,
        message=lambda: f"victim PodGroup no longer Running\n{cluster.describe(namespace)}",
    )


@pytest.mark.nodes(2, "4")
def test_two_equal_queues_converge_to_one_to_one_by_reclaim_then_evict_nothing(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler, suffix: str
) -> None:
    qa, qb = f"a-{suffix}", f"b-{suffix}"
    create_queue(cluster, qa)
    create_queue(cluster, qb)
    scheduler = start_scheduler(actions=ACTIONS, period=PERIOD)
    for index in range(8):
        cluster.create_pod(namespace, make_pod(f"a-{index}", annotations={QUEUE_NAME: qa}))
    wait_for(
        lambda: len(running_names(cluster, namespace, "a-")) == 8,
        timeout=10,
        message=lambda: f"queue a took the cluster\n{cluster.describe(namespace)}",
    )
    for index in range(8):
        cluster.create_pod(namespace, make_pod(f"b-{index}", annotations={QUEUE_NAME: qb}))

    def split() -> tuple[int, int]:
        return (
            len(running_names(cluster, namespace, "a-")),
            len(running_names(cluster, namespace, "b-")),
        )

    wait_for(
        lambda: split() == (4, 4),
        timeout=15,
        message=lambda: f"4:4 by reclaim, have {split()}\n{cluster.describe(namespace)}",
    )
    # Steady state: 40 periods (8 s at 0.2 s) with both queues still asking for more,
    # and not one eviction: no pod of either queue disappears.
    names = all_names(cluster, namespace, "")
    stays(scheduler, 40, lambda: all_names(cluster, namespace, "") == names)
    assert split() == (4, 4)


@pytest.mark.nodes(4, "4")
def test_three_level_queue_tree_splits_the_cluster_by_its_weights(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler, suffix: str
) -> None:
    # root -> eng (3) -> ml (1), web (1); root -> ops (1). 16 cpu: ml 6, web 6, ops 4.
    eng, ml, web, ops = (f"{n}-{suffix}" for n in ("eng", "ml", "web", "ops"))
    create_queue(cluster, eng, 3)
    create_queue(cluster, ops, 1)
    create_queue(cluster, ml, 1, parent=eng)
    create_queue(cluster, web, 1, parent=eng)
    # the whole backlog is there before the scheduler starts: the split must not depend on
    # how fast the pods arrive (one queue's 16 pods alone would fill the cluster)
    for leaf in ("ml", "web", "ops"):
        queue_name = f"{leaf}-{suffix}"
        for index in range(16):
            pod = make_pod(f"{leaf}-{index}", annotations={QUEUE_NAME: queue_name})
            cluster.create_pod(namespace, pod)
    start_scheduler(period=PERIOD)

    def split() -> tuple[int, int, int]:
        return tuple(  # type: ignore[return-value]
            len(running_names(cluster, namespace, f"{leaf}-")) for leaf in ("ml", "web", "ops")
        )

    wait_for(
        lambda: sum(split()) == 16,
        timeout=15,
        message=lambda: f"the cluster full, have {split()}\n{cluster.describe(namespace)}",
    )
    ml_count, web_count, ops_count = split()
    assert abs(ml_count - 6) <= 1 and abs(web_count - 6) <= 1 and abs(ops_count - 4) <= 1


@pytest.mark.nodes(2, "2")
def test_a_running_gang_with_no_member_to_spare_is_not_evicted_by_default(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    priority_classes: tuple[str, str],
) -> None:
    low, high = priority_classes
    scheduler = start_scheduler(actions=ACTIONS, period=PERIOD)
    bound_victim_gang(cluster, namespace, low)
    # one 2-cpu pod needs a whole node, which only evicting the whole gang would free
    submit_gang(cluster, namespace, "big", 1, "2", high)
    stays(scheduler, 10, lambda: len(all_names(cluster, namespace, "victim-")) == 4)
    assert running_names(cluster, namespace, "big-") == set()
