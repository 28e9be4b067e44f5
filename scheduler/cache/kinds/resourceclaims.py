"""ResourceClaims (Dynamic Resource Allocation): what pods ask of devices, and which devices
are in use (a device is in use when an allocated claim holds it, whoever it is reserved
for). Nothing of it lives only in memory: after a restart the claims' allocations on the API
server say which devices are taken.

What a claim event invalidates: it touches the gangs of the pods that use the claim
(World.claim_users); an allocation that goes (the resourceclaim controller deallocated a
claim whose pods are gone, or the claim is deleted) frees devices, which unsettles every gang
and brings the gangs that failed back at once. A claim read again with nothing scheduling
reads changed (its finalizer added), or the echo of what the binder wrote and assumed
(World.assume_claimed), asks for no session. A claim that comes or goes changes what its
pods' requests count for their queue (`deviceclass/<class>`, World.counted_request).
"""

from __future__ import annotations

from scheduler.api import dra
from scheduler.cache.kinds.base import Handler, namespaced
from scheduler.cache.world import World


def upsert(world: World, claim: dra.ResourceClaim) -> None:
    """A ResourceClaim was added or changed."""
    key = namespaced(claim)
    old = world.resource_claims.get(key)
    world.resource_claims.put(key, claim)
    echo = _echo(world, key, claim)
    world.claim_seen(key, claim)
    if old is not None and (_alike(old, claim) or echo):
        return
    _changed(world, key, old, claim)
    if old is None or old.metadata.uid != claim.metadata.uid:
        world.claim_changed(key, claim)


def delete(world: World, key: str) -> None:
    """A ResourceClaim ("namespace/name") is gone."""
    old = world.resource_claims.get(key)
    world.claim_seen(key, None)
    if not world.resource_claims.remove(key):
        return
    _changed(world, key, old, None)
    world.claim_changed(key, None)


def _changed(
    world: World, key: str, old: dra.ResourceClaim | None, new: dra.ResourceClaim | None
) -> None:
    world.generation += 1
    for uid in world.claim_users.get(key, ()):
        task = world.tasks.get(uid)
        if task is not None:
            world.settled.touch(task.job)
    held = old is not None and old.status.allocation is not None
    if held and (new is None or new.status.allocation is None):
        world.room_freed()


def _alike(old: dra.ResourceClaim, new: dra.ResourceClaim) -> bool:
    """Whether nothing a session reads of the claim moved (a finalizer came or went)."""
    return (
        old.status == new.status
        and old.spec == new.spec
        and old.metadata.uid == new.metadata.uid
        and old.metadata.deletion_timestamp == new.metadata.deletion_timestamp
        and old.metadata.owner_references == new.metadata.owner_references
    )


def _echo(world: World, key: str, claim: dra.ResourceClaim) -> bool:
    """Whether the event only shows what the binder wrote and the sessions assumed: the
    allocation it wrote, and the reservations of the pods it wrote them for."""
    assumed = world.assumed_claims.get(key)
    allocation = claim.status.allocation
    if assumed is None or allocation is None:
        return False
    if assumed.allocation is not None and assumed.allocation != allocation:
        return False
    reserved = {ref.uid for ref in claim.status.reserved_for}
    return all(uid in reserved for uid in assumed.pods)


HANDLER = Handler(
    "resourceclaim",
    f"/apis/{dra.API_VERSION}/resourceclaims",
    dra.ResourceClaim,
    namespaced,
    upsert,
    delete,
)
