"""Pods using fields muster does not honour yet, end to end on sim over HTTP: a refused
pod stays pending and its PodScheduled condition names the field; a warned pod is bound
and carries one FieldNotHonoured event."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    Cluster,
    Obj,
    condition,
    make_gang,
    make_pod,
    placement_verdict,
    wait_for,
)

# DRA resource claims are refused: muster does not allocate them.
CLAIMS = [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}]
REFUSED_FIELD = "spec.resourceClaims"


def pod_with(name: str, **spec: Any) -> Obj:
    pod = make_pod(name, labels={"app": "db"})
    pod["spec"].update(spec)
    return pod


def pod_scheduled(cluster: Cluster, namespace: str, name: str) -> Obj | None:
    pod = next(p for p in cluster.pods(namespace) if p["metadata"]["name"] == name)
    found = condition(pod, "PodScheduled")
    return found if found and found.get("status") == "False" else None


def node_of(cluster: Cluster, namespace: str, name: str) -> str | None:
    return cluster.placements(namespace).get(name)


def field_warnings(cluster: Cluster, namespace: str, name: str) -> list[Obj]:
    return [
        e
        for e in cluster.events(namespace, "Pod", name)
        if e.get("reason") == "FieldNotHonoured" and e.get("type") == "Warning"
    ]


def stays_pending_naming(
    cluster: Cluster, namespace: str, name: str, words: str, timeout: float
) -> Obj:
    def naming() -> Obj | None:
        # A session may run while the gang's pods are still being created: the first
        # message can be about the missing members; the one that names the field follows.
        found = pod_scheduled(cluster, namespace, name)
        return found if found and words in found.get("message", "") else None

    found = wait_for(
        naming,
        timeout=timeout,
        message=lambda: (
            f"PodScheduled=False naming {words!r} on {name}\n{cluster.describe(namespace)}"
        ),
    )
    assert found["reason"] == "Unschedulable"
    assert node_of(cluster, namespace, name) is None
    return found


def served(cluster: Cluster, namespace: str, name: str, field: str) -> None:
    """Skip when the API server is older than the field and dropped it from the pod."""
    pod = next(p for p in cluster.pods(namespace) if p["metadata"]["name"] == name)
    if field not in pod["spec"]:
        pytest.skip(f"this API server does not serve spec.{field}")


@pytest.mark.nodes(2, "4")
def test_pod_with_an_eviction_responder_is_bound_with_one_field_not_honoured_event(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler(period=0.5)
    cluster.create_pod(
        namespace,
        pod_with("db-0", evictionResponders=[{"name": "example.com/drainer", "priority": 10}]),
    )
    served(cluster, namespace, "db-0", "evictionResponders")
    wait_for(lambda: node_of(cluster, namespace, "db-0"), timeout=10, message="db-0 bound")
    events = wait_for(
        lambda: field_warnings(cluster, namespace, "db-0"),
        timeout=10,
        message="FieldNotHonoured event on db-0",
    )
    scheduler.wait_sessions(scheduler.sessions() + 3)
    events = field_warnings(cluster, namespace, "db-0")
    assert len(events) == 1 and events[0].get("count", 1) == 1, events
    message = events[0]["message"]
    assert "muster does not honour spec.evictionResponders yet" in message
    assert "placed as if the field were absent" in message


@pytest.mark.nodes(2, "4")
def test_pod_with_resource_claims_stays_pending_saying_muster_does_not_allocate_them(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler(period=0.5)
    cluster.create_pod(namespace, pod_with("dra", resourceClaims=CLAIMS))
    served(cluster, namespace, "dra", "resourceClaims")
    cluster.create_pod(namespace, make_pod("plain"))
    stays_pending_naming(
        cluster, namespace, "dra", "muster does not allocate resource claims yet", timeout=10
    )
    # the scheduler is not stuck: the plain pod beside it was placed
    wait_for(lambda: node_of(cluster, namespace, "plain"), timeout=10, message="plain bound")
    scheduler.wait_sessions(scheduler.sessions() + 2)
    assert node_of(cluster, namespace, "dra") is None


@pytest.mark.nodes(3, "4")
def test_gang_with_one_refused_member_binds_nothing_and_its_podgroup_says_why(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler(period=0.5)
    podgroup, pods = make_gang("db", 3)
    pods[2]["spec"]["resourceClaims"] = CLAIMS
    cluster.submit(namespace, podgroup, pods)
    served(cluster, namespace, "db-2", "resourceClaims")

    def podgroup_condition() -> Obj | None:
        return placement_verdict(cluster.podgroup(namespace, "db"))

    found = wait_for(
        podgroup_condition,
        timeout=10,
        message=lambda: f"Unschedulable condition on podgroup db\n{cluster.describe(namespace)}",
    )
    assert found["reason"] == "FieldNotHonoured"
    assert f"pod {namespace}/db-2" in found["message"]
    assert REFUSED_FIELD in found["message"]
    stays_pending_naming(cluster, namespace, "db-2", REFUSED_FIELD, timeout=10)
    # the members without the field wait for their gang and say so too
    stays_pending_naming(cluster, namespace, "db-0", REFUSED_FIELD, timeout=10)
    scheduler.wait_sessions(scheduler.sessions() + 2)
    assert all(node is None for node in cluster.placements(namespace).values())
