"""Why a pod's claims cannot be had on a node, in muster's words after kube-scheduler's: the
claim, the request and its class, how many devices match there and how many of those are
free, the devices that would match but need what muster does not honour; else why the
search failed (its step bound, too few devices together, constraints and counters)."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.dra.fit import CANNOT_ALLOCATE, INVALID_POOLS, DeviceFit, Verdict
from scheduler.dra.holdings import Holdings
from scheduler.dra.inventory import INVALID, Inventory
from scheduler.dra.search import Unit


@dataclass(slots=True)
class SearchFailure:
    """A search that found no devices: whether it hit its step bound, or was short of
    devices before any choice (else the constraints and counters refused every choice)."""

    exhausted: bool = False
    short: bool = False
    steps: int = 0


def failure_fit(
    failure: SearchFailure,
    units: list[Unit],
    node: str,
    holdings: Holdings,
    inventory: Inventory,
    steps_left: int,
) -> DeviceFit:
    """The node's verdict for the searched claims, with the first request short alone
    named, else the search's reason."""
    detail = next((text for unit in units if (text := shortage(unit, node, holdings))), "")
    if not detail:
        if failure.exhausted:
            detail = (
                f"the search for devices gave up after {failure.steps} steps (its bound; "
                f"{max(steps_left, 0)} left in this session)"
            )
        elif failure.short:
            detail = "the claims' requests need more devices together than match and are free"
        else:
            detail = "no choice of free devices meets the claims' constraints and counters"
    if any(pool.state == INVALID for pool in inventory.pools_on(node)):
        return DeviceFit(Verdict.NODE, INVALID_POOLS, detail)
    return DeviceFit(Verdict.NODE, CANNOT_ALLOCATE, detail)


def shortage(unit: Unit, node: str, holdings: Holdings) -> str:
    """muster's words for a request that cannot be met alone on the node, or ""."""
    key = unit.job.claim.key
    parts = []
    for choice, candidates in unit.choices:
        devices = [d for d in candidates if d.order not in unit.poison]
        free = sum(
            1
            for d in devices
            if d.order not in unit.blocked
            and (choice.admin_access or holdings.holder(d.id) in (None, key))
        )
        need = len(devices) if choice.all_devices else choice.count
        if (choice.all_devices and devices and free == need) or (
            not choice.all_devices and free >= need
        ):
            return ""
        where = ", ".join(unit.job.nodes)
        part = (
            f"request {choice.name} (class {choice.device_class}) needs "
            f"{'all' if choice.all_devices else need}: {len(devices)} "
            f"{'device matches' if len(devices) == 1 else 'devices match'} its selectors "
            f"on {'node' if len(unit.job.nodes) == 1 else 'nodes'} {where}, {free} of them free"
        )
        refused = unit.refused.get(choice.name, [])
        if refused:
            part += (
                f" ({len(refused)} more would match but need "
                f"{' and '.join(sorted(set(refused)))}, which muster does not honour yet)"
            )
        parts.append(part)
    return f"claim {key}, " + "; ".join(parts)
