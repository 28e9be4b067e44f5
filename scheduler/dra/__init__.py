"""Devices for pods: Kubernetes' Dynamic Resource Allocation as a gang needs it.

The pure core of DRA (no I/O, no clock; it imports only scheduler.api, msgspec and
cel-python): which devices exist (`inventory.py`), what a claim asks (`requests.py`), how
a selector is evaluated (`cel/`, Kubernetes' CEL library in `cel/library/`), how a gang's
claims get devices together (`allocator.py`), and what claims add to a queue (`quota.py`).

How the rest of muster uses it:

- **Per session**, build one `DeviceAllocator(classes, slices, claims, nodes, memo=...,
  namespaces=...)` from the cache's decoded `api.dra` DeviceClasses, ResourceSlices and
  ResourceClaims, the nodes' labels by name, the namespaces' labels by name (for admin
  access) and a `DeviceMemo` the cache keeps across sessions (selectors' answers per
  device are pure; the allocator drops the slices no longer listed; it also keeps the
  decoded inventory and claims and each request's candidates, `kept.py`, so a session
  decodes and finds only what changed).
- **For each pod**, `pod_claims(namespace, name, uid, spec.resourceClaims,
  status.resourceClaimStatuses)` says which claims it uses (or why it waits: a
  template's claim not made yet).
- **During placement** (a plugin): `fits(pod, node, gang)` answers a `DeviceFit` (fits;
  or not on this node, in kube-scheduler's words and muster's; or not for now, for the
  pod: an error or an unresolvable claim; or refused, naming a field muster does not
  honour yet). `take(pod, node, gang)` when the pod is placed (tentatively, inside the
  gang's Statement), `give_back(pod)` when the Statement discards it (newest first),
  `commit(gang)` when the gang is committed: the AllocationResult of each claim the gang
  allocated, for the binder to write before the bind.
- **Preemption**: `freed_by(victims)` says which devices evicting them would free (a
  claim shared with a pod that stays frees nothing); `release(victim)` and
  `unrelease(victim)` follow the Statement's evict and its discard.
- **Queues**: `quota.queue_devices(claims)` counts devices per `deviceclass/<class>`, as
  Volcano 1.15's capacity plugin does.
"""

from scheduler.dra.allocator import DeviceAllocator
from scheduler.dra.cel import SelectorMemo
from scheduler.dra.fit import CANNOT_ALLOCATE, INVALID_POOLS, NOT_AVAILABLE, DeviceFit, Verdict
from scheduler.dra.kept import DeviceMemo
from scheduler.dra.quota import DeviceCounts, queue_devices
from scheduler.dra.requests import Claim, PodClaims, claim_from_wire, pod_claims

__all__ = [
    "CANNOT_ALLOCATE",
    "INVALID_POOLS",
    "NOT_AVAILABLE",
    "Claim",
    "DeviceAllocator",
    "DeviceCounts",
    "DeviceFit",
    "DeviceMemo",
    "PodClaims",
    "SelectorMemo",
    "Verdict",
    "claim_from_wire",
    "pod_claims",
    "queue_devices",
]
