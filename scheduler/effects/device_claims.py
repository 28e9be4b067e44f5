"""The PreBind of a pod's ResourceClaims, written as kube-scheduler's DynamicResources plugin
writes it, before the pod's binding (effects/binder.py calls it).

For each claim of the pod, in order, one at a time per claim (two pods of a gang sharing a
claim take turns):

1. A stale allocation the bind replaces (`DeviceClaimBinding.replaces`: muster wrote it for a
   pod that was never bound) is cleared first, as kube-scheduler's PostFilter clears one: the
   status written with no allocation and no reservation. The delete-protection finalizer
   stays, as the claim is allocated again at once.
2. The finalizer `resource.kubernetes.io/delete-protection` is added, if missing, by a merge
   patch carrying the claim's resourceVersion (an update of the claim).
3. One merge patch of `resourceclaims/status`, with the resourceVersion the finalizer's
   write returned, sets `status.allocation` (when this bind allocates the claim) and adds
   the pod to `status.reservedFor`; a claim allocated already with these devices only gains
   the reservation, and one that holds all of it already is not written.

A conflict (another writer moved the claim: the other pod of a shared claim, the
resourceclaim controller) reads the claim again and starts over. What kube-scheduler fails
a bind for fails it here too, in its words: a claim deleted meanwhile, or allocated
elsewhere; so does a claim muster found allocated that lost its allocation meanwhile. Every
write carries the binder's gate (the lease), as every other pre-bind write does.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

import msgspec

from scheduler.api import dra
from scheduler.cache.world import World
from scheduler.framework.decisions import DeviceBind, DeviceClaimBinding
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import Conflict, NotFound, StatusError, is_retryable

# Reads again after conflicts before the bind fails (client-go's DefaultRetry tries 5 times).
CONFLICT_RETRIES = 5


class DeviceClaimFailed(Exception):
    """A claim of a pod being bound cannot be written for it: the bind fails."""


class DeviceClaimWriter:
    """Writes the claims of binds of pods with ResourceClaims, one claim at a time."""

    def __init__(self, client: KubeClient, world: World, gate: Callable[[], bool]) -> None:
        self.client = client
        self.world = world
        self.gate = gate
        # One lock per claim being written, alive while a write holds or waits for it.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def assume(self, bind: DeviceBind) -> None:
        """Count the bind's claims as written from now on (World.assume_claimed)."""
        for claim in bind.devices:
            key = f"{claim.namespace}/{claim.name}"
            self.world.assume_claimed(key, claim.allocation, bind.uid, bind.name)

    def forget(self, bind: DeviceBind, written: set[str]) -> None:
        """The bind failed or was given up: the claims not written for it are not assumed
        any more (those written are the API server's: their events bring them)."""
        for claim in bind.devices:
            key = f"{claim.namespace}/{claim.name}"
            if key not in written:
                self.world.forget_claimed(key, bind.uid)

    async def write(self, bind: DeviceBind, written: set[str]) -> None:
        """Write each claim of the bind not in `written` (adding it there once written);
        DeviceClaimFailed when a claim cannot be had, StatusError for what may pass."""
        for claim in bind.devices:
            key = f"{claim.namespace}/{claim.name}"
            if key in written:
                continue
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = asyncio.Lock()
            async with lock:
                await self._write_claim(claim, bind)
            written.add(key)

    async def _write_claim(self, wanted: DeviceClaimBinding, bind: DeviceBind) -> None:
        key = f"{wanted.namespace}/{wanted.name}"
        current = self.world.resource_claims.get(key)
        for _ in range(CONFLICT_RETRIES):
            if current is None:
                current = await self._read(wanted)
            try:
                await self._write_once(wanted, bind, current)
                return
            except Conflict:
                current = None
        raise DeviceClaimFailed(
            f"add allocation and reservation to claim {key}: it kept changing while written"
        )

    async def _write_once(
        self, wanted: DeviceClaimBinding, bind: DeviceBind, current: dra.ResourceClaim
    ) -> None:
        key = f"{wanted.namespace}/{wanted.name}"
        if wanted.uid and current.metadata.uid != wanted.uid:
            raise DeviceClaimFailed(f"claim {key} got deleted in the meantime")
        if current.metadata.deletion_timestamp is not None:
            raise DeviceClaimFailed(f'resourceclaim "{wanted.name}" is being deleted')
        held = current.status.allocation
        if wanted.replaces and held is not None and not _same(held, wanted.allocation):
            current = await self._patch(
                wanted, {"status": {"allocation": None, "reservedFor": None}}, current, "status"
            )
            held = None
        allocation = wanted.allocation
        if held is None and allocation is None:
            raise DeviceClaimFailed(f"claim {key} got deallocated in the meantime")
        if held is not None and allocation is not None and not _same(held, allocation):
            raise DeviceClaimFailed(f"claim {key} got allocated elsewhere in the meantime")
        if dra.DELETE_PROTECTION_FINALIZER not in current.metadata.finalizers:
            finalizers = [*current.metadata.finalizers, dra.DELETE_PROTECTION_FINALIZER]
            current = await self._patch(wanted, {"metadata": {"finalizers": finalizers}}, current)
        reserved = current.status.reserved_for
        if held is not None and any(ref.uid == bind.uid for ref in reserved):
            return
        consumers = [msgspec.to_builtins(ref) for ref in reserved]
        consumers.append({"resource": "pods", "name": bind.name, "uid": bind.uid})
        status: dict[str, Any] = {"reservedFor": consumers}
        if held is None:
            status["allocation"] = msgspec.to_builtins(allocation)
        what = "add reservation to" if held is not None else "add allocation and reservation to"
        try:
            await self._patch(wanted, {"status": status}, current, "status")
        except StatusError as error:
            if isinstance(error, Conflict) or is_retryable(error.code) or error.code == 403:
                raise
            raise DeviceClaimFailed(f"{what} claim {key}: {error.message}") from error

    async def _patch(
        self,
        wanted: DeviceClaimBinding,
        body: dict[str, Any],
        current: dra.ResourceClaim,
        subresource: str = "",
    ) -> dra.ResourceClaim:
        """A merge patch conditional on the claim's resourceVersion; the claim it leaves."""
        body = {**body, "metadata": {**body.get("metadata", {})}}
        body["metadata"]["resourceVersion"] = current.metadata.resource_version
        path = _path(wanted) + (f"/{subresource}" if subresource else "")
        try:
            answer = await self.client.patch(path, body, gate=self.gate)
        except NotFound as error:
            raise DeviceClaimFailed(
                f"claim {wanted.namespace}/{wanted.name} got deleted in the meantime"
            ) from error
        return msgspec.json.decode(answer, type=dra.ResourceClaim)

    async def _read(self, wanted: DeviceClaimBinding) -> dra.ResourceClaim:
        try:
            answer = await self.client.request("GET", _path(wanted))
        except NotFound as error:
            raise DeviceClaimFailed(
                f"claim {wanted.namespace}/{wanted.name} got deleted in the meantime"
            ) from error
        return msgspec.json.decode(answer, type=dra.ResourceClaim)


def _path(claim: DeviceClaimBinding) -> str:
    return f"/apis/{dra.API_VERSION}/namespaces/{claim.namespace}/resourceclaims/{claim.name}"


def _same(held: dra.AllocationResult, wanted: dra.AllocationResult | None) -> bool:
    """Whether the claim holds the devices the bind wants (where, and which)."""
    if wanted is None:
        return True
    return held.devices == wanted.devices and held.node_selector == wanted.node_selector
