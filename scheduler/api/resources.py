"""Resource vectors (cpu, memory and any extended resource) and their arithmetic."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from scheduler.api.errors import InvalidObject, InvalidQuantity
from scheduler.api.quantity import format_bytes, format_milli, int_value, milli_value

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
# hugepages-<page size>: a resource per page size, counted in bytes.
HUGEPAGES_PREFIX = "hugepages-"

_IGNORED = frozenset({PODS})
# A queue's count of devices of a DeviceClass (DRA), as Volcano 1.15's queues key it:
# `deviceclass/<class name>`. Pods' requests carry it for their claims (queues count it
# against capability, deserved and guarantee); no node has it: devices are placed by the
# device filter (nodefit/dynamicresources.py), so node fit never reads it.
DEVICE_CLASS_PREFIX = "deviceclass/"
# What an unnamed cpu or memory dimension of a limit (queue capability) means.
UNLIMITED = 2**62
# The extended resources of a vector that has none: most vectors (every node holds five,
# every pod's request is one) share this read-only empty mapping instead of an empty dict
# of 64 bytes each; a vector makes a dict of its own on its first write (_own_scalars).
_NO_SCALARS: Mapping[str, int] = MappingProxyType({})


class Resource:
    """A vector of resources: millicores of cpu, bytes of memory, integers of the rest.

    `pods` is not part of the vector: kube-scheduler counts pods per node
    separately (the max-pods predicate), and so does muster.
    """

    __slots__ = ("cpu", "memory", "scalars")

    def __init__(
        self, cpu: int = 0, memory: int = 0, scalars: dict[str, int] | None = None
    ) -> None:
        self.cpu = cpu
        self.memory = memory
        self.scalars: Mapping[str, int] = scalars if scalars is not None else _NO_SCALARS

    def _own_scalars(self) -> dict[str, int]:
        """This vector's extended resources as a dict it may write to."""
        scalars = self.scalars
        if isinstance(scalars, dict):
            return scalars
        owned = dict(scalars)
        self.scalars = owned
        return owned

    @classmethod
    def from_list(
        cls,
        values: Mapping[str, Any] | None,
        *,
        kind: str = "object",
        name: str = "",
        field: str = "resources",
    ) -> Resource:
        """A vector from a Kubernetes ResourceList ({"cpu": "500m", "memory": "1Gi", ...})."""
        result = Resource()
        if not values:
            return result
        for key, raw in values.items():
            if key in _IGNORED:
                continue
            try:
                value = milli_value(raw) if key == CPU else int_value(raw)
            except InvalidQuantity as error:
                raise InvalidObject(kind, name, f"{field}.{key}", raw, error.problem) from None
            if value < 0:
                # The API server refuses negative requests and capacities; so do we.
                raise InvalidObject(kind, name, f"{field}.{key}", raw, "must be 0 or more")
            if key == CPU:
                result.cpu = value
            elif key == MEMORY:
                result.memory = value
            else:
                result._own_scalars()[key] = value
        return result

    def clone(self) -> Resource:
        """An independent copy."""
        return Resource(self.cpu, self.memory, dict(self.scalars) if self.scalars else None)

    def is_empty(self) -> bool:
        """True when every dimension is zero (a best-effort request)."""
        return self.cpu == 0 and self.memory == 0 and not any(self.scalars.values())

    def names(self) -> set[str]:
        """The dimensions this vector holds a non-zero value for."""
        names = {key for key, value in self.scalars.items() if value}
        if self.cpu:
            names.add(CPU)
        if self.memory:
            names.add(MEMORY)
        return names

    def get(self, name: str) -> int:
        """One dimension's value; a missing dimension is zero."""
        if name == CPU:
            return self.cpu
        if name == MEMORY:
            return self.memory
        return self.scalars.get(name, 0)

    def set(self, name: str, value: int) -> None:
        """Set one dimension's value."""
        if name == CPU:
            self.cpu = value
        elif name == MEMORY:
            self.memory = value
        else:
            self._own_scalars()[name] = value

    # In-place arithmetic: the session mutates node and queue accounting in
    # the hot path, where allocating a new vector per operation shows up.
    def add(self, other: Resource) -> Resource:
        """Add other into self; returns self."""
        self.cpu += other.cpu
        self.memory += other.memory
        added = other.scalars
        if added:
            scalars = self._own_scalars()
            # A non-empty vector's are a dict (see _NO_SCALARS): read as one, which the
            # compiled core walks without the generic mapping protocol.
            for key, value in (added if isinstance(added, dict) else dict(added)).items():
                scalars[key] = scalars.get(key, 0) + value
        return self

    def sub(self, other: Resource) -> Resource:
        """Subtract other from self; returns self. Callers check fits first."""
        self.cpu -= other.cpu
        self.memory -= other.memory
        taken = other.scalars
        if taken:
            scalars = self._own_scalars()
            for key, value in (taken if isinstance(taken, dict) else dict(taken)).items():
                scalars[key] = scalars.get(key, 0) - value
        return self

    def __add__(self, other: Resource) -> Resource:
        return self.clone().add(other)

    def __sub__(self, other: Resource) -> Resource:
        return self.clone().sub(other)

    def multiply(self, factor: float) -> Resource:
        """A new vector scaled by factor, rounded down."""
        return Resource(
            int(self.cpu * factor),
            int(self.memory * factor),
            {key: int(value * factor) for key, value in self.scalars.items()},
        )

    def less_equal(self, other: Resource, *, missing_is_infinite: bool = False) -> bool:
        """Every dimension of self is at most other's.

        An extended resource other does not name counts as zero, or as
        unlimited with `missing_is_infinite` (Volcano's rule for a queue
        capability that names only some resources; `limit_from_list` gives
        such a vector UNLIMITED cpu and memory when it does not name them).
        """
        if self.cpu > other.cpu or self.memory > other.memory:
            return False
        for key, value in self.scalars.items():
            if value <= 0:
                continue
            limit = other.scalars.get(key)
            if limit is None:
                if missing_is_infinite:
                    continue
                return False
            if value > limit:
                return False
        return True

    def fits_in(self, available: Resource) -> bool:
        """This request fits in the available vector (a missing dimension there is zero);
        a node's room: device counts (DEVICE_CLASS_PREFIX) are not asked."""
        # A dimension the request does not use never refuses it, even on a node
        # whose idle went negative (pods bound by another scheduler), as in kube.
        if (self.cpu > 0 and self.cpu > available.cpu) or (
            self.memory > 0 and self.memory > available.memory
        ):
            return False
        if self.scalars:
            other = available.scalars
            for key, value in self.scalars.items():
                if (
                    value > 0
                    and value > other.get(key, 0)
                    and not key.startswith(DEVICE_CLASS_PREFIX)
                ):
                    return False
        return True

    def insufficient(self, available: Resource) -> list[str]:
        """The dimensions in which this request exceeds available, in a stable order."""
        names = []
        if self.cpu > 0 and self.cpu > available.cpu:
            names.append(CPU)
        if self.memory > 0 and self.memory > available.memory:
            names.append(MEMORY)
        for key in sorted(self.scalars):
            value = self.scalars[key]
            if value > 0 and value > available.scalars.get(key, 0):
                names.append(key)
        return names

    def without_devices(self) -> Resource:
        """A copy without the device counts (DEVICE_CLASS_PREFIX), or this vector when it
        has none."""
        if not any(key.startswith(DEVICE_CLASS_PREFIX) for key in self.scalars):
            return self
        return Resource(
            self.cpu,
            self.memory,
            {k: v for k, v in self.scalars.items() if not k.startswith(DEVICE_CLASS_PREFIX)},
        )

    def minimum(self, other: Resource) -> Resource:
        """A new vector with the smaller value of each dimension (missing is zero)."""
        keys = set(self.scalars) | set(other.scalars)
        return Resource(
            min(self.cpu, other.cpu),
            min(self.memory, other.memory),
            {key: min(self.scalars.get(key, 0), other.scalars.get(key, 0)) for key in keys},
        )

    def capped(self, limit: Resource | None) -> Resource:
        """A new vector with each dimension at most the limit's, where a dimension the
        limit does not name is unlimited (Volcano's rule for capability and deserved).

        `limit_from_list` already makes unnamed cpu and memory UNLIMITED; an extended
        resource the limit does not list keeps this vector's value."""
        if limit is None:
            return self.clone()
        scalars = {
            key: min(value, limit.scalars[key]) if key in limit.scalars else value
            for key, value in self.scalars.items()
        }
        return Resource(min(self.cpu, limit.cpu), min(self.memory, limit.memory), scalars)

    def maximum(self, other: Resource) -> Resource:
        """A new vector with the larger value of each dimension (missing is zero)."""
        keys = set(self.scalars) | set(other.scalars)
        return Resource(
            max(self.cpu, other.cpu),
            max(self.memory, other.memory),
            {key: max(self.scalars.get(key, 0), other.scalars.get(key, 0)) for key in keys},
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        if self.cpu != other.cpu or self.memory != other.memory:
            return False
        keys = set(self.scalars) | set(other.scalars)
        return all(self.scalars.get(k, 0) == other.scalars.get(k, 0) for k in keys)

    def __hash__(self) -> int:
        return hash(
            (self.cpu, self.memory, frozenset((k, v) for k, v in self.scalars.items() if v))
        )

    def to_list(self) -> dict[str, str]:
        """The vector as a Kubernetes ResourceList, for statuses."""
        result: dict[str, str] = {}
        if self.cpu:
            result[CPU] = format_milli(self.cpu)
        if self.memory:
            result[MEMORY] = format_bytes(self.memory)
        for key in sorted(self.scalars):
            if self.scalars[key]:
                result[key] = str(self.scalars[key])
        return result

    def __repr__(self) -> str:
        parts = [f"{key}={value}" for key, value in self.to_list().items()]
        return f"Resource({', '.join(parts)})"


def is_device_count(name: str) -> bool:
    """Whether a resource name is a queue's count of a DeviceClass's devices."""
    return name.startswith(DEVICE_CLASS_PREFIX)


def total(resources: Iterable[Resource]) -> Resource:
    """The sum of many vectors."""
    result = Resource()
    for resource in resources:
        result.add(resource)
    return result


def limit_from_list(
    values: Mapping[str, Any] | None, *, kind: str, name: str, field: str
) -> Resource | None:
    """A limit vector (queue capability): None when absent, unnamed cpu/memory unlimited."""
    if not values:
        return None
    limit = Resource.from_list(values, kind=kind, name=name, field=field)
    if CPU not in values:
        limit.cpu = UNLIMITED
    if MEMORY not in values:
        limit.memory = UNLIMITED
    return limit


def describe(resource: Resource) -> str:
    """A resource vector in a message's words: "cpu 4, memory 8Gi", "cpu unlimited"."""
    listed = resource.to_list()
    parts = [
        f"{key} unlimited" if resource.get(key) >= UNLIMITED else f"{key} {value}"
        for key, value in listed.items()
    ]
    return ", ".join(parts) if parts else "nothing"


def shortfall(need: Resource, held: Resource) -> Resource:
    """What of `need` is not yet covered by `held`, per dimension, never below zero."""
    cpu = need.cpu - held.cpu
    memory = need.memory - held.memory
    scalars = need.scalars
    return Resource(
        cpu if cpu > 0 else 0,
        memory if memory > 0 else 0,
        {key: max(value - held.scalars.get(key, 0), 0) for key, value in scalars.items()}
        if scalars
        else None,
    )


def share_of(allocated: Resource, deserved: Resource) -> float:
    """Volcano's share: the largest allocated/deserved over the dimensions allocated
    (1 where something is allocated and nothing deserved)."""
    result = 0.0
    pairs = [(allocated.cpu, deserved.cpu), (allocated.memory, deserved.memory)]
    pairs.extend((value, deserved.scalars.get(key, 0)) for key, value in allocated.scalars.items())
    for used, limit in pairs:
        if used > 0:
            result = max(result, used / limit if limit > 0 else 1.0)
    return result
