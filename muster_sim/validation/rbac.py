"""Validation of Roles, ClusterRoles, RoleBindings and ClusterRoleBindings, as the real server does.

Required fields of rules and bindings, the kinds a roleRef and a subject may name, and a
binding's roleRef being immutable (to change it, delete and recreate the binding).
"""

from __future__ import annotations

import json
from typing import Any

from muster_sim.errors import FieldError, invalid

Obj = dict[str, Any]

GROUP = "rbac.authorization.k8s.io"
_SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def _quoted(values: Any) -> str:
    return ", ".join(f'"{v}"' for v in values)


def _rule_errors(rule: Any, path: str, namespaced: bool) -> list[FieldError]:
    if not isinstance(rule, dict):
        return [FieldError(path, f"Invalid value: {json.dumps(rule)}: must be an object")]
    errors: list[FieldError] = []
    if not rule.get("verbs"):
        errors.append(
            FieldError(
                f"{path}.verbs",
                "Required value: verbs must contain at least one value",
                "FieldValueRequired",
            )
        )
    urls = rule.get("nonResourceURLs") or []
    if urls:
        # Go's %#v of the []string, as field.Invalid prints it
        shown = "[]string{" + _quoted(urls) + "}"
        if namespaced:
            errors.append(
                FieldError(
                    f"{path}.nonResourceURLs",
                    f"Invalid value: {shown}: namespaced rules cannot apply to non-resource URLs",
                )
            )
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errors.append(
                FieldError(
                    f"{path}.nonResourceURLs",
                    f"Invalid value: {shown}: rules cannot apply to both regular resources and "
                    "non-resource URLs",
                )
            )
        return errors
    if not rule.get("apiGroups"):
        errors.append(
            FieldError(
                f"{path}.apiGroups",
                "Required value: resource rules must supply at least one api group",
                "FieldValueRequired",
            )
        )
    if not rule.get("resources"):
        errors.append(
            FieldError(
                f"{path}.resources",
                "Required value: resource rules must supply at least one resource",
                "FieldValueRequired",
            )
        )
    if rule.get("resourceNames") and len(rule.get("resources") or []) > 1:
        errors.append(
            FieldError(
                f"{path}.resourceNames",
                "Required value: resource names cannot apply to multiple resources",
                "FieldValueRequired",
            )
        )
    return errors


def _role_errors(obj: Obj, namespaced: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, rule in enumerate(obj.get("rules") or []):
        errors.extend(_rule_errors(rule, f"rules[{index}]", namespaced))
    return errors


def _subject_errors(subject: Any, path: str, namespaced: bool) -> list[FieldError]:
    if not isinstance(subject, dict):
        return [FieldError(path, f"Invalid value: {json.dumps(subject)}: must be an object")]
    errors: list[FieldError] = []
    name = subject.get("name") or ""
    if not name:
        errors.append(FieldError(f"{path}.name", "Required value", "FieldValueRequired"))
    kind, api_group = subject.get("kind") or "", subject.get("apiGroup") or ""
    if kind == "ServiceAccount":
        if api_group:
            errors.append(
                FieldError(
                    f"{path}.apiGroup",
                    f'Unsupported value: "{api_group}": supported values: ""',
                    "FieldValueNotSupported",
                )
            )
        if not namespaced and not subject.get("namespace"):
            errors.append(FieldError(f"{path}.namespace", "Required value", "FieldValueRequired"))
    elif kind in ("User", "Group"):
        if api_group != GROUP:
            errors.append(
                FieldError(
                    f"{path}.apiGroup",
                    f'Unsupported value: "{api_group}": supported values: "{GROUP}"',
                    "FieldValueNotSupported",
                )
            )
    else:
        errors.append(
            FieldError(
                f"{path}.kind",
                f'Unsupported value: "{kind}": supported values: {_quoted(_SUBJECT_KINDS)}',
                "FieldValueNotSupported",
            )
        )
    return errors


def _binding_errors(obj: Obj, namespaced: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    ref = obj.get("roleRef") if isinstance(obj.get("roleRef"), dict) else {}
    assert isinstance(ref, dict)
    if ref.get("apiGroup") != GROUP:
        errors.append(
            FieldError(
                "roleRef.apiGroup",
                f'Unsupported value: "{ref.get("apiGroup") or ""}": supported values: "{GROUP}"',
                "FieldValueNotSupported",
            )
        )
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if ref.get("kind") not in kinds:
        errors.append(
            FieldError(
                "roleRef.kind",
                f'Unsupported value: "{ref.get("kind") or ""}": supported values: {_quoted(kinds)}',
                "FieldValueNotSupported",
            )
        )
    if not ref.get("name"):
        errors.append(FieldError("roleRef.name", "Required value", "FieldValueRequired"))
    for index, subject in enumerate(obj.get("subjects") or []):
        errors.extend(_subject_errors(subject, f"subjects[{index}]", namespaced))
    return errors


class RbacValidator:
    """Validates one of the four RBAC kinds on create and update."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.namespaced = kind in ("Role", "RoleBinding")
        self.binding = kind.endswith("Binding")

    def _errors(self, obj: Obj) -> list[FieldError]:
        if self.binding:
            return _binding_errors(obj, self.namespaced)
        return _role_errors(obj, self.namespaced)

    def validate_create(self, obj: Obj) -> None:
        """422 Invalid listing every field error of a new object."""
        errors = self._errors(obj)
        if errors:
            raise invalid(GROUP, self.kind, str(obj["metadata"].get("name", "")), errors)

    def validate_update(self, old: Obj, new: Obj) -> None:
        """422 Invalid for field errors, and for a binding whose roleRef changed."""
        errors = self._errors(new)
        if self.binding and new.get("roleRef") != old.get("roleRef"):
            shown = _go_struct(new.get("roleRef"))
            errors.append(FieldError("roleRef", f"Invalid value: {shown}: cannot change roleRef"))
        if errors:
            raise invalid(GROUP, self.kind, str(old["metadata"].get("name", "")), errors)


def _go_struct(ref: Any) -> str:
    # field.Invalid prints a struct value with Go's %#v
    if not isinstance(ref, dict):
        return json.dumps(ref)
    fields = [("APIGroup", "apiGroup"), ("Kind", "kind"), ("Name", "name")]
    inner = ", ".join(f"{go}:{json.dumps(str(ref.get(key) or ''))}" for go, key in fields)
    return f"rbac.RoleRef{{{inner}}}"
