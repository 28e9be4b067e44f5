"""Queue spec.dequeueStrategy: under fifo a PodGroup that cannot go holds back the ones
behind it in its queue; under traverse (the default) they are tried."""

from __future__ import annotations

import pytest

from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.queue import FIFO, TRAVERSE
from scheduler.engine import schedule
from scheduler.framework.decisions import SessionResult
from tests.unit.builders import gang, node, queue, resources, snapshot

OLD = "2026-01-01T00:00:00Z"
NEW = "2026-01-01T00:05:00Z"


def conditions(result: SessionResult, name: str) -> dict[str, str]:
    update = next(u for u in result.podgroups if u.name == name)
    return {c.reason: c.message for c in update.conditions}


def admitting(strategy: str) -> SessionResult:
    # The head asks for more than the cluster holds; the small one fits.
    big = gang(
        "big", 2, queue="q", phase=PodGroupPhase.PENDING, created=OLD, min_resources=resources(64)
    )
    small = gang("small", 1, queue="q", phase=PodGroupPhase.PENDING, created=NEW)
    return schedule(
        snapshot([node("n1", cpu=4)], [big, small], [queue("q", dequeue_strategy=strategy)])
    )


def placing(strategy: str) -> SessionResult:
    # Both admitted; the head's 8 pods do not fit the 4 cpus, the small one does.
    big = gang("big", 8, queue="q", created=OLD)
    small = gang("small", 1, queue="q", created=NEW)
    return schedule(
        snapshot([node("n1", cpu=4)], [big, small], [queue("q", dequeue_strategy=strategy)])
    )


def test_fifo_admits_nothing_behind_a_head_that_cannot_be_admitted() -> None:
    result = admitting(FIFO)
    small = next(u for u in result.podgroups if u.name == "small")
    assert small.phase is PodGroupPhase.PENDING
    assert (
        "PodGroup default/big ahead of it cannot go yet"
        in conditions(result, "small")["BehindQueueHead"]
    )


def test_fifo_places_nothing_behind_a_head_that_cannot_be_placed() -> None:
    result = placing(FIFO)
    assert result.binds == []
    assert "spec.dequeueStrategy fifo" in conditions(result, "small")["BehindQueueHead"]


@pytest.mark.parametrize("scenario", [admitting, placing])
def test_traverse_lets_the_ones_behind_go(scenario: object) -> None:
    result = scenario(TRAVERSE)  # type: ignore[operator]
    small = next(u for u in result.podgroups if u.name == "small")
    assert small.phase is not PodGroupPhase.PENDING
    assert "BehindQueueHead" not in conditions(result, "small")
