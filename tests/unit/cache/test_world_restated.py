"""A pod whose status alone changed is restated from its record, not read again; a changed
spec is read in full."""

from __future__ import annotations

from scheduler.api.task import TaskStatus
from scheduler.cache.kinds import nodes, pods
from scheduler.cache.world import World
from tests.unit.cache.test_world import node, pod


def bound_world() -> World:
    world = World()
    nodes.upsert(world, node("n1"))
    pods.upsert(world, pod("a", node="n1", phase="Pending"))  # listed
    pods.upsert(world, pod("a", node="n1", phase="Pending"))  # an event: its digest is taken
    return world


def test_a_status_report_restates_the_record() -> None:
    world = bound_world()
    before = world.tasks["uid-a"]
    pods.upsert(world, pod("a", node="n1", phase="Running"))
    after = world.tasks["uid-a"]
    assert after.status is TaskStatus.RUNNING
    assert world.live.nodes["n1"].tasks["uid-a"] is after
    # the request is the old record's own object: restated, not read again
    assert after.request is before.request


def test_a_changed_spec_is_read_again() -> None:
    world = bound_world()
    pods.upsert(world, pod("a", node="n1", phase="Running", cpu="2"))
    assert world.tasks["uid-a"].request.cpu == 2000
    assert world.live.nodes["n1"].used.cpu == 2000
