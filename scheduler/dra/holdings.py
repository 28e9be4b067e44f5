"""Who holds each device now, and what held partitions take from their pools' counters.

A device is held by the claim whose allocation names it: allocated on the API server
(whoever it is reserved for, as kube-scheduler counts), committed earlier in the session,
or taken tentatively by a gang being placed. A result with admin access holds nothing
(kube-scheduler does not count it as allocated). A held device that consumes counters
takes them from its pool's shared counter sets, wherever its pod runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

from scheduler.dra.inventory import CounterId, Device, DeviceId, Inventory, Pool


class Holdings:
    """The devices held by claims and the counters they consume; holding and letting go
    are exact inverses, so an undone placement leaves no trace."""

    def __init__(self, inventory: Inventory) -> None:
        self.inventory = inventory
        self._holder: dict[DeviceId, str] = {}
        self._by_claim: dict[str, list[DeviceId]] = {}
        self._consumed: dict[str, dict[CounterId, Fraction]] = {}

    def holder(self, device: DeviceId) -> str | None:
        """The claim holding the device, if any."""
        return self._holder.get(device)

    def first_free(self, devices: list[Device], need: int) -> list[Device] | None:
        """The first `need` of these devices no claim holds, in order, or None when fewer
        are free."""
        holder = self._holder
        free: list[Device] = []
        for device in devices:
            if device.id not in holder:
                free.append(device)
                if len(free) == need:
                    return free
        return None

    def held_by(self, claim: str) -> list[DeviceId]:
        """The devices the claim holds, in the order it took them."""
        return list(self._by_claim.get(claim, ()))

    def consumed(self, pool: Pool) -> Mapping[CounterId, Fraction]:
        """What the pool's held devices consume of its shared counters."""
        return self._consumed.get(pool.label, {})

    def hold(self, claim: str, devices: Iterable[DeviceId]) -> None:
        """The claim holds these devices (free ones)."""
        for device_id in devices:
            self._holder[device_id] = claim
            self._by_claim.setdefault(claim, []).append(device_id)
            device = self.inventory.by_id.get(device_id)
            if device is not None and device.consumes:
                consumed = self._consumed.setdefault(device.pool.label, {})
                for counter, amount in device.consumes:
                    consumed[counter] = consumed.get(counter, Fraction(0)) + amount

    def hold_free(self, claim: str, devices: list[DeviceId]) -> None:
        """`hold` for a claim that holds nothing yet, of devices that consume no counters
        (a counted take: dra/allocator.py)."""
        holder = self._holder
        for device_id in devices:
            holder[device_id] = claim
        self._by_claim[claim] = devices

    def let_go(self, claim: str) -> list[DeviceId]:
        """The claim holds nothing any more; the devices it held."""
        devices = self._by_claim.pop(claim, [])
        for device_id in devices:
            del self._holder[device_id]
            device = self.inventory.by_id.get(device_id)
            if device is None or not device.consumes:
                continue
            # A counter back at nothing is dropped, so an undo leaves the state as it was.
            consumed = self._consumed[device.pool.label]
            for counter, amount in device.consumes:
                consumed[counter] -= amount
                if not consumed[counter]:
                    del consumed[counter]
            if not consumed:
                del self._consumed[device.pool.label]
        return devices

    def state(self) -> tuple[object, ...]:
        """Everything a question reads, comparable (for tests of exact undo)."""
        return (
            dict(sorted(self._holder.items())),
            {claim: list(devices) for claim, devices in sorted(self._by_claim.items())},
            {pool: dict(counters) for pool, counters in sorted(self._consumed.items())},
        )
