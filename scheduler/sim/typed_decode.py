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

import re
from typing import Any

from kubernetes.client import models

from scheduler.sim.errors import bad_request

# Go's names for the JSON value kinds, as its decoder words its errors.
_JSON_KIND = {dict: "object", list: "array", str: "string", bool: "bool", int: "number"}
# Models named otherwise than "<Version><Kind>".
_MODEL_OVERRIDES = {("v1", "Event"): "CoreV1Event", ("events.k8s.io/v1", "Event"): "EventsV1Event"}
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


def _problem(value: Any, type_name: str, path: str, struct: str, quantity: bool) -> str | None:
    """The decoder's complaint about `value` as a `type_name`, or None when it decodes."""
    if value is None:
        return None  # null decodes to the zero value of any Go type
    if (item := _LIST.match(type_name)) is not None:
        if not isinstance(value, list):
            return _refused(value, path, struct, "[]" + _go_name(item.group(1)))
        for element in value:
            problem = _problem(element, item.group(1), path, struct, quantity)
            if problem is not None:
                return problem
        return None
    if (item := _DICT.match(type_name)) is not None:
        if not isinstance(value, dict):
            return _refused(value, path, struct, "map[string]" + _go_name(item.group(1)))
        for element in value.values():
            problem = _problem(element, item.group(1), path, struct, quantity)
            if problem is not None:
                return problem
        return None
    if type_name == "object":
        return None  # IntOrString, RawExtension and other free-form fields
    if type_name in ("str", "datetime", "date"):
        if isinstance(value, str) or (
            quantity and isinstance(value, int | float) and not isinstance(value, bool)
        ):
            return None
        return _refused(value, path, struct, "string")
    if type_name == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return None
        if isinstance(value, float):
            return (
                f"cannot unmarshal number {value!r} into Go struct field {struct}{path} of type int"
            )
        return _refused(value, path, struct, "int")
    if type_name == "float":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return None
        return _refused(value, path, struct, "float64")
    if type_name == "bool":
        return None if isinstance(value, bool) else _refused(value, path, struct, "bool")
    model = getattr(models, type_name, None)
    if model is None or not hasattr(model, "openapi_types"):
        return None  # a type this client does not describe: nothing to check against
    if not isinstance(value, dict):
        return _refused(value, path, struct, _go_name(type_name))
    by_json = {json_name: attr for attr, json_name in model.attribute_map.items()}
    for key, field_value in value.items():
        attr = by_json.get(key)
        if attr is None:
            continue
        problem = _problem(
            field_value,
            model.openapi_types[attr],
            f"{path}.{key}",
            struct,
            attr in _QUANTITY_FIELDS,
        )
        if problem is not None:
            return problem
    return None


def _refused(value: Any, path: str, struct: str, go_type: str) -> str:
    json_kind = _JSON_KIND.get(type(value), "number")
    return f"cannot unmarshal {json_kind} into Go struct field {struct}{path} of type {go_type}"


def _go_name(type_name: str) -> str:
    """ "V1Container" -> "v1.Container", as Go names the struct in its errors."""
    match = re.match(r"^(V\d+(?:alpha\d+|beta\d+)?)(.+)$", type_name)
    if match is None:
        return type_name
    return f"{match.group(1).lower()}.{match.group(2)}"
