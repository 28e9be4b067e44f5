"""A PodGroup whose spec.priorityClassName names no PriorityClass says so on its status
(FieldsNotHonoured), in the session and in the cache, and stops saying so once the class
exists; it is scheduled with the global default priority meanwhile."""

from __future__ import annotations

import pytest

from scheduler.api import wire
from scheduler.api.snapshot import build_snapshot
from scheduler.cache.kinds import podgroups, priorityclasses, queues
from scheduler.cache.world import World
from scheduler.engine import schedule
from scheduler.framework.decisions import SessionResult


def podgroup(class_name: str) -> wire.PodGroup:
    return wire.from_dict(
        {
            "metadata": {"name": "g", "namespace": "ns", "uid": "g1"},
            "spec": {"minMember": 1, "queue": "default", "priorityClassName": class_name},
            "status": {"phase": "Inqueue"},
        },
        wire.PodGroup,
    )


def priority_class(name: str, value: int, *, default: bool = False) -> wire.PriorityClass:
    return wire.from_dict(
        {"metadata": {"name": name}, "value": value, "globalDefault": default}, wire.PriorityClass
    )


QUEUE = wire.from_dict({"metadata": {"name": "default", "uid": "q"}}, wire.Queue)


def not_honoured(result: SessionResult) -> str:
    """The FieldsNotHonoured message the session writes ("" when it writes none)."""
    found = [
        c.message
        for update in result.podgroups
        for c in update.conditions
        if c.type == "FieldsNotHonoured"
    ]
    return found[0] if found else ""


@pytest.mark.parametrize(
    ("class_name", "classes", "said"),
    [
        pytest.param("missing", [], True, id="names-no-class"),
        pytest.param("high", [priority_class("high", 100)], False, id="names-a-class"),
        pytest.param("", [], False, id="names-none"),
    ],
)
def test_a_podgroup_naming_no_priority_class_says_so(
    class_name: str, classes: list[wire.PriorityClass], said: bool
) -> None:
    snap = build_snapshot(
        podgroups=[podgroup(class_name)], queues=[QUEUE], priority_classes=classes
    )

    message = not_honoured(schedule(snap))

    assert ("spec.priorityClassName" in message) is said
    if said:
        assert "names no PriorityClass" in message


def test_the_unknown_class_gets_the_global_default_and_the_cache_follows_its_creation() -> None:
    world = World(frozenset({"default-scheduler"}), "default")
    queues.upsert(world, QUEUE)
    priorityclasses.upsert(world, priority_class("base", 7, default=True))
    podgroups.upsert(world, podgroup("later"))
    job = world.live.jobs["ns/g"]
    assert (job.priority, job.unhonoured) == (7, ("spec.priorityClassName",))

    priorityclasses.upsert(world, priority_class("later", 50))

    assert (job.priority, job.unhonoured) == (50, ())
