"""sim's podgroup-protection controller: kube-controller-manager's, which lets a deleted native
PodGroup (scheduling.k8s.io) go once no pod that is not done names it.

kube-apiserver's PodGroupProtection admission puts the finalizer
`scheduling.k8s.io/podgroup-protection` on every new PodGroup; only this controller removes
it, so without it a deleted PodGroup never goes. It removes the finalizer from a PodGroup
being deleted when no pod of its namespace whose phase is neither Succeeded nor Failed names
it in `spec.schedulingGroup.podGroupName`; a pod that leaves (or finishes) lets it go.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from muster_sim.apiserver.resources import NATIVE_PODGROUPS, PODS
from muster_sim.apiserver.store import Event, name_of, namespace_of
from muster_sim.apiserver.verbs import ApiServer
from muster_sim.errors import ApiError
from muster_sim.validation.native_scheduling import PROTECTION_FINALIZER

Obj = dict[str, Any]

log = logging.getLogger("muster.sim")

_DONE = frozenset({"Succeeded", "Failed"})


class PodGroupProtection:
    """Removes the protection finalizer from deleted PodGroups that no live pod names."""

    def __init__(self, api: ApiServer) -> None:
        self.api = api
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: asyncio.Handle | None = None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start reacting to pod and PodGroup events on `loop` (the server's loop)."""
        self._loop = loop
        for key in (PODS, NATIVE_PODGROUPS):
            self.api.store.listen(key, self._on_event)

    def _on_event(self, event: Event) -> None:
        # One pass after a burst of events (the listener runs inside the store's write).
        if self._loop is not None and self._pending is None:
            self._pending = self._loop.call_soon(self.sync)

    def sync(self) -> None:
        """Let go every deleted PodGroup that no live pod names."""
        self._pending = None
        store = self.api.store
        for group in list(store.iter_all(NATIVE_PODGROUPS)):
            meta = group["metadata"]
            if not meta.get("deletionTimestamp"):
                continue
            if PROTECTION_FINALIZER not in (meta.get("finalizers") or []):
                continue
            if self._named(namespace_of(group), name_of(group)):
                continue
            self._release(group)

    def _named(self, namespace: str, name: str) -> bool:
        for pod in self.api.store.items(PODS, namespace):
            group = (pod.get("spec") or {}).get("schedulingGroup") or {}
            phase = (pod.get("status") or {}).get("phase")
            if group.get("podGroupName") == name and phase not in _DONE:
                return True
        return False

    def _release(self, group: Obj) -> None:
        kind = self.api.registry.by_key(NATIVE_PODGROUPS)
        if kind is None:
            return
        meta = group["metadata"]
        new = dict(group)
        new["metadata"] = {
            **meta,
            "finalizers": [f for f in meta.get("finalizers") or [] if f != PROTECTION_FINALIZER],
        }
        try:
            self.api.update(kind, namespace_of(group), name_of(group), new)
        except ApiError as error:
            # a lost race: the next event's pass tries again
            log.info("podgroup-protection: %s: %s", name_of(group), error.message)
