"""PodGroups: the gangs. Only muster's own become jobs (cache/ownership.py says whose a
PodGroup is); every PodGroup is kept, so one can change hands as its pods come and go.

A PodGroup read again asking the same of a session (its own status written back, mostly)
only moves what statuses report; a new one asks for a session; a changed spec, labels or
annotations also unsettle every gang (what it reserves or asks of its queue moved), and any
event about a PodGroup unsettles its own gang. A PodGroup that is gone leaves its pods
waiting for it as orphans.
"""

from __future__ import annotations

from scheduler.api import paths, wire
from scheduler.cache.kinds.base import Handler, namespaced
from scheduler.cache.world import World


def upsert(world: World, group: wire.PodGroup) -> None:
    """A PodGroup was added or changed: its tasks move to the new record. Another
    scheduler's PodGroup is kept aside, not made a job."""
    key = namespaced(group)
    previous = world.podgroups.get(key)
    world.podgroups[key] = group
    owners = world.owners
    if not owners.owns(key, group):
        owners.disown(key)
        return
    same = previous is not None and _same_request(previous, group)
    if same and key in world.live.jobs:
        # Mostly our own status writes coming back: they change no decision.
        world.status_generation += 1
    else:
        world.generation += 1
        if previous is not None:
            # What it reserves or asks of its queue moved: others may fit now.
            world.settled.unsettle()
    world.settled.touch(key)
    owners.adopt(key, group, spec_changed=not same)


def delete(world: World, key: str) -> None:
    """A PodGroup ("namespace/name") is gone: its pods wait for it as orphans."""
    world.podgroups.pop(key, None)
    world.refusals.pop(key, None)
    world.drop_job(key)


def _same_request(old: wire.PodGroup, new: wire.PodGroup) -> bool:
    """Whether two versions of a PodGroup ask the same of a session: spec, and the labels
    and annotations it reads (waiting time, preemptable); a status write changes neither."""
    return (
        old.spec == new.spec
        and old.metadata.annotations == new.metadata.annotations
        and old.metadata.labels == new.metadata.labels
    )


HANDLER = Handler(
    "podgroup", f"{paths.GROUP_PATH}/podgroups", wire.PodGroup, namespaced, upsert, delete
)
