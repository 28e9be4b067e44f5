"""Pods using fields muster does not honour yet, end to end: a warned pod is bound and
carries one FieldNotHonoured event. (A claim feature muster refuses: tests/e2e/test_dra.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    Cluster,
    Obj,
    make_pod,
    wait_for,
)


def pod_with(name: str, **spec: Any) -> Obj:
    pod = make_pod(name, labels={"app": "db"})
    pod["spec"].update(spec)
    return pod


def node_of(cluster: Cluster, namespace: str, name: str) -> str | None:
    return cluster.placements(namespace).get(name)


def field_warnings(cluster: Cluster, namespace: str, name: str) -> list[Obj]:
    return [
        e
        for e in cluster.events(namespace, "Pod", name)
        if e.get("reason") == "FieldNotHonoured" and e.get("type") == "Warning"
    ]


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
