"""enqueue: Pending -> Inqueue only when the cluster and the queue can hold minResources."""

from __future__ import annotations

from scheduler.api.job import PodGroupPhase
from scheduler.engine import load_config, schedule
from tests.unit.builders import gang, node, resources, snapshot

ENQUEUE_ONLY = load_config(
    """
actions: "enqueue"
tiers:
- plugins:
  - name: gang
  - name: proportion
"""
)


def test_gang_whose_min_resources_exceed_the_cluster_stays_pending_with_reason() -> None:
    job = gang("huge", 2, phase=PodGroupPhase.PENDING, min_resources=resources(cpu=100))
    result = schedule(snapshot([node("n1", cpu=4)], [job]), ENQUEUE_ONLY)
    (update,) = result.podgroups
    assert update.phase is PodGroupPhase.PENDING
    assert update.conditions[0].reason == "ClusterCapacityExceeded"
    assert "cpu" in update.conditions[0].message


def test_admission_reserves_room_so_the_next_gang_waits() -> None:
    first = gang(
        "first",
        4,
        phase=PodGroupPhase.PENDING,
        min_resources=resources(cpu=4),
        created="2026-01-01T00:00:00Z",
    )
    second = gang(
        "second",
        4,
        phase=PodGroupPhase.PENDING,
        min_resources=resources(cpu=4),
        created="2026-01-01T00:00:01Z",
    )
    result = schedule(snapshot([node("n1", cpu=4)], [first, second]), ENQUEUE_ONLY)
    phases = {u.name: u.phase for u in result.podgroups}
    assert phases["first"] is PodGroupPhase.INQUEUE
    assert phases["second"] is PodGroupPhase.PENDING


def test_gang_without_min_resources_is_admitted() -> None:
    result = schedule(
        snapshot([node("n1", cpu=1)], [gang("a", 8, phase=PodGroupPhase.PENDING)]), ENQUEUE_ONLY
    )
    assert result.podgroups[0].phase is PodGroupPhase.INQUEUE
