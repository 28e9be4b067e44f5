"""A value as kube-apiserver prints it inside a field error: json.Marshal of its internal Go
struct, so Go's field names, every field (nil as null), map keys sorted and `<`, `>`, `&`
escaped. "field is immutable" answers for a claim's spec or allocation print the whole
struct, so sim draws them from the shapes below."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from muster_sim.validation.object_meta import OBJECT_META_FIELDS

Obj = dict[str, Any]


@dataclass(frozen=True)
class Field:
    """One field of a Go struct: its JSON name in the v1 object, its Go name, its shape; an
    embedded struct (Go name "") has its fields printed inline."""

    json_name: str
    go_name: str
    shape: Shape


@dataclass(frozen=True)
class Shape:
    """What a value is in Go: "struct" (fields), "ptr"/"list"/"map" (of `element`), a scalar
    ("string", "int", "bool"), "quantity", "raw" (a RawExtension: its JSON as sent) or "meta"
    (an embedded metav1.ObjectMeta, which keeps its JSON tags)."""

    kind: str
    fields: tuple[Field, ...] = ()
    element: Shape | None = None


STRING = Shape("string")
INT = Shape("int")
BOOL = Shape("bool")
QUANTITY = Shape("quantity")
RAW = Shape("raw")
META = Shape("meta")


def struct(*fields: tuple[str, str, Shape]) -> Shape:
    """A struct of (JSON name, Go name, shape) fields, in Go's order."""
    return Shape("struct", tuple(Field(*f) for f in fields))


def ptr(element: Shape) -> Shape:
    """A pointer: null when the field is absent."""
    return Shape("ptr", element=element)


def list_of(element: Shape) -> Shape:
    """A slice: null when absent, [] when sent empty."""
    return Shape("list", element=element)


def map_of(element: Shape) -> Shape:
    """A map with string keys, printed sorted by key."""
    return Shape("map", element=element)


def go_json(value: Any, shape: Shape) -> str:
    """`value` (decoded v1 JSON) printed as json.Marshal prints the internal Go value."""
    return _escape_html(_render(value, shape))


def _render(value: Any, shape: Shape) -> str:
    kind = shape.kind
    if kind == "ptr":
        assert shape.element is not None
        return "null" if value is None else _render(value, shape.element)
    if kind in ("list", "map"):
        assert shape.element is not None
        if value is None:
            return "null"
        if kind == "list":
            return "[" + ",".join(_render(v, shape.element) for v in value) + "]"
        items = sorted(value.items())
        return "{" + ",".join(f"{_text(k)}:{_render(v, shape.element)}" for k, v in items) + "}"
    if kind == "struct":
        return "{" + ",".join(_members(value if isinstance(value, dict) else {}, shape)) + "}"
    if kind == "meta":
        meta = value if isinstance(value, dict) else {}
        present = [k for k in OBJECT_META_FIELDS if meta.get(k) not in (None, "", {}, [])]
        return "{" + ",".join(f"{_text(k)}:{_plain(meta[k])}" for k in present) + "}"
    if kind == "raw":
        return "null" if value is None else _plain(value, sort_keys=False)
    if kind == "int":
        return str(int(value or 0))
    if kind == "bool":
        return "true" if value else "false"
    return _text(str(value if value is not None else ""))


def _members(value: Obj, shape: Shape) -> list[str]:
    members: list[str] = []
    for field in shape.fields:
        if not field.go_name:
            # an embedded struct: its fields are the outer struct's in JSON
            if field.shape.kind == "meta":
                inner = _render(value.get(field.json_name), field.shape)[1:-1]
                if inner:
                    members.append(inner)
            else:
                members.extend(_members(value, field.shape))
            continue
        members.append(f"{_text(field.go_name)}:{_render(value.get(field.json_name), field.shape)}")
    return members


def _text(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _plain(value: Any, sort_keys: bool = True) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)


def _escape_html(text: str) -> str:
    # encoding/json's default HTMLEscape, and the two line separators it escapes too
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


# -- the internal types of pkg/apis/resource -----------------------------------

_CEL = struct(("expression", "Expression", STRING))
_SELECTOR = struct(("cel", "CEL", ptr(_CEL)))
_TOLERATION = struct(
    ("key", "Key", STRING),
    ("operator", "Operator", STRING),
    ("value", "Value", STRING),
    ("effect", "Effect", STRING),
    ("tolerationSeconds", "TolerationSeconds", ptr(INT)),
)
_CAPACITY = struct(("requests", "Requests", map_of(QUANTITY)))
_EXACT = struct(
    ("deviceClassName", "DeviceClassName", STRING),
    ("selectors", "Selectors", list_of(_SELECTOR)),
    ("allocationMode", "AllocationMode", STRING),
    ("count", "Count", INT),
    ("adminAccess", "AdminAccess", ptr(BOOL)),
    ("tolerations", "Tolerations", list_of(_TOLERATION)),
    ("capacity", "Capacity", ptr(_CAPACITY)),
)
_SUBREQUEST = struct(
    ("name", "Name", STRING),
    ("deviceClassName", "DeviceClassName", STRING),
    ("selectors", "Selectors", list_of(_SELECTOR)),
    ("allocationMode", "AllocationMode", STRING),
    ("count", "Count", INT),
    ("tolerations", "Tolerations", list_of(_TOLERATION)),
    ("capacity", "Capacity", ptr(_CAPACITY)),
)
_REQUEST = struct(
    ("name", "Name", STRING),
    ("exactly", "Exactly", ptr(_EXACT)),
    ("firstAvailable", "FirstAvailable", list_of(_SUBREQUEST)),
)
_OPAQUE = struct(("driver", "Driver", STRING), ("parameters", "Parameters", RAW))
_CONFIGURATION = struct(("opaque", "Opaque", ptr(_OPAQUE)))
_CONSTRAINT = struct(
    ("requests", "Requests", list_of(STRING)),
    ("matchAttribute", "MatchAttribute", ptr(STRING)),
    ("distinctAttribute", "DistinctAttribute", ptr(STRING)),
)
_CLAIM_CONFIG = struct(("requests", "Requests", list_of(STRING)), ("", "", _CONFIGURATION))
CLAIM_SPEC = struct(
    (
        "devices",
        "Devices",
        struct(
            ("requests", "Requests", list_of(_REQUEST)),
            ("constraints", "Constraints", list_of(_CONSTRAINT)),
            ("config", "Config", list_of(_CLAIM_CONFIG)),
        ),
    )
)
TEMPLATE_SPEC = struct(("metadata", "", META), ("spec", "Spec", CLAIM_SPEC))

_NODE_REQUIREMENT = struct(
    ("key", "Key", STRING), ("operator", "Operator", STRING), ("values", "Values", list_of(STRING))
)
_NODE_TERM = struct(
    ("matchExpressions", "MatchExpressions", list_of(_NODE_REQUIREMENT)),
    ("matchFields", "MatchFields", list_of(_NODE_REQUIREMENT)),
)
NODE_SELECTOR_TERMS = list_of(_NODE_TERM)
_RESULT = struct(
    ("request", "Request", STRING),
    ("driver", "Driver", STRING),
    ("pool", "Pool", STRING),
    ("device", "Device", STRING),
    ("adminAccess", "AdminAccess", ptr(BOOL)),
    ("tolerations", "Tolerations", list_of(_TOLERATION)),
    ("bindingConditions", "BindingConditions", list_of(STRING)),
    ("bindingFailureConditions", "BindingFailureConditions", list_of(STRING)),
    ("shareID", "ShareID", ptr(STRING)),
    ("consumedCapacity", "ConsumedCapacity", map_of(QUANTITY)),
)
_ALLOCATION_CONFIG = struct(
    ("source", "Source", STRING),
    ("requests", "Requests", list_of(STRING)),
    ("", "", _CONFIGURATION),
)
ALLOCATION = struct(
    (
        "devices",
        "Devices",
        struct(
            ("results", "Results", list_of(_RESULT)),
            ("config", "Config", list_of(_ALLOCATION_CONFIG)),
        ),
    ),
    (
        "nodeSelector",
        "NodeSelector",
        ptr(struct(("nodeSelectorTerms", "NodeSelectorTerms", NODE_SELECTOR_TERMS))),
    ),
    ("allocationTimestamp", "AllocationTimestamp", ptr(STRING)),
)
_ATTRIBUTE = struct(
    ("int", "IntValue", ptr(INT)),
    ("bool", "BoolValue", ptr(BOOL)),
    ("string", "StringValue", ptr(STRING)),
    ("version", "VersionValue", ptr(STRING)),
    ("ints", "IntValues", list_of(INT)),
    ("bools", "BoolValues", list_of(BOOL)),
    ("strings", "StringValues", list_of(STRING)),
    ("versions", "VersionValues", list_of(STRING)),
)
ATTRIBUTE = _ATTRIBUTE
