"""Whose a PodGroup is: muster schedules and reports on its own, and leaves the others alone."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import wire
from scheduler.cache.kinds import nodes, podgroups, pods, queues
from scheduler.cache.world import World
from scheduler.engine import schedule
from scheduler.framework.decisions import SessionResult
from tests.unit.cache.test_world import node, pod

OTHER = "volcano"


def podgroup(name: str, min_member: int, *, scheduler: str = "") -> wire.PodGroup:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"pg-{name}"}
    if scheduler:
        meta["annotations"] = {"muster.dev/scheduler-name": scheduler}
    return wire.from_dict(
        {"metadata": meta, "spec": {"minMember": min_member}, "status": {"phase": "Pending"}},
        wire.PodGroup,
    )


def cluster(*, claim_without_pods: bool = True) -> World:
    world = World(claim_podgroups_without_pods=claim_without_pods)
    queues.upsert(world, wire.from_dict({"metadata": {"name": "default"}}, wire.Queue))
    nodes.upsert(world, node("n1", cpu="8"))
    return world


def add_gang(world: World, name: str, size: int, scheduler: str = "muster") -> None:
    podgroups.upsert(world, podgroup(name, size))
    for index in range(size):
        pods.upsert(world, pod(f"{name}-{index}", group=name, scheduler=scheduler))


def reported(result: SessionResult) -> set[str]:
    """Every PodGroup a session's result writes to or about."""
    names = {u.name for u in result.podgroups}
    names |= {u.job.partition("/")[2] for u in result.unschedulable}
    names |= {r.name.partition("/")[2] for r in result.invalid if r.kind == "PodGroup"}
    return names


def test_a_podgroup_whose_pods_name_another_scheduler_gets_no_status_and_no_binds() -> None:
    world = cluster()
    add_gang(world, "mine", 2)
    add_gang(world, "theirs", 2, scheduler=OTHER)

    result = schedule(world.snapshot())

    assert {b.job for b in result.binds} == {"ns/mine"}
    assert reported(result) == {"mine"}
    assert not world.is_ours("ns", "theirs")
    (queue,) = result.queues
    assert sum(queue.podgroups.values()) == 1, "their PodGroup counted in the queue"
    assert queue.allocated.cpu == 2000


def test_pods_of_another_scheduler_on_a_node_still_take_its_room() -> None:
    world = cluster()
    podgroups.upsert(world, podgroup("theirs", 1))
    pods.upsert(world, pod("t-0", group="theirs", scheduler=OTHER, node="n1", cpu="7"))
    add_gang(world, "mine", 2)

    result = schedule(world.snapshot())

    assert result.binds == [], "placed two 1-cpu pods beside 7 cpu of another scheduler"
    assert reported(result) == {"mine"}


@pytest.mark.parametrize(
    ("annotation", "claim", "ours"),
    [
        ("", True, True),
        ("", False, False),
        ("muster", False, True),
        (OTHER, True, False),
    ],
    ids=["unmarked-claimed", "unmarked-left", "annotated-ours", "annotated-theirs"],
)
def test_a_podgroup_without_pods_is_ours_by_its_annotation_or_the_claim_flag(
    annotation: str, claim: bool, ours: bool
) -> None:
    world = cluster(claim_without_pods=claim)
    podgroups.upsert(world, podgroup("empty", 2, scheduler=annotation))

    result = schedule(world.snapshot())

    assert world.is_ours("ns", "empty") is ours
    assert ("empty" in reported(result)) is ours


def test_the_first_pod_of_another_scheduler_takes_a_claimed_podgroup_away_for_good() -> None:
    world = cluster()
    podgroups.upsert(world, podgroup("g", 2))
    assert world.is_ours("ns", "g")

    pods.upsert(world, pod("g-0", group="g", scheduler=OTHER))
    assert not world.is_ours("ns", "g")
    assert reported(schedule(world.snapshot())) == set()

    pods.delete(world, "uid-g-0")
    assert world.is_ours("ns", "g"), "with no pods left it is unmarked again: claimed"


def test_a_podgroup_with_pods_of_both_is_ours_and_counts_only_ours() -> None:
    world = cluster()
    podgroups.upsert(world, podgroup("mixed", 1))
    pods.upsert(world, pod("theirs", group="mixed", scheduler=OTHER))
    assert not world.is_ours("ns", "mixed")

    pods.upsert(world, pod("mine", group="mixed"))
    assert world.is_ours("ns", "mixed")
    result = schedule(world.snapshot())

    assert [b.name for b in result.binds] == ["mine"]

    pods.delete(world, "uid-mine")
    assert not world.is_ours("ns", "mixed")


def test_pods_that_arrive_before_their_podgroup_decide_whose_it_is() -> None:
    world = cluster()
    pods.upsert(world, pod("t-0", group="late", scheduler=OTHER))
    pods.upsert(world, pod("m-0", group="early"))

    podgroups.upsert(world, podgroup("late", 1))
    podgroups.upsert(world, podgroup("early", 1))

    assert not world.is_ours("ns", "late")
    assert world.is_ours("ns", "early")
    assert [b.name for b in schedule(world.snapshot()).binds] == ["m-0"]


def test_an_invalid_podgroup_of_another_scheduler_gets_no_event() -> None:
    world = cluster()
    bad = wire.from_dict(
        {
            "metadata": {"name": "bad", "namespace": "ns", "uid": "pg-bad"},
            "spec": {"minMember": 1, "minResources": {"cpu": "lots"}},
        },
        wire.PodGroup,
    )
    pods.upsert(world, pod("t-0", group="bad", scheduler=OTHER))
    podgroups.upsert(world, bad)

    assert reported(schedule(world.snapshot())) == set()
