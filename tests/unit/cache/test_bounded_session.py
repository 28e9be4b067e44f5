"""A bounded session (a leader's first, cache/bounded.py): it is offered at most so many
pending pods in whole gangs, the gangs with a member placed and the highest priority and
oldest first; the others are left to the next session, counted in their queues' figures,
neither tried nor reported nor settled."""

from __future__ import annotations

from scheduler.api import wire
from scheduler.cache.kinds import nodes, podgroups, pods, priorityclasses
from scheduler.cache.world import World
from scheduler.engine import schedule
from scheduler.framework.decisions import SessionResult
from tests.unit.cache.test_world import node, pod, podgroup, ready_world

NOW = 1_800_000_000.0


def gang(
    world: World, name: str, size: int, *, created: str, priority_class: str = "", cpu: str = "1"
) -> None:
    spec = {"priorityClassName": priority_class} if priority_class else {}
    group = podgroup(name, size, **spec)
    group.metadata.creation_timestamp = created
    podgroups.upsert(world, group)
    for member in range(size):
        pods.upsert(world, pod(f"{name}-{member}", group=name, cpu=cpu))


def backlog() -> World:
    """Room for everything; four gangs of 2 pods, of different ages and priorities."""
    world = ready_world()
    for index in range(4):
        nodes.upsert(world, node(f"n{index}", cpu="8"))
    priorityclasses.upsert(
        world,
        wire.from_dict({"metadata": {"name": "high"}, "value": 1000}, wire.PriorityClass),
    )
    gang(world, "old", 2, created="2027-01-15T08:00:00Z")
    gang(world, "young", 2, created="2027-01-15T09:00:00Z")
    gang(world, "urgent", 2, created="2027-01-15T10:00:00Z", priority_class="high")
    gang(world, "newest", 2, created="2027-01-15T11:00:00Z")
    return world


def session(world: World, at: float, pending_pods: int = 0) -> SessionResult:
    result = schedule(world.snapshot(at, pending_pods=pending_pods), copy=False)
    world.record_session(result, at)
    for bind in result.binds:
        world.assume_bound(bind.uid, bind.node)
    return result


def gangs_of(result: SessionResult) -> list[str]:
    return sorted({bind.job for bind in result.binds})


def test_a_bounded_session_places_the_highest_priority_then_the_oldest_gangs() -> None:
    world = backlog()
    first = session(world, NOW, pending_pods=4)
    assert gangs_of(first) == ["ns/old", "ns/urgent"]
    assert world.deferred == {"ns/young", "ns/newest"}
    # The gangs left out were neither tried nor reported: the next session does both.
    assert {u.name for u in first.podgroups} == {"old", "urgent"}
    assert not {"ns/young", "ns/newest"} & set(first.attempts)
    assert not any(m.name.startswith(("young", "newest")) for m in first.unschedulable)


def test_the_session_after_a_bounded_one_takes_every_gang_left() -> None:
    world = backlog()
    session(world, NOW, pending_pods=4)
    # Nothing changed in between: the gangs left out were not settled by the bounded session.
    assert not {"ns/young", "ns/newest"} & set(world.settled.jobs())
    second = session(world, NOW + 0.1)
    assert gangs_of(second) == ["ns/newest", "ns/young"]
    assert world.deferred == frozenset()


def test_the_first_gang_is_offered_however_big() -> None:
    world = backlog()
    first = session(world, NOW, pending_pods=1)
    assert gangs_of(first) == ["ns/urgent"]


def test_a_gang_with_a_member_placed_is_never_left_out() -> None:
    world = backlog()
    # The newest gang has one member bound already (a leader died between its binds).
    pods.upsert(world, pod("newest-0", group="newest", node="n0", phase="Pending"))
    first = session(world, NOW, pending_pods=2)
    assert "ns/newest" in gangs_of(first)
    assert "ns/newest" not in world.deferred


def test_the_gangs_left_out_count_in_their_queues_figures() -> None:
    world = backlog()
    bounded = schedule(world.snapshot(NOW, pending_pods=4), copy=False)
    whole = schedule(backlog().snapshot(NOW))
    # The queue's request is the whole backlog's, though the bounded session looked at two
    # of the four gangs; its status counts the two it placed and the two it left, pending.
    (queue,) = bounded.queues
    (queue_whole,) = whole.queues
    assert queue.request == queue_whole.request
    assert (queue.podgroups["running"], queue.podgroups["pending"]) == (2, 2)


def test_without_a_bound_nothing_is_left_out() -> None:
    world = backlog()
    first = session(world, NOW)
    assert len(gangs_of(first)) == 4
    assert world.deferred == frozenset()
