"""CRD structural schemas as kube-apiserver applies them: pruning, validation and its messages.

Validation is delegated to the `jsonschema` package: the CRD's OpenAPI v3 schema is
translated the way apiextensions-apiserver translates it for kube-openapi (`nullable`
adds the null type, `x-kubernetes-int-or-string` means integer or string, boolean
`exclusiveMinimum`/`exclusiveMaximum` are draft 4's) and each error is reworded as
kube-apiserver words it (field.Error bodies around kube-openapi's "in body" messages).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import math
import re
import uuid
from collections.abc import Iterable, Iterator
from datetime import date, datetime
from typing import Any

import jsonschema
from jsonschema import Draft4Validator, FormatChecker
from jsonschema.exceptions import ValidationError

from muster_sim.errors import FieldError
from muster_sim.validation.cel_rules import json_type, rule_errors
from muster_sim.validation.object_meta import OBJECT_META_FIELDS

Obj = dict[str, Any]

PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"
EMBEDDED = "x-kubernetes-embedded-resource"

# metadata is decoded as ObjectMeta: anything else in it is an unknown field
_OBJECT_META = frozenset(OBJECT_META_FIELDS)
_TYPE_META = ("apiVersion", "kind", "metadata")

# the JSON-schema keywords kube-openapi evaluates; descriptions, examples and
# x-kubernetes-* list/map markers carry no validation here
_VALUE_KEYWORDS = (
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
    "minProperties",
    "maxProperties",
    "required",
    "enum",
)


def _is_integer(_checker: Any, instance: Any) -> bool:
    # kube-openapi accepts a float with an integral value where an integer is declared
    if isinstance(instance, bool):
        return False
    return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())


_TYPE_CHECKER = Draft4Validator.TYPE_CHECKER.redefine("integer", _is_integer)
_Validator = jsonschema.validators.extend(Draft4Validator, type_checker=_TYPE_CHECKER)

_FORMATS = FormatChecker(formats=())
_DURATION_RE = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d|w))+$")
_HOSTNAME_RE = re.compile(
    r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$"
)
_MAC_RE = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$")
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+$")


def _format(name: str) -> Any:
    def register(check: Any) -> Any:
        def on_strings(value: Any) -> bool:
            # a format constrains strings only; other types are the type keyword's business
            return not isinstance(value, str) or bool(check(value))

        _FORMATS.checks(name)(on_strings)
        return check

    return register


def _parses(parse: Any, value: str) -> bool:
    try:
        parse(value)
    except (ValueError, TypeError, binascii.Error):
        return False
    return True


# the formats kube-apiserver checks (strfmt.Default after StripUnsupportedFormatsPostProcess)
_format("date-time")(
    lambda v: _parses(lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")), v)
)
_format("datetime")(
    lambda v: _parses(lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")), v)
)
_format("date")(lambda v: _parses(date.fromisoformat, v))
_format("byte")(lambda v: _parses(lambda s: base64.b64decode(s, validate=True), v))
_format("uuid")(lambda v: _parses(uuid.UUID, v))
for _version in (3, 4, 5):
    _format(f"uuid{_version}")(
        lambda v, n=_version: _parses(uuid.UUID, v) and uuid.UUID(v).version == n
    )
_format("ipv4")(lambda v: _parses(ipaddress.IPv4Address, v))
_format("ipv6")(lambda v: _parses(ipaddress.IPv6Address, v))
_format("cidr")(lambda v: _parses(lambda s: ipaddress.ip_network(s, strict=False), v))
_format("mac")(lambda v: bool(_MAC_RE.match(v)))
_format("hostname")(lambda v: len(v) <= 255 and bool(_HOSTNAME_RE.match(v)))
_format("email")(lambda v: bool(_EMAIL_RE.match(v)))
_format("duration")(lambda v: bool(_DURATION_RE.match(v)))


def _numeric_format(name: str, fits: Any) -> None:
    """kube-apiserver 1.36+ keeps and checks the numeric formats of a CRD's integers and
    numbers (it stripped them before, storing any value): a value outside the format's
    range is refused."""

    def on_numbers(value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return True
        return bool(fits(value))

    _FORMATS.checks(name)(on_numbers)


_numeric_format("int32", lambda v: -(2**31) <= v <= 2**31 - 1)
_numeric_format("int64", lambda v: -(2**63) <= v <= 2**63 - 1)
_numeric_format("float", lambda v: abs(v) <= 3.4028234663852886e38)
_numeric_format("double", lambda v: abs(v) <= 1.7976931348623157e308)


def to_json_schema(schema: Obj) -> Obj:
    """The JSON schema (draft 4) kube-openapi evaluates for one OpenAPI v3 schema node."""
    out: Obj = {k: schema[k] for k in _VALUE_KEYWORDS if k in schema}
    types: list[str] = []
    if schema.get(INT_OR_STRING):
        types = ["integer", "string"]
    elif schema.get("type"):
        types = [str(schema["type"])]
    if types:
        if schema.get("nullable"):
            types.append("null")
        out["type"] = types if len(types) > 1 else types[0]
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: to_json_schema(v) for k, v in schema["properties"].items()}
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        out["additionalProperties"] = to_json_schema(extra)
    elif extra is False:
        out["additionalProperties"] = False
    if isinstance(schema.get("items"), dict):
        out["items"] = to_json_schema(schema["items"])
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            out[key] = [to_json_schema(s) for s in schema[key]]
    if isinstance(schema.get("not"), dict):
        out["not"] = to_json_schema(schema["not"])
    return out


def path_text(parts: Iterable[Any]) -> str:
    """A field path as kube writes it: `spec.tasks[0].name`."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def go_value(value: Any) -> str:
    """A bad value as field.Error prints it (Go's %v for numbers, %q for strings)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def go_float(value: float) -> str:
    """Go's %v of a float64: shortest digits, exponent form below 1e-4 or from 1e21."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        return f"{mantissa}e{sign}{abs(int(exponent)):02d}"
    return text


class CrdSchema:
    """One CRD version's openAPIV3Schema, ready to prune, default and validate objects."""

    def __init__(self, schema: Obj) -> None:
        self.schema = schema
        self._validator = _Validator(to_json_schema(schema), format_checker=_FORMATS)

    # -- pruning -------------------------------------------------------------

    def prune(self, obj: Obj) -> list[str]:
        """Drop fields the schema does not declare, in place; return their paths, sorted."""
        pruned: list[str] = []
        _prune_object(obj, self.schema, [], pruned, root=True)
        return sorted(pruned)

    # -- validation ----------------------------------------------------------

    def validate(self, obj: Obj, old: Obj | None = None) -> list[FieldError]:
        """Every schema violation as kube reports it; on update unchanged values ratchet."""
        errors: list[FieldError] = []
        required_seen: set[tuple[Any, ...]] = set()
        for error in sorted(self._validator.iter_errors(obj), key=_error_order):
            parts = list(error.absolute_path)
            if error.validator == "required":
                key = tuple(parts)
                if key in required_seen:
                    continue
                required_seen.add(key)
                if old is not None and _unchanged(obj, old, parts):
                    continue
                instance = error.instance if isinstance(error.instance, dict) else {}
                for name in error.validator_value:
                    if name not in instance:
                        errors.append(
                            FieldError(
                                path_text([*parts, name]), "Required value", "FieldValueRequired"
                            )
                        )
                continue
            if old is not None and _unchanged(obj, old, parts):
                continue
            errors.append(_field_error(error, path_text(parts)))
        if not errors:
            # The CEL rules run over a value the schema accepted (their types hold).
            errors = rule_errors(self.schema, obj, old)
        return _deduplicated(errors)


def _error_order(error: ValidationError) -> tuple[str, str]:
    return (path_text(error.absolute_path), str(error.validator))


def _deduplicated(errors: list[FieldError]) -> list[FieldError]:
    # field.ErrorList.ToAggregate drops repeated messages
    seen: set[str] = set()
    kept: list[FieldError] = []
    for error in errors:
        text = f"{error.field}: {error.message}"
        if text not in seen:
            seen.add(text)
            kept.append(error)
    return kept


def _value_at(obj: Any, parts: list[Any]) -> tuple[bool, Any]:
    for part in parts:
        if isinstance(part, int) or not isinstance(obj, dict) or part not in obj:
            return False, None
        obj = obj[part]
    return True, obj


def _unchanged(new: Obj, old: Obj, parts: list[Any]) -> bool:
    # CRD validation ratcheting (beta, on by default since 1.30): an update may keep an
    # invalid value it did not touch. Only paths without list indices correlate here.
    found_new, value_new = _value_at(new, parts)
    found_old, value_old = _value_at(old, parts)
    return found_new and found_old and value_new == value_old


def _field_error(error: ValidationError, path: str) -> FieldError:
    keyword = str(error.validator)
    value = error.instance
    bound = error.validator_value
    schema: Obj = error.schema if isinstance(error.schema, dict) else {}
    where = f"{path} in body"
    if keyword == "type":
        expected = [t for t in ([bound] if isinstance(bound, str) else bound) if t != "null"]
        actual = json_type(value)
        return FieldError(
            path,
            f'Invalid value: "{actual}": {where} must be of type {",".join(expected)}: "{actual}"',
            "FieldValueTypeInvalid",
        )
    if keyword == "format":
        return FieldError(
            path,
            f"Invalid value: {go_value(value)}: {where} must be of type {bound}: {go_value(value)}",
            "FieldValueTypeInvalid",
        )
    if keyword == "enum":
        allowed = ", ".join(
            json.dumps(v if isinstance(v, str) else json.dumps(v, separators=(",", ":")))
            for v in bound
        )
        return FieldError(
            path,
            f"Unsupported value: {go_value(value)}: supported values: {allowed}",
            "FieldValueNotSupported",
        )
    if keyword == "maxLength":
        return FieldError(path, f"Too long: may not be longer than {bound}", "FieldValueTooLong")
    if keyword == "maxItems":
        return FieldError(
            path, f"Too many: {len(value)}: must have at most {bound} items", "FieldValueTooMany"
        )
    if keyword == "maxProperties":
        return FieldError(
            path, f"Too many: {len(value)}: must have at most {bound} items", "FieldValueTooMany"
        )
    if keyword in ("minimum", "maximum"):
        exclusive = bool(
            schema.get("exclusiveMinimum" if keyword == "minimum" else "exclusiveMaximum")
        )
        limit = _limit_text(bound, value)
        if keyword == "minimum":
            relation = "greater than" if exclusive else "greater than or equal to"
        else:
            relation = "less than" if exclusive else "less than or equal to"
        return FieldError(
            path, f"Invalid value: {go_value(value)}: {where} should be {relation} {limit}"
        )
    detail = {
        "pattern": f"{where} should match '{bound}'",
        "minLength": f"{where} should be at least {bound} chars long",
        "minItems": f"{where} should have at least {bound} items",
        "uniqueItems": f"{where} shouldn't contain duplicates",
        "minProperties": f"{where} should have at least {bound} properties",
        "multipleOf": f"{where} should be a multiple of {bound}",
        "anyOf": f'"{path}" must validate at least one schema (anyOf)',
        "oneOf": f'"{path}" must validate one and only one schema (oneOf)',
        "not": f'"{path}" must not validate the schema (not)',
    }.get(keyword, f"{where}: {error.message}")
    if keyword == "multipleOf":
        detail = f"{where} should be a multiple of {_limit_text(bound, value)}"
    shown: Any = value
    if keyword in ("minItems", "minProperties"):
        shown = len(value)
    elif keyword == "uniqueItems":
        shown = ""
    return FieldError(path, f"Invalid value: {go_value(shown)}: {detail}")


def _limit_text(bound: Any, value: Any) -> str:
    # kube-openapi compares integers as int64 (the bound truncated) and others as float64
    if isinstance(value, int) and not isinstance(value, bool):
        return str(int(bound))
    return go_float(float(bound))


def _prune_object(value: Any, schema: Obj, path: list[Any], pruned: list[str], root: bool) -> None:
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                _prune_object(item, items, [*path, index], pruned, root=False)
        return
    if not isinstance(value, dict):
        return
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    extra = schema.get("additionalProperties")
    preserve = bool(schema.get(PRESERVE))
    keeps_type_meta = root or bool(schema.get(EMBEDDED))
    for key in list(value):
        if keeps_type_meta and key in _TYPE_META:
            if key == "metadata" and isinstance(value[key], dict):
                for field in list(value[key]):
                    if field not in _OBJECT_META:
                        del value[key][field]
                        pruned.append(path_text([*path, "metadata", field]))
            continue
        if key in properties:
            sub = properties[key]
            if isinstance(sub, dict):
                _prune_object(value[key], sub, [*path, key], pruned, root=False)
        elif isinstance(extra, dict):
            _prune_object(value[key], extra, [*path, key], pruned, root=False)
        elif not preserve and extra is not True:
            del value[key]
            pruned.append(path_text([*path, key]))


# -- the CRD's own schema ----------------------------------------------------------


# The annotation kube asks of a CRD in a group the Kubernetes project owns (KEP 1111).
API_APPROVED = "api-approved.kubernetes.io"


def _protected(group: str) -> bool:
    return any(group == domain or group.endswith("." + domain) for domain in _PROTECTED)


_PROTECTED = ("k8s.io", "kubernetes.io")


def structural_errors(crd: Obj) -> list[FieldError]:
    """Why a CRD's schemas are not structural, in kube's words (empty when they are); a
    group with no dot, which kube refuses (a built-in group such as `batch` cannot be taken
    over by a CRD); and a group Kubernetes protects (k8s.io, kubernetes.io and their
    subdomains) without the api-approved.kubernetes.io annotation."""
    errors: list[FieldError] = []
    group = (crd.get("spec") or {}).get("group")
    if isinstance(group, str) and group and "." not in group:
        errors.append(
            FieldError(
                "spec.group",
                f'Invalid value: "{group}": should be a domain with at least one dot',
            )
        )
    annotations = (crd.get("metadata") or {}).get("annotations") or {}
    if isinstance(group, str) and _protected(group) and not annotations.get(API_APPROVED):
        errors.append(
            FieldError(
                f"metadata.annotations[{API_APPROVED}]",
                f'Required value: protected groups must have approval annotation "{API_APPROVED}",'
                " see https://github.com/kubernetes/enhancements/pull/1111",
                "FieldValueRequired",
            )
        )
    for index, version in enumerate((crd.get("spec") or {}).get("versions") or []):
        if not isinstance(version, dict):
            continue
        base = f"spec.versions[{index}].schema.openAPIV3Schema"
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            errors.append(
                FieldError(base, "Required value: schemas are required", "FieldValueRequired")
            )
            continue
        if schema.get("type") != "object":
            if not schema.get("type"):
                errors.append(
                    FieldError(
                        f"{base}.type",
                        "Required value: must not be empty at the root",
                        "FieldValueRequired",
                    )
                )
            else:
                errors.append(
                    FieldError(
                        f"{base}.type",
                        f'Invalid value: "{schema["type"]}": must be object at the root',
                        "FieldValueInvalid",
                    )
                )
        errors.extend(_node_errors(schema, base))
    return errors


def _node_errors(schema: Obj, path: str) -> Iterator[FieldError]:
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    if isinstance(properties, dict) and properties and extra not in (None, False):
        yield FieldError(
            f"{path}.additionalProperties",
            "Forbidden: additionalProperties and properties are mutual exclusive",
            "FieldValueForbidden",
        )
    if isinstance(properties, dict):
        for name, sub in properties.items():
            if isinstance(sub, dict):
                yield from _typed(sub, f"{path}.properties[{name}]", "specified object fields")
    if isinstance(extra, dict):
        yield from _typed(extra, f"{path}.additionalProperties", "specified object fields")
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _typed(items, f"{path}.items", "specified array items")


def _typed(schema: Obj, path: str, what: str) -> Iterator[FieldError]:
    if not schema.get("type") and not schema.get(INT_OR_STRING) and not schema.get(PRESERVE):
        yield FieldError(
            f"{path}.type", f"Required value: must not be empty for {what}", "FieldValueRequired"
        )
    yield from _node_errors(schema, path)


_COMPILED: dict[int, tuple[Obj, CrdSchema]] = {}


def compiled(schema: Obj) -> CrdSchema:
    """The CrdSchema for a Kind's schema dict, built once per dict."""
    entry = _COMPILED.get(id(schema))
    if entry is None or entry[0] is not schema:
        if len(_COMPILED) > 256:
            # CRD updates make new schema dicts; old ones are not looked up again
            _COMPILED.clear()
        # the dict is kept in the entry, so its id cannot be reused while cached
        entry = (schema, CrdSchema(schema))
        _COMPILED[id(schema)] = entry
    return entry[1]
