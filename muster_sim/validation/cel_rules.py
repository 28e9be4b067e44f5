"""A CRD's x-kubernetes-validations: CEL rules kube-apiserver evaluates on every write.

Each rule sits on a schema node and is evaluated with `self` bound to the value at that
node (for every element, under `items` or `additionalProperties`); a rule that reads
`oldSelf` is a transition rule, evaluated only on an update that had a value there. A
rule that is false is a 422 on the node's path: `Invalid value: "object": <message>`
(the JSON type of the value, as kube words it), or `messageExpression`'s value."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import celpy
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from muster_sim.errors import FieldError

Obj = dict[str, Any]
RULES = "x-kubernetes-validations"

_ENVIRONMENT = celpy.Environment()
_PROGRAMS: dict[str, Any] = {}


def rule_errors(schema: Obj, value: Any, old: Any = None) -> list[FieldError]:
    """Every failing rule of `schema` over `value` (and `old`, on update)."""
    return list(_walk(schema, value, old, "", old is not None))


def _walk(schema: Obj, value: Any, old: Any, path: str, has_old: bool) -> Iterator[FieldError]:
    if value is None:
        return
    for rule in schema.get(RULES) or ():
        error = _failed(rule, value, old, path, has_old)
        if error is not None:
            yield error
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        for name, child in (schema.get("properties") or {}).items():
            if name in value:
                yield from _walk(
                    child, value[name], old_map.get(name), _join(path, name), name in old_map
                )
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            declared = schema.get("properties") or {}
            for name, element in value.items():
                if name not in declared:
                    yield from _walk(
                        extra, element, old_map.get(name), f"{path}[{name}]", name in old_map
                    )
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        # kube correlates list elements with the old list only for map-type lists; an
        # element here is new unless the list is unchanged in length and position.
        old_list = old if isinstance(old, list) else []
        for index, element in enumerate(value):
            previous = old_list[index] if index < len(old_list) else None
            yield from _walk(
                schema["items"], element, previous, f"{path}[{index}]", index < len(old_list)
            )


def _failed(rule: Obj, value: Any, old: Any, path: str, has_old: bool) -> FieldError | None:
    expression = str(rule.get("rule", ""))
    transition = "oldSelf" in expression
    if transition and not has_old:
        return None
    activation: dict[str, Any] = {"self": json_to_cel(value)}
    if transition:
        activation["oldSelf"] = json_to_cel(old)
    result = _program(expression).evaluate(activation)
    if isinstance(result, CELEvalError):
        # kube reports a rule that errors at runtime as the field's invalid value too
        message = f"rule evaluation error: {result}"
    elif bool(result):
        return None
    else:
        message = str(rule.get("message") or f"failed rule: {expression}")
    field = path.removeprefix(".") or "<nil>"
    if rule.get("fieldPath"):
        field = _join(path, str(rule["fieldPath"]).removeprefix(".")).removeprefix(".")
    return FieldError(field, f'Invalid value: "{json_type(value)}": {message}')


def json_type(value: Any) -> str:
    """The JSON Schema type name of a decoded JSON value, as kube's messages name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _program(expression: str) -> Any:
    program = _PROGRAMS.get(expression)
    if program is None:
        program = _PROGRAMS[expression] = _ENVIRONMENT.program(_ENVIRONMENT.compile(expression))
    return program


def _join(path: str, name: str) -> str:
    return f"{path}.{name}"
