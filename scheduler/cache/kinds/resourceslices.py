"""ResourceSlices (Dynamic Resource Allocation): the devices drivers publish, pool by pool.

A slice added, changed or gone changes the devices there are: a change of the cluster's
room. Every gang is unsettled and the gangs that failed are tried at once. A slice read
again with the same spec (a driver publishing what it published) changes nothing; the
selector memo (World.selector_memo) keeps its answers per slice version, and a session drops
those of slices no longer listed.
"""

from __future__ import annotations

from scheduler.api import dra
from scheduler.cache.kinds.base import Handler, named
from scheduler.cache.world import World


def upsert(world: World, resource_slice: dra.ResourceSlice) -> None:
    """A ResourceSlice was added or changed."""
    name = resource_slice.metadata.name
    old = world.resource_slices.get(name)
    world.resource_slices.put(name, resource_slice)
    if old is not None and old.spec == resource_slice.spec:
        return
    world.cluster_changed()
    world.room_freed()


def delete(world: World, name: str) -> None:
    """A ResourceSlice is gone: its devices with it."""
    if world.resource_slices.remove(name):
        world.cluster_changed()


HANDLER = Handler(
    "resourceslice",
    f"/apis/{dra.API_VERSION}/resourceslices",
    dra.ResourceSlice,
    named,
    upsert,
    delete,
)
