"""Native PodGroups (podgroups.scheduling.k8s.io, api/native.py): Kubernetes' own gangs,
at whichever version the server serves (v1beta1, else v1alpha2, else none: the kind is then
empty, as an optional kind not served). Only muster's own become jobs (cache/ownership.py:
a native PodGroup with no pods is never claimed by default); every one is kept, so one can
change hands as its pods come and go.

What an event invalidates is what a Volcano PodGroup's does (cache/kinds/podgroups.py): its
own status written back only moves what statuses report; a new one asks for a session; a
changed spec, labels or annotations (v1beta1's gang.minCount is mutable) also unsettle every
gang; a PodGroup that is gone leaves its pods waiting for it as orphans.
"""

from __future__ import annotations

from dataclasses import replace

from scheduler.api.native import (
    GROUP,
    PODGROUPS,
    V1ALPHA2,
    VERSIONS,
    NativePodGroup,
    PodGroupWire,
    decode_podgroup,
    native_key,
    read_podgroup,
)
from scheduler.cache.kinds.base import Handler, Versions
from scheduler.cache.world import World


def key(group: PodGroupWire) -> str:
    """The gang key of a native PodGroup."""
    return native_key(group.metadata.namespace, group.metadata.name)


def upsert(world: World, obj: PodGroupWire) -> None:
    """A native PodGroup was added or changed: its tasks move to the new record. Another
    scheduler's is kept aside, not made a job."""
    group = read_podgroup(obj, world.served_versions.get(PODGROUPS) or V1ALPHA2)
    gang = group.key
    previous = world.native_podgroups.get(gang)
    world.native_podgroups[gang] = group
    owners = world.owners
    if not owners.owns(gang, group):
        owners.disown(gang)
        return
    same = previous is not None and _same_request(previous, group)
    if same and gang in world.live.jobs:
        # Mostly our own status writes coming back: they change no decision.
        world.status_generation += 1
    else:
        world.generation += 1
        if previous is not None:
            # What it reserves or asks of its queue moved: others may fit now.
            world.settled.unsettle()
    world.settled.touch(gang)
    owners.adopt(gang, group, spec_changed=not same)


def delete(world: World, gang: str) -> None:
    """A native PodGroup (by gang key) is gone: its pods wait for it as orphans."""
    world.native_podgroups.pop(gang, None)
    world.refusals.pop(gang, None)
    world.drop_job(gang)


def _same_request(old: NativePodGroup, new: NativePodGroup) -> bool:
    """Whether two versions of a native PodGroup ask the same of a session: everything but
    its conditions, which a status write changes."""
    return replace(old, conditions=()) == replace(new, conditions=())


HANDLER = Handler(
    "nativepodgroup",
    "",
    PodGroupWire,
    key,
    upsert,
    delete,
    decode=decode_podgroup,
    versions=Versions(GROUP, PODGROUPS, VERSIONS),
)
