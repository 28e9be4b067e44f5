"""What claims add to a queue: devices per DeviceClass, as Volcano 1.15's queues count them.

Volcano 1.15's capacity plugin (its DRA queue quota) keeps devices in the queue's
resource lists under `deviceclass/<class name>`, a device count, and counts them from
each claim's spec: an `exactly` request in ExactCount mode adds its count (1 when unset)
to its class. A `firstAvailable` request and an All request are not counted (which
sub-request, or how many devices, is known only once allocated; Volcano skips them with
a warning, and so does muster, saying so in `skipped`). A claim used by several pods
counts once. `class_totals` counts the devices each class selects in the cluster, which
queues' shares divide.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from scheduler.api import dra
from scheduler.api.resources import DEVICE_CLASS_PREFIX
from scheduler.dra.cel import SelectorError, SelectorMemo
from scheduler.dra.inventory import Inventory
from scheduler.dra.requests import Claim


@dataclass(slots=True)
class DeviceCounts:
    """Devices per `deviceclass/<class>` key, and the requests left uncounted."""

    devices: dict[str, int] = field(default_factory=dict)
    # "namespace/claim: request" for each firstAvailable or All request.
    skipped: list[str] = field(default_factory=list)


def claim_devices(claim: Claim) -> DeviceCounts:
    """What one claim adds to its queue."""
    counts = DeviceCounts()
    for request in claim.requests:
        if len(request.choices) != 1 or request.choices[0].sub_request:
            counts.skipped.append(f"{claim.key}: {request.name} (firstAvailable)")
            continue
        choice = request.choices[0]
        if choice.all_devices:
            counts.skipped.append(f"{claim.key}: {request.name} (allocationMode All)")
            continue
        key = DEVICE_CLASS_PREFIX + choice.device_class
        counts.devices[key] = counts.devices.get(key, 0) + choice.count
    return counts


def queue_devices(claims: Iterable[Claim]) -> DeviceCounts:
    """What these claims add to a queue together, each claim once however many pods use
    it (pass the claims of every pod of the queue's gangs)."""
    total = DeviceCounts()
    seen: set[str] = set()
    for claim in claims:
        if claim.key in seen:
            continue
        seen.add(claim.key)
        counts = claim_devices(claim)
        for key, count in counts.devices.items():
            total.devices[key] = total.devices.get(key, 0) + count
        total.skipped.extend(counts.skipped)
    return total


def class_totals(
    classes: Iterable[dra.DeviceClass], inventory: Inventory, memo: SelectorMemo
) -> dict[str, int]:
    """How many devices each DeviceClass selects in the cluster's inventory, by
    `deviceclass/<class>`: what queues' shares of a class are shares of. Counted: the
    devices of complete, valid pools that muster allocates and that every selector of the
    class matches (a selector that fails to evaluate on a device does not count it)."""
    devices = [d for d in inventory.devices if d.pool.usable and d.refusal is None]
    totals: dict[str, int] = {}
    for device_class in classes:
        texts = [s.cel.expression for s in device_class.spec.selectors if s.cel is not None]
        count = 0
        for device in devices:
            try:
                if all(
                    memo.matches(text, device.slice_key, device.slot, device.driver, device.spec)
                    for text in texts
                ):
                    count += 1
            except SelectorError:
                continue
        totals[DEVICE_CLASS_PREFIX + device_class.metadata.name] = count
    return totals
