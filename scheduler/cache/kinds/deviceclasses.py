"""DeviceClasses (Dynamic Resource Allocation): the selectors and configuration a claim's
request brings by naming its class.

A class added, changed or gone changes which devices requests may take, and how many
devices each queue's `deviceclass/<class>` counts: a change of the cluster's room. Every gang
is unsettled and the gangs that failed are tried at once (a request whose class did not
exist waited for it). A class read again unchanged (its metadata alone moved) changes
nothing.
"""

from __future__ import annotations

from scheduler.api import dra
from scheduler.cache.kinds.base import Handler, named
from scheduler.cache.world import World


def upsert(world: World, device_class: dra.DeviceClass) -> None:
    """A DeviceClass was added or changed."""
    name = device_class.metadata.name
    old = world.device_classes.get(name)
    world.device_classes.put(name, device_class)
    if old is not None and old.spec == device_class.spec:
        return
    world.cluster_changed()
    world.room_freed()


def delete(world: World, name: str) -> None:
    """A DeviceClass is gone."""
    if world.device_classes.remove(name):
        world.cluster_changed()


HANDLER = Handler(
    "deviceclass",
    f"/apis/{dra.API_VERSION}/deviceclasses",
    dra.DeviceClass,
    named,
    upsert,
    delete,
)
