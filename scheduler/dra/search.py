"""The search for devices: every request of some claims, each on the nodes of its pods.

A `Unit` is one request of one claim, with its choices (the request, or its
`firstAvailable` sub-requests in order) and each choice's candidates in inventory order.

1. **Matching**, when every unit is simple (one ExactCount choice, no admin access, no
   constraint in its claim, no candidate consuming shared counters): a distinct device for
   each device a unit needs, by augmenting paths (Kuhn's algorithm, breadth first). Units
   are served in order and each tries its candidates in order, so a unit alone, or one
   whose candidates no earlier unit wants, gets its first free candidates: kube-scheduler's
   first fit. Exact: it fails only when no assignment exists.
2. **Backtracking** otherwise, after the same matching run on a relaxation (each unit
   needs its smallest choice's count from the union of its choices' free candidates,
   ignoring constraints and counters) has said an assignment may exist: units in order,
   each choice in order, the devices of an ExactCount choice as combinations in inventory
   order (never the same set twice), every device of an All choice or none; a device must
   be free (not held, nor taken in this search, unless admin access: then only not twice
   in one claim), fit its pool's counters, and keep the claim's constraints.
3. **Bound**: every device tried is a step; past `limit` steps the search raises
   `Exhausted`.

The order of units is the caller's: kube-scheduler's (claims and requests as listed) for
one pod, the most constrained first (fewest free candidates beyond what it needs) for a
gang's joint search. A candidate whose selectors failed to evaluate stops the search with
the error when the search reaches it free, as kube-scheduler's does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from scheduler.dra.fit import PodProblem, Verdict
from scheduler.dra.holdings import Holdings
from scheduler.dra.inventory import CounterId, Device, DeviceId
from scheduler.dra.requests import DISTINCT, MATCH, Choice, Claim


class Pick:
    """One device given to one choice of a claim. A class of its own, not a dataclass: one
    is made per device given, and a dataclass's __init__ runs interpreted even in the
    compiled core (scheduler/build.py). Compared by identity: `DeviceAllocator.state`
    reads its parts."""

    __slots__ = ("choice", "device")

    def __init__(self, choice: Choice, device: Device) -> None:
        self.choice: Final = choice
        self.device: Final = device


@dataclass(slots=True)
class Job:
    """A claim to allocate, and the nodes of the pods that use it."""

    claim: Claim
    nodes: tuple[str, ...]


@dataclass(slots=True)
class Unit:
    """One request of one claim in a search, with its candidates per choice."""

    job: Job
    choices: list[tuple[Choice, list[Device]]]
    # The fewest devices any choice needs.
    need: int
    # Candidates whose selectors failed to evaluate, by device order, with the error.
    poison: dict[int, str]
    # Devices that match but muster does not allocate, by choice name: what they need.
    refused: dict[str, list[str]]
    # Devices an All choice must take but cannot (a taint it does not tolerate), by order.
    blocked: set[int]


class Exhausted(Exception):
    """The search spent its steps."""


class Search:
    """One search over some units (the module docstring's steps); `run` answers the
    devices by claim key, or None."""

    def __init__(
        self, holdings: Holdings, units: list[Unit], released: set[str], limit: int
    ) -> None:
        self.holdings = holdings
        self.units = units
        self.released = released
        self.limit = limit
        self.steps = 0
        # Whether even the relaxation found too few devices.
        self.short = False
        self.taken: dict[DeviceId, str] = {}
        self.picks: dict[str, list[Pick]] = {unit.job.claim.key: [] for unit in units}
        self.consumed: dict[str, dict[CounterId, Fraction]] = {}
        # What the released claims' devices consume: free again for this search.
        self.returned: dict[str, dict[CounterId, Fraction]] = {}
        for key in released:
            for device_id in holdings.held_by(key):
                device = holdings.inventory.by_id.get(device_id)
                if device is None:
                    continue
                returned = self.returned.setdefault(device.pool.label, {})
                for counter, amount in device.consumes:
                    returned[counter] = returned.get(counter, Fraction(0)) + amount

    def free(self, device: Device, key: str, choice: Choice) -> bool:
        """Whether the device is free for this claim's choice, outside this search."""
        if choice.admin_access:
            return True
        holder = self.holdings.holder(device.id)
        return holder is None or holder == key or holder in self.released

    def most_constrained_first(self) -> None:
        """Order the units by how constrained they are: fewest free candidates of their
        first choice beyond their need, then the larger need (a stable sort keeps the
        caller's order among equals)."""

        def slack(unit: Unit) -> tuple[int, int]:
            choice, devices = unit.choices[0]
            free = sum(1 for d in devices if self.free(d, unit.job.claim.key, choice))
            return (free - unit.need, -unit.need)

        self.units.sort(key=slack)

    def run(self) -> dict[str, list[Pick]] | None:
        """The devices of every claim, or None when the search found no assignment."""
        if all(self._simple(unit) for unit in self.units):
            found = self._matched()
            self.short = found is None
            return found
        if not self._enough():
            self.short = True
            return None
        return self.picks if self._assign(0) else None

    def _simple(self, unit: Unit) -> bool:
        if len(unit.choices) != 1:
            return False
        choice, devices = unit.choices[0]
        if choice.all_devices or choice.admin_access or unit.job.claim.constraints:
            return False
        return not any(device.consumes for device in devices)

    def _matched(self) -> dict[str, list[Pick]] | None:
        slots: list[tuple[Unit, list[Device]]] = []
        for unit in self.units:
            choice, devices = unit.choices[0]
            free = [d for d in devices if self.free(d, unit.job.claim.key, choice)]
            slots.extend((unit, free) for _ in range(choice.count))
        chosen = matching(slots, self._tick, self._check)
        if chosen is None:
            return None
        for (unit, _), device in zip(slots, chosen, strict=True):
            self.picks[unit.job.claim.key].append(Pick(unit.choices[0][0], device))
        return self.picks

    def _enough(self) -> bool:
        slots: list[tuple[Unit, list[Device]]] = []
        for unit in self.units:
            key = unit.job.claim.key
            if any(choice.admin_access for choice, _ in unit.choices):
                continue
            union: dict[int, Device] = {}
            for choice, devices in unit.choices:
                for device in devices:
                    if self.free(device, key, choice):
                        union[device.order] = device
            candidates = sorted(union.values(), key=lambda d: d.order)
            if len(candidates) < unit.need:
                return False
            slots.extend((unit, candidates) for _ in range(unit.need))
        return matching(slots, self._tick, lambda unit, device: None) is not None

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > self.limit:
            raise Exhausted

    def _check(self, unit: Unit, device: Device) -> None:
        problem = unit.poison.get(device.order)
        if problem is not None:
            raise PodProblem(Verdict.POD, problem)

    # Backtracking -----------------------------------------------------------------------

    def _assign(self, position: int) -> bool:
        if position == len(self.units):
            return True
        unit = self.units[position]
        for choice, devices in unit.choices:
            if choice.all_devices:
                if devices and self._take_all(unit, choice, devices, position):
                    return True
            elif self._pick(unit, choice, devices, 0, choice.count, position):
                return True
        return False

    def _take_all(self, unit: Unit, choice: Choice, devices: list[Device], position: int) -> bool:
        taken: list[Device] = []
        for device in devices:
            self._tick()
            if not self._available(unit, choice, device):
                break
            if not self._constraints_hold(unit.job.claim, choice, device):
                # kube-scheduler takes a claim whose constraints All cannot meet for an
                # error in the claim, not a node without room.
                raise PodProblem(
                    Verdict.POD,
                    f"claim {unit.job.claim.key}, request {choice.name}: cannot add device "
                    f"{device.label} because a claim constraint would not be satisfied",
                )
            self._add(unit, choice, device)
            taken.append(device)
        else:
            if self._assign(position + 1):
                return True
        for device in reversed(taken):
            self._remove(unit, choice, device)
        return False

    def _pick(
        self,
        unit: Unit,
        choice: Choice,
        devices: list[Device],
        start: int,
        need: int,
        position: int,
    ) -> bool:
        if need == 0:
            return self._assign(position + 1)
        for index in range(start, len(devices) - need + 1):
            self._tick()
            device = devices[index]
            if not self._usable(unit, choice, device):
                continue
            self._add(unit, choice, device)
            if self._pick(unit, choice, devices, index + 1, need - 1, position):
                return True
            self._remove(unit, choice, device)
        return False

    def _usable(self, unit: Unit, choice: Choice, device: Device) -> bool:
        return self._available(unit, choice, device) and self._constraints_hold(
            unit.job.claim, choice, device
        )

    def _available(self, unit: Unit, choice: Choice, device: Device) -> bool:
        key = unit.job.claim.key
        if choice.admin_access:
            if any(pick.device is device for pick in self.picks[key]):
                return False
        elif device.id in self.taken or not self.free(device, key, choice):
            return False
        self._check(unit, device)
        if device.order in unit.blocked:
            return False
        return not device.consumes or self._counters_fit(device)

    def _counters_fit(self, device: Device) -> bool:
        pool = device.pool
        held = self.holdings.consumed(pool)
        returned = self.returned.get(pool.label, {})
        mine = self.consumed.get(pool.label, {})
        for counter, amount in device.consumes:
            used = held.get(counter, Fraction(0)) - returned.get(counter, Fraction(0))
            if used + mine.get(counter, Fraction(0)) + amount > pool.counters[counter]:
                return False
        return True

    def _constraints_hold(self, claim: Claim, choice: Choice, device: Device) -> bool:
        picks = self.picks[claim.key]
        for constraint in claim.constraints:
            if not constraint.applies_to(choice):
                continue
            value = attribute(device, constraint.attribute)
            if value is None:
                return False
            others = [
                attribute(pick.device, constraint.attribute)
                for pick in picks
                if constraint.applies_to(pick.choice)
            ]
            if constraint.kind == MATCH and others and others[0] != value:
                return False
            if constraint.kind == DISTINCT and value in others:
                return False
        return True

    def _add(self, unit: Unit, choice: Choice, device: Device) -> None:
        key = unit.job.claim.key
        self.picks[key].append(Pick(choice, device))
        if choice.admin_access:
            return
        self.taken[device.id] = key
        if device.consumes:
            mine = self.consumed.setdefault(device.pool.label, {})
            for counter, amount in device.consumes:
                mine[counter] = mine.get(counter, Fraction(0)) + amount

    def _remove(self, unit: Unit, choice: Choice, device: Device) -> None:
        self.picks[unit.job.claim.key].pop()
        if choice.admin_access:
            return
        del self.taken[device.id]
        if device.consumes:
            mine = self.consumed[device.pool.label]
            for counter, amount in device.consumes:
                mine[counter] -= amount


def attribute(device: Device, name: str) -> tuple[str, object] | None:
    """A device's attribute for a constraint, typed: the fully qualified name, or the bare
    ID when the domain is the device's driver (kube-scheduler's lookupAttribute)."""
    attributes = device.spec.attributes
    found = attributes.get(name)
    if found is None:
        domain, _, ident = name.partition("/")
        if domain != device.driver:
            return None
        found = attributes.get(ident)
        if found is None:
            return None
    if found.string_value is not None:
        return ("string", found.string_value)
    if found.int_value is not None:
        return ("int", found.int_value)
    if found.bool_value is not None:
        return ("bool", found.bool_value)
    if found.version_value is not None:
        return ("version", found.version_value)
    return None


def matching(
    slots: list[tuple[Unit, list[Device]]],
    tick: Callable[[], None],
    check: Callable[[Unit, Device], None],
) -> list[Device] | None:
    """A distinct device for every slot (augmenting paths, slot by slot in order, each
    trying its candidates in order: a slot alone gets its first free candidate), or None.
    `check` sees every device before it is taken free (it raises for one that cannot be)."""
    owner: dict[int, int] = {}
    chosen: list[Device | None] = [None] * len(slots)
    for start in range(len(slots)):
        reached: dict[int, int] = {}
        devices: dict[int, Device] = {}
        queue = deque([start])
        visited = {start}
        found: int | None = None
        while queue and found is None:
            slot = queue.popleft()
            unit, candidates = slots[slot]
            for device in candidates:
                tick()
                order = device.order
                if order in reached:
                    continue
                reached[order] = slot
                devices[order] = device
                holder = owner.get(order)
                if holder is None:
                    check(unit, device)
                    found = order
                    break
                if holder not in visited:
                    visited.add(holder)
                    queue.append(holder)
        if found is None:
            return None
        # Along the path back to the start, each slot takes the device that reached it.
        order = found
        while True:
            slot = reached[order]
            previous = chosen[slot]
            chosen[slot] = devices[order]
            owner[order] = slot
            if slot == start or previous is None:
                break
            order = previous.order
    return [device for device in chosen if device is not None]
