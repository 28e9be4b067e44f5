"""The rules of names, as apimachinery's validation words them: an object's metadata.name
(a DNS subdomain, a DNS label for some kinds, a path segment for RBAC objects), qualified names
(label keys, topology keys), and CSI driver names."""

from __future__ import annotations

import re
from typing import Any

from muster_sim.errors import FieldError, invalid
from muster_sim.validation import fields

Obj = dict[str, Any]

_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
SUBDOMAIN_RE = re.compile(f"^{_SUBDOMAIN}$")
LABEL_RE = re.compile(f"^{_LABEL}$")
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    f"for validation is '{_SUBDOMAIN}')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    f"used for validation is '{_LABEL}')"
)
_QUALIFIED = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_RE = re.compile(f"^{_QUALIFIED}$")
_QUALIFIED_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    f"validation is '{_QUALIFIED}')"
)
# Kinds whose names are DNS-1123 labels rather than subdomains.
_LABEL_NAMED = frozenset({"Namespace", "Service", "StatefulSet"})


def validate_name(kind: str, group: str, obj: Obj) -> None:
    """422 unless metadata.name is a valid DNS-1123 name for the kind."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise invalid(
            group,
            kind,
            "",
            [
                FieldError(
                    "metadata.name",
                    "Required value: name or generateName is required",
                    "FieldValueRequired",
                )
            ],
        )
    if group == "rbac.authorization.k8s.io":
        # RBAC objects take any path segment ("system:controller:x" is a role name)
        problem = _path_segment_problem(name)
        if problem:
            raise invalid(
                group,
                kind,
                name,
                [FieldError("metadata.name", f'Invalid value: "{name}": {problem}')],
            )
        return
    pattern, message = (
        (LABEL_RE, LABEL_MSG) if kind in _LABEL_NAMED else (SUBDOMAIN_RE, SUBDOMAIN_MSG)
    )
    if len(name) > 253 or not pattern.match(name):
        raise invalid(
            group, kind, name, [FieldError("metadata.name", f'Invalid value: "{name}": {message}')]
        )


def is_dns_label(value: str) -> bool:
    """apimachinery's IsDNS1123Label: at most 63 characters of LABEL_RE, the whole string."""
    return len(value) <= 63 and LABEL_RE.fullmatch(value) is not None


def subdomain_problem(name: str) -> str:
    """apimachinery's IsDNS1123Subdomain message for `name`, "" when it is one."""
    if len(name) > 253:
        return "must be no more than 253 characters"
    if not SUBDOMAIN_RE.match(name):
        return SUBDOMAIN_MSG
    return ""


def subdomain_problems(name: str) -> list[str]:
    """apimachinery's IsDNS1123Subdomain: every message for `name` (none when it is one)."""
    problems = ["must be no more than 253 characters"] if len(name) > 253 else []
    if not SUBDOMAIN_RE.match(name):
        problems.append(SUBDOMAIN_MSG)
    return problems


def label_problems(name: str) -> list[str]:
    """apimachinery's IsDNS1123Label: every message for `name` (none when it is one)."""
    problems = ["must be no more than 63 characters"] if len(name) > 63 else []
    if not LABEL_RE.match(name):
        problems.append("must not contain dots" if SUBDOMAIN_RE.match(name) else LABEL_MSG)
    return problems


def qualified_name_errors(value: str, path: str) -> list[FieldError]:
    """apimachinery's IsQualifiedName (1.36's IsLabelKey): an optional DNS-subdomain prefix
    and '/', then a name of at most 63 characters; every problem is its own error."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            fields.invalid(
                path,
                value,
                f"a valid label key {_QUALIFIED_MSG} with an optional DNS subdomain prefix and "
                "'/' (e.g. 'example.com/MyName')",
            )
        ]
    problems: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            problems.append("prefix part must be non-empty")
        problems.extend(f"prefix part {p}" for p in subdomain_problems(parts[0]) if parts[0])
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    if not _QUALIFIED_RE.match(name):
        problems.append(f"name part {_QUALIFIED_MSG}")
    return [fields.invalid(path, value, problem) for problem in problems]


def csi_driver_name_errors(name: str, path: str) -> list[FieldError]:
    """core ValidateCSIDriverName: required (and nothing more said of an empty name), at most
    63 characters, a DNS subdomain."""
    if not name:
        return [fields.required(path)]
    errors: list[FieldError] = []
    if len(name) > 63:
        errors.append(fields.too_long(path, 63))
    problem = subdomain_problem(name.lower())
    if problem:
        errors.append(fields.invalid(path, name, problem))
    return errors


def _path_segment_problem(name: str) -> str:
    """apimachinery's ValidatePathSegmentName, in its words ("" when the name is fine)."""
    if name in (".", ".."):
        return f"may not be '{name}'"
    for character in ("/", "%"):
        if character in name:
            return f"may not contain '{character}'"
    return ""
