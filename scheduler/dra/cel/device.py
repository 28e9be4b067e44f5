"""The `device` variable a selector reads, built as kube-scheduler builds it: driver;
attributes and capacity by domain, an unqualified name under the driver's domain, an
unknown domain an empty map; allowMultipleAllocations.

Most class selectors read the driver alone (`device.driver == "gpu.example.com"`), and
building the attribute and capacity maps is most of an evaluation's cost: for a selector
that reads only the plain fields (`Selector.reads_maps`), `device_fields` builds those
alone, and the answer is the same for every device with the same fields, once
`unrepresentable` finds no attribute that fails every selector."""

from __future__ import annotations

from typing import Any

import celpy.celtypes as ct

from scheduler.api import dra
from scheduler.api.quantity import parse_quantity
from scheduler.dra.cel.errors import SelectorError
from scheduler.dra.cel.library.quantity import Quantity
from scheduler.dra.cel.library.semver import parse_semver


def device_value(driver: str, device: dra.Device) -> Any:
    """The `device` variable kube-scheduler builds for one device, or a SelectorError (a
    value, not raised) when an attribute cannot be represented: kube-scheduler then fails
    every selector evaluated on the device, naming the attribute."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, attribute in device.attributes.items():
        value = _attribute_value(attribute)
        if isinstance(value, SelectorError):
            return SelectorError(f"attribute {name}: {value}")
        domain, ident = split_name(name, driver)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, Any]] = {}
    for name, entry in device.capacity.items():
        domain, ident = split_name(name, driver)
        capacity.setdefault(domain, {})[ident] = Quantity(parse_quantity(entry.value))
    return ct.MapType(
        {
            **_fields(driver, device),
            ct.StringType("attributes"): _domains(attributes),
            ct.StringType("capacity"): _domains(capacity),
        }
    )


def unrepresentable(device: dra.Device) -> SelectorError | None:
    """What `device_value` answers for a device with an attribute muster cannot represent,
    found without building the maps; None for a device without one."""
    for name, attribute in device.attributes.items():
        if attribute.version_value is not None or (
            attribute.int_value is None
            and attribute.bool_value is None
            and attribute.string_value is None
        ):
            value = _attribute_value(attribute)
            if isinstance(value, SelectorError):
                return SelectorError(f"attribute {name}: {value}")
    return None


def device_fields(driver: str, device: dra.Device) -> Any:
    """The `device` variable with its plain fields alone, for a selector that reads
    neither attributes nor capacity (its answer is the same for every device with these
    fields and no attribute `unrepresentable` names)."""
    return ct.MapType(_fields(driver, device))


def _fields(driver: str, device: dra.Device) -> dict[Any, Any]:
    return {
        ct.StringType("driver"): ct.StringType(driver),
        ct.StringType("allowMultipleAllocations"): ct.BoolType(
            bool(device.allow_multiple_allocations)
        ),
    }


def split_name(name: str, driver: str) -> tuple[str, str]:
    """A qualified name's domain and ID; an unqualified name is in the driver's domain."""
    domain, slash, ident = name.partition("/")
    return (domain, ident) if slash else (driver, name)


def _attribute_value(attribute: dra.DeviceAttribute) -> Any:
    if attribute.int_value is not None:
        return ct.IntType(attribute.int_value)
    if attribute.bool_value is not None:
        return ct.BoolType(attribute.bool_value)
    if attribute.string_value is not None:
        return ct.StringType(attribute.string_value)
    if attribute.version_value is not None:
        try:
            return parse_semver(attribute.version_value)
        except ValueError as problem:
            return SelectorError(f"parse semantic version: {problem}")
    return SelectorError("unsupported attribute value")


class _DomainMap(ct.MapType):
    """device.attributes and device.capacity: an unknown domain is an empty map, as
    kube-scheduler's mapper answers (a missing name inside it is still an error)."""

    def __getitem__(self, key: Any) -> Any:
        if key in self:
            return super().__getitem__(key)
        if not isinstance(key, ct.StringType | str):
            return super().__getitem__(key)
        return ct.MapType()

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key]


def _domains(values: dict[str, dict[str, Any]]) -> _DomainMap:
    return _DomainMap(
        {
            ct.StringType(domain): ct.MapType({ct.StringType(k): v for k, v in names.items()})
            for domain, names in values.items()
        }
    )
