"""Built-in objects decoded as kube-apiserver decodes them into its Go types.

kube-apiserver unmarshals a request body into the kind's Go struct before defaulting,
admission or validation; a JSON value of the wrong type (a string where a list of
containers belongs, a number where a label value belongs) fails there with a 400, "Pod in
version "v1" cannot be handled as a Pod: json: cannot unmarshal ...". sim keeps bodies as
JSON, so it checks their types here, against the official client's models (each model's
`openapi_types` is the Go struct's field types, `attribute_map` its JSON names). Fields the
models do not know are left alone: they are newer than the client, not wrong.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from kubernetes.client import models

from muster_sim.errors import bad_request

# Go's names for the JSON value kinds, as its decoder words its errors.
_JSON_KIND = {dict: "object", list: "array", str: "string", bool: "bool", int: "number"}
# Models named otherwise than "<Version><Kind>".
_MODEL_OVERRIDES = {
    ("v1", "Event"): "CoreV1Event",
    ("events.k8s.io/v1", "Event"): "EventsV1Event",
    ("resource.k8s.io/v1", "ResourceClaim"): "ResourceV1ResourceClaim",
}
# resource.Quantity fields: the client types them as strings; the server also takes numbers.
_QUANTITY_FIELDS = frozenset(
    {
        "requests",
        "limits",
        "capacity",
        "allocatable",
        "overhead",
        "hard",
        "used",
        "size_limit",
        "allocated_resources",
        "default",
        "default_request",
        "max",
        "min",
        "max_limit_request_ratio",
        "maximum_volume_size",
    }
)
# Quantity fields whose name other models use for plain strings (a toleration's value).
_QUANTITY_MODEL_FIELDS = frozenset(
    {
        ("V1DeviceCapacity", "value"),
        ("V1Counter", "value"),
        ("V1CapacityRequestPolicy", "valid_values"),
        ("V1CapacityRequestPolicyRange", "step"),
        ("V1DeviceRequestAllocationResult", "consumed_capacity"),
    }
)
_LIST = re.compile(r"^List\[(.+)\]$")
_DICT = re.compile(r"^Dict\[str, (.+)\]$")


def check(kind: str, api_version: str, obj: dict[str, Any]) -> None:
    """Raise a 400 naming the first value whose JSON type the kind's Go struct refuses."""
    model = _model(kind, api_version)
    if model is None:
        return
    problem = _problem(obj, model.__name__, "", kind, False)
    if problem is not None:
        raise bad_request(
            f'{kind} in version "{api_version.rsplit("/", 1)[-1]}" cannot be '
            f"handled as a {kind}: json: {problem}"
        )


def _model(kind: str, api_version: str) -> type | None:
    name = _MODEL_OVERRIDES.get((api_version, kind))
    if name is None:
        version = api_version.rsplit("/", 1)[-1]
        name = f"{version[:1].upper()}{version[1:]}{kind}"
    found = getattr(models, name, None)
    return found if isinstance(found, type) and hasattr(found, "openapi_types") else None


@functools.cache
def _shape(type_name: str) -> tuple[str, Any]:
    """What a client type string asks of a JSON value, worked out once per type string (this
    runs on every write sim takes): ("list" | "dict", element type), ("model", {JSON name:
    (field type, is a quantity)}), a scalar's name, or ("any", None) for free-form fields
    and types this client does not describe."""
    if (item := _LIST.match(type_name)) is not None:
        return ("list", item.group(1))
    if (item := _DICT.match(type_name)) is not None:
        return ("dict", item.group(1))
    if type_name in ("str", "datetime", "date"):
        return ("str", None)
    if type_name in ("int", "float", "bool"):
        return (type_name, None)
    model = getattr(models, type_name, None)
    if type_name == "object" or model is None or not hasattr(model, "openapi_types"):
        return ("any", None)  # IntOrString, RawExtension, or nothing to check against
    fields = {
        json_name: (
            model.openapi_types[attr],
            attr in _QUANTITY_FIELDS or (type_name, attr) in _QUANTITY_MODEL_FIELDS,
        )
        for attr, json_name in model.attribute_map.items()
    }
    return ("model", fields)


def _problem(value: Any, type_name: str, path: str, struct: str, quantity: bool) -> str | None:
    """The decoder's complaint about `value` as a `type_name`, or None when it decodes."""
    if value is None:
        return None  # null decodes to the zero value of any Go type
    shape, detail = _shape(type_name)
    if shape == "any":
        return None
    if shape == "model":
        if not isinstance(value, dict):
            return _refused(value, path, struct, _go_name(type_name))
        # Go's decoder names the innermost struct that has the field, and the whole path
        inner = _struct_name(type_name)
        for key, field_value in value.items():
            field = detail.get(key)
            if field is None:
                continue
            problem = _problem(field_value, field[0], f"{path}.{key}", inner, field[1])
            if problem is not None:
                return problem
        return None
    if shape == "list" or shape == "dict":
        wanted = list if shape == "list" else dict
        if not isinstance(value, wanted):
            prefix = "[]" if shape == "list" else "map[string]"
            return _refused(value, path, struct, prefix + _go_name(detail))
        elements = value if isinstance(value, list) else list(value.values())
        for element in elements:
            problem = _problem(element, detail, path, struct, quantity)
            if problem is not None:
                return problem
        return None
    if shape == "str":
        if isinstance(value, str) or (
            quantity and isinstance(value, int | float) and not isinstance(value, bool)
        ):
            return None
        return _refused(value, path, struct, "string")
    if shape == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return None
        if isinstance(value, float):
            return (
                f"cannot unmarshal number {value!r} into Go struct field {struct}{path} of type int"
            )
        return _refused(value, path, struct, "int")
    if shape == "float":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return None
        return _refused(value, path, struct, "float64")
    return None if isinstance(value, bool) else _refused(value, path, struct, "bool")


def _refused(value: Any, path: str, struct: str, go_type: str) -> str:
    json_kind = _JSON_KIND.get(type(value), "number")
    return f"cannot unmarshal {json_kind} into Go struct field {struct}{path} of type {go_type}"


def _struct_name(type_name: str) -> str:
    """ "V1PodSpec" -> "PodSpec", "ResourceV1ResourceClaim" -> "ResourceClaim": the Go type's
    own name."""
    match = re.match(r"^(?:[A-Z][a-z]+)?V\d+(?:alpha\d+|beta\d+)?(.+)$", type_name)
    return type_name if match is None else match.group(1)


def _go_name(type_name: str) -> str:
    """ "V1Container" -> "v1.Container", as Go names the struct in its errors."""
    match = re.match(r"^(V\d+(?:alpha\d+|beta\d+)?)(.+)$", type_name)
    if match is None:
        return type_name
    return f"{match.group(1).lower()}.{match.group(2)}"
