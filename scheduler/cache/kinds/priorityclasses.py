"""PriorityClasses: the priorities PodGroups and pods name. Any change unsettles every gang,
and every job's priority is read again from its class (one may arrive after its PodGroup)."""

from __future__ import annotations

from scheduler.api import wire
from scheduler.api.snapshot import PriorityClassInfo
from scheduler.cache.kinds.base import Handler, named
from scheduler.cache.world import World


def upsert(world: World, pc: wire.PriorityClass) -> None:
    """A PriorityClass was added or changed: job priorities follow."""
    world.cluster_changed()
    name = pc.metadata.name
    world.live.priority_classes[name] = PriorityClassInfo(
        name, pc.value, pc.global_default, pc.preemption_policy
    )
    _refresh_job_priorities(world)


def delete(world: World, name: str) -> None:
    """A PriorityClass is gone."""
    world.cluster_changed()
    world.live.priority_classes.pop(name, None)
    _refresh_job_priorities(world)


def _refresh_job_priorities(world: World) -> None:
    live = world.live
    for job in live.jobs.values():
        if not job.shadow and job.invalid is None:
            live.resolve_priority(job)


HANDLER = Handler(
    "priorityclass",
    "/apis/scheduling.k8s.io/v1/priorityclasses",
    wire.PriorityClass,
    named,
    upsert,
    delete,
)
