"""Label and field selectors: parse the query-string forms, match objects."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from muster_sim.errors import bad_request

Obj = dict[str, Any]
Predicate = Callable[[Obj], bool]

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_SET_RE = re.compile(rf"^\s*(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)\s*$")
_CMP_RE = re.compile(rf"^\s*(?P<key>{_KEY})\s*(?P<op>==|!=|=|>|<)\s*(?P<value>[^=!<>\s]*)\s*$")
_EXISTS_RE = re.compile(rf"^\s*(?P<neg>!?)\s*(?P<key>{_KEY})\s*$")

# Fields each kind may be selected on, besides metadata.name and metadata.namespace.
_FIELDS: dict[str, tuple[str, ...]] = {
    "pods": (
        "spec.nodeName",
        "spec.schedulerName",
        "status.phase",
        "spec.restartPolicy",
        "spec.serviceAccountName",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "nodes": ("spec.unschedulable",),
    "events": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "namespaces": ("status.phase",),
    "secrets": ("type",),
    "resourceslices": ("spec.nodeName", "spec.driver"),
}
# How kube-apiserver refuses a field it does not select on, where not in the default words.
_UNSUPPORTED_FIELD = {
    "resourceslices": "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: {}",
    **dict.fromkeys(
        ("deviceclasses", "resourceclaims", "resourceclaimtemplates"),
        '"{}" is not a known field selector: only "metadata.name", "metadata.namespace"',
    ),
}


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside `in (...)` parentheses."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


def _requirement(text: str) -> Predicate:
    if match := _SET_RE.match(text):
        key = match["key"]
        values = frozenset(v.strip() for v in match["values"].split(",") if v.strip())
        if match["op"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _CMP_RE.match(text):
        key, op, value = match["key"], match["op"], match["value"]
        if op in ("=", "=="):
            return lambda labels: labels.get(key) == value
        if op == "!=":
            return lambda labels: labels.get(key) != value
        try:
            bound = int(value)
        except ValueError:
            raise bad_request(
                f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be "
                f"an integer: {value!r}"
            ) from None
        if op == ">":
            return lambda labels: _int_label(labels.get(key)) > bound
        return lambda labels: _int_label(labels.get(key), default=bound) < bound
    if match := _EXISTS_RE.match(text):
        key = match["key"]
        if match["neg"]:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise bad_request(f"unable to parse requirement: {text.strip()!r} is not a valid requirement")


def _int_label(value: str | None, default: int = -(2**63)) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def parse_label_selector(text: str | None) -> Predicate | None:
    """A predicate over whole objects for `?labelSelector=`; None when it selects everything."""
    if not text or not text.strip():
        return None
    requirements = [_requirement(part) for part in _split_top_level(text)]

    def matches(obj: Obj) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(req(labels) for req in requirements)

    return matches


def field_value(obj: Obj, path: str) -> str:
    """The string value of a dotted field path, "" when absent (as field selectors treat it)."""
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, dict):
            return ""
        value = value.get(part)
        if value is None:
            return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_field_selector(text: str | None, plural: str) -> Predicate | None:
    """A predicate for `?fieldSelector=`; unknown fields are refused as the real server does."""
    if not text or not text.strip():
        return None
    allowed = ("metadata.name", "metadata.namespace", *_FIELDS.get(plural, ()))
    terms: list[tuple[str, bool, str]] = []
    for part in text.split(","):
        if not part.strip():
            continue
        if "!=" in part:
            path, value = part.split("!=", 1)
            equal = False
        elif "==" in part:
            path, value = part.split("==", 1)
            equal = True
        elif "=" in part:
            path, value = part.split("=", 1)
            equal = True
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        path = path.strip()
        if path not in allowed:
            refusal = _UNSUPPORTED_FIELD.get(plural, "field label not supported: {}")
            raise bad_request(refusal.format(path))
        terms.append((path, equal, value.strip()))

    def matches(obj: Obj) -> bool:
        return all((field_value(obj, path) == value) == equal for path, equal, value in terms)

    return matches


def both(first: Predicate | None, second: Predicate | None) -> Predicate | None:
    """The conjunction of two optional predicates."""
    if first is None:
        return second
    if second is None:
        return first
    return lambda obj: first(obj) and second(obj)


def label_selector_matches(selector: Obj | None, labels: dict[str, str]) -> bool:
    """Match a structured `LabelSelector` (matchLabels, matchExpressions) against labels."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key = expr.get("key", "")
        op = expr.get("operator", "")
        values = expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def node_selector_requirement_matches(requirement: Obj, labels: dict[str, str]) -> bool:
    """One NodeSelectorRequirement (In, NotIn, Exists, DoesNotExist, Gt, Lt) against labels."""
    key = str(requirement.get("key", ""))
    operator = requirement.get("operator", "")
    values = [str(v) for v in requirement.get("values") or []]
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt") and len(values) == 1 and key in labels:
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def node_selector_matches(selector: Obj | None, node: Obj) -> bool:
    """A NodeSelector (terms ORed, requirements ANDed; matchFields on metadata.name) against
    a Node, as the scheduler and the kubelet's volume node-affinity check evaluate it."""
    if selector is None:
        return True
    labels = (node.get("metadata") or {}).get("labels") or {}
    name = str((node.get("metadata") or {}).get("name", ""))
    for term in selector.get("nodeSelectorTerms") or []:
        expressions = (term or {}).get("matchExpressions") or []
        fields = (term or {}).get("matchFields") or []
        if not expressions and not fields:
            # an empty term matches no node
            continue
        if all(node_selector_requirement_matches(r, labels) for r in expressions) and all(
            node_selector_requirement_matches(r, {"metadata.name": name}) for r in fields
        ):
            return True
    return False
