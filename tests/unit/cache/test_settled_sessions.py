"""Settled gangs: a gang that only a change can move is left out of the next sessions, which
then cost what changed; anything that could move it brings it back, and every whole-session
period it is weighed again."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from scheduler.api import wire
from scheduler.api.job import JobInfo
from scheduler.cache.kinds import nodes, podgroups, pods
from scheduler.cache.world import World
from scheduler.engine import load_config, schedule
from scheduler.framework.config import DEFAULT_CONFIG_YAML
from scheduler.framework.decisions import QueueStatusUpdate, SessionResult
from scheduler.framework.settled import WHOLE_SESSION_SECONDS
from tests.unit.cache.test_world import node, pod, podgroup, ready_world

NOW = 1_800_000_000.0
CREATED = "2027-01-15T08:00:00Z"  # NOW less a few seconds: nobody starves


def gang(world: World, name: str, size: int, cpu: str, **spec: Any) -> None:
    group = podgroup(name, size, **spec)
    group.metadata.creation_timestamp = CREATED
    podgroups.upsert(world, group)
    for member in range(size):
        pods.upsert(world, pod(f"{name}-{member}", group=name, cpu=cpu))


def queue_figures(update: QueueStatusUpdate) -> tuple[object, ...]:
    """What a queue's status says of the jobs in it."""
    return (update.name, update.allocated, update.deserved, update.podgroups, update.request)


def session(world: World, at: float, config_yaml: str = DEFAULT_CONFIG_YAML) -> SessionResult:
    """One session as the scheduler runs it: snapshot, schedule in place, record, assume."""
    snapshot = world.snapshot(at)
    result = schedule(snapshot, load_config(config_yaml), copy=False)
    world.record_session(result, at)
    for bind in result.binds:
        world.assume_bound(bind.uid, bind.node)
    return result


def fingerprint(job: JobInfo) -> tuple[object, ...]:
    """What a session could change of a job."""
    return (
        job.phase,
        job.wait_reason,
        job.wait_message,
        dict(job.fit_errors),
        job.starving,
        {uid: (t.status, t.node_name) for uid, t in job.tasks.items()},
        job.allocated.cpu,
    )


def too_big_waits() -> World:
    """One 4-cpu node, a gang of two 3-cpu pods that cannot fit, left settled."""
    world = ready_world()
    nodes.upsert(world, node("n1", cpu="4"))
    gang(world, "big", 2, "3")
    first = session(world, NOW)
    assert first.binds == [] and "ns/big" in first.settled
    return world


def test_a_gang_that_cannot_fit_is_left_out_until_room_appears() -> None:
    world = too_big_waits()
    big = world.live.jobs["ns/big"]
    before = fingerprint(big)
    gang(world, "small", 2, "1")
    placed = session(world, NOW + 1)
    assert sorted(b.name for b in placed.binds) == ["small-0", "small-1"]
    # The settled gang was not tried nor reported, and the cache's record is untouched.
    assert "ns/big" not in placed.attempts
    assert all(u.name != "big" for u in placed.podgroups)
    assert all(not m.name.startswith("big-") for m in placed.unschedulable)
    assert world.live.jobs["ns/big"] is big and fingerprint(big) == before
    assert "ns/big" in placed.settled


def test_room_freed_brings_a_settled_gang_back() -> None:
    world = too_big_waits()
    nodes.upsert(world, node("n2", cpu="8"))  # a node comes: room appears
    placed = session(world, NOW + 1)
    assert sorted(b.name for b in placed.binds) == ["big-0", "big-1"]


def test_an_event_about_a_settled_gang_brings_it_back() -> None:
    world = too_big_waits()
    pods.upsert(world, pod("big-1", group="big", cpu="1"))  # its pod shrank: 3 + 1 fit
    again = session(world, NOW + 1)
    assert sorted(b.name for b in again.binds) == ["big-0", "big-1"]


def test_a_whole_session_every_period_weighs_settled_gangs_again() -> None:
    world = too_big_waits()
    assert world.snapshot(NOW + 1).settled
    assert not world.snapshot(NOW + WHOLE_SESSION_SECONDS).settled


@pytest.mark.parametrize("backlog", [3, 20])
def test_a_session_over_settled_gangs_places_what_a_whole_one_places(backlog: int) -> None:
    def world_with_backlog() -> World:
        world = ready_world()
        for index in range(4):
            nodes.upsert(world, node(f"n{index}", cpu="4"))
        for index in range(backlog):
            gang(world, f"wide-{index:02d}", 3, "3")  # 9 cpu a gang: never together
        for index in range(4):
            gang(world, f"fill-{index}", 1, "2")
        session(world, NOW)
        return world

    settled, whole = world_with_backlog(), world_with_backlog()
    session(settled, NOW + 1)  # settles what the first left to try again
    session(whole, NOW + 1)
    for world in (settled, whole):
        for index in range(3):
            gang(world, f"new-{index}", 2, "1")
    partial = session(settled, NOW + 2)
    full = session(whole, NOW + 2 + WHOLE_SESSION_SECONDS)
    assert partial.settled and not whole.snapshot(NOW + 2 + 2 * WHOLE_SESSION_SECONDS).settled
    assert sorted((b.name, b.node) for b in partial.binds) == sorted(
        (b.name, b.node) for b in full.binds
    )
    assert len(partial.binds) == 6
    # The settled gangs count in their queue's figures as if the session had read them.
    assert partial.pending == full.pending and partial.starving == full.starving
    assert [queue_figures(q) for q in partial.queues] == [queue_figures(q) for q in full.queues]


def test_an_evicting_config_settles_nothing_and_never_changes_the_cache() -> None:
    world = too_big_waits()
    big = world.live.jobs["ns/big"]
    before = fingerprint(big)
    preempting = DEFAULT_CONFIG_YAML.replace(
        'actions: "enqueue, allocate, backfill"', 'actions: "enqueue, allocate, preempt, backfill"'
    )
    result = session(world, NOW + 1, preempting)
    assert result.settled == {}
    assert fingerprint(world.live.jobs["ns/big"]) == before


def test_a_node_written_again_unchanged_keeps_gangs_settled() -> None:
    world = too_big_waits()
    generation = world.generation
    nodes.upsert(world, node("n1", cpu="4"))  # a kubelet's status report, nothing new
    assert world.generation == generation
    assert "ns/big" in world.snapshot(NOW + 1).settled


def test_a_gang_holding_room_is_never_settled_so_later_gangs_never_take_its_room() -> None:
    # One 4-cpu node with 2 cpu used; a gang of two 2-cpu pods created an hour ago starves
    # and holds the 2 free cpu. Were it settled, the next session would hold nothing for it.
    world = ready_world()
    nodes.upsert(world, node("n1", cpu="4"))
    pods.upsert(world, pod("busy", node="n1", cpu="2", phase="Running", scheduler="other"))
    gang(world, "big", 2, "2")
    big = world.live.jobs["ns/big"]
    big.creation_timestamp = "2027-01-15T07:00:00Z"
    first = session(world, NOW)
    assert [hold.job for hold in first.holds] == ["ns/big"]
    assert "ns/big" not in first.settled
    gang(world, "late", 1, "1")
    second = session(world, NOW + 1)
    assert second.binds == []
    assert [hold.job for hold in second.holds] == ["ns/big"]


def test_a_partly_bound_gang_is_never_settled_and_its_undo_never_changes_the_cache() -> None:
    # A settled gang beside a gang a dead leader left two of three bound at NOW: once its
    # time is up, a session undoes it (evicts its two), on a full copy; the cache's records
    # of the evicted pods stay as the API server has them until the evictions are sent.
    world = too_big_waits()
    nodes.upsert(world, node("n2", cpu="2"))
    group = podgroup("cut", 3)
    group.status.phase = "Inqueue"
    podgroups.upsert(world, group)
    for member in range(3):
        # The third fits on no node: the gang cannot be completed.
        bound = pod(f"cut-{member}", group="cut", cpu="1" if member < 2 else "5")
        if member < 2:
            bound = msgspec.structs.replace(
                bound,
                spec=msgspec.structs.replace(bound.spec, node_name="n2"),
                status=wire.PodStatus(
                    phase="Running",
                    conditions=[
                        wire.Condition(
                            type="PodScheduled",
                            status="True",
                            last_transition_time="2027-01-15T08:00:00Z",
                        )
                    ],
                ),
            )
        pods.upsert(world, bound)
    config = DEFAULT_CONFIG_YAML + (
        "configurations:\n- name: allocate\n  arguments: {partly-bound-timeout: 20s}\n"
    )
    holding = session(world, NOW + 15, config)  # whole: the cut gang holds, big settles
    assert [h.job for h in holding.holds] == ["ns/cut"] and "ns/big" in holding.settled
    assert world.snapshot(NOW + 21).settled  # the big gang is shared uncopied

    result = session(world, NOW + 21, config)

    assert sorted(e.name for e in result.evictions) == ["cut-0", "cut-1"]
    assert "ns/cut" not in result.settled
    cut = world.live.jobs["ns/cut"]
    assert sorted(t.status.value for t in cut.tasks.values()) == ["Pending", "Running", "Running"]
