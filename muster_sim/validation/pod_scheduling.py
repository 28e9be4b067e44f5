"""kube-apiserver's validation of a pod's scheduling fields:
topology spread constraints, pod (anti-)affinity terms, resource claims (the pod's, its
containers' and its status's) and the native PodGroup it joins, spec.schedulingGroup (facts
and messages from k8s.io/kubernetes pkg/apis/core/validation; code written here)."""

from __future__ import annotations

import json
from typing import Any

from muster_sim.errors import FieldError
from muster_sim.validation import fields
from muster_sim.validation.names import (
    LABEL_MSG,
    is_dns_label,
    label_problems,
    qualified_name_errors,
    subdomain_problems,
)
from muster_sim.validation.native_scheduling import scheduling_group_errors
from muster_sim.validation.selector_fields import label_selector_errors

Obj = dict[str, Any]

_NOT_POSITIVE = "must be greater than zero"
_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_NODE_INCLUSION_POLICIES = ("Honor", "Ignore")
_AFFINITY_KINDS = ("podAffinity", "podAntiAffinity")
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _quoted(value: Any) -> str:
    # field.Error prints strings with %q and numbers bare; any other value (a null, a bool
    # where a number belongs) is shown as Python prints it, not as fields.shown does
    return json.dumps(value) if isinstance(value, str) else str(value)


def _invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(path, f"Invalid value: {_quoted(value)}: {detail}")


def _not_supported(path: str, value: Any, values: tuple[str, ...]) -> FieldError:
    return FieldError(
        path,
        f"Unsupported value: {_quoted(value)}: supported values: {fields.listed(values)}",
        "FieldValueNotSupported",
    )


def scheduling_field_errors(spec: Obj) -> list[FieldError]:
    """The field errors of spec.topologySpreadConstraints, spec.affinity's pod terms,
    spec.resourceClaims and spec.schedulingGroup, as ValidatePodSpec reports them."""
    errors: list[FieldError] = []
    errors.extend(_spread_errors(spec.get("topologySpreadConstraints") or []))
    affinity = spec.get("affinity")
    if isinstance(affinity, dict):
        for kind in _AFFINITY_KINDS:
            terms = affinity.get(kind)
            if isinstance(terms, dict):
                errors.extend(_pod_affinity_errors(terms, f"spec.affinity.{kind}"))
    errors.extend(_claim_errors(spec.get("resourceClaims") or []))
    errors.extend(scheduling_group_errors(spec))
    names = _claim_names(spec)
    for group in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(group) or []):
            resources = container.get("resources") if isinstance(container, dict) else None
            claims = resources.get("claims") if isinstance(resources, dict) else None
            at = f"spec.{group}[{index}].resources.claims"
            errors.extend(container_claim_errors(claims or [], names, at))
    return errors


def _claim_names(spec: Obj) -> list[str]:
    return [str(c.get("name", "")) for c in spec.get("resourceClaims") or [] if isinstance(c, dict)]


def container_claim_errors(claims: list[Any], pod_claims: list[str], path: str) -> list[FieldError]:
    """validateResourceClaimNames: each of a container's claims names one of the pod's, once
    (a claim and one of its requests count as the same), and a request is a DNS label."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    known = sorted(set(pod_claims))
    for index, claim in enumerate(claims):
        if not isinstance(claim, dict):
            continue
        at = f"{path}[{index}]"
        name = str(claim.get("name") or "")
        if not name:
            errors.append(fields.required(at))
            continue
        request = str(claim.get("request") or "")
        if name in seen:
            errors.append(fields.duplicate(at, name))
        else:
            key = name
            if request:
                errors.extend(
                    fields.invalid(f"{at}.request", request, p) for p in label_problems(request)
                )
                key = f"{name}/{request}"
            if key in seen:
                errors.append(fields.duplicate(at, key))
            elif not request:
                errors.extend(
                    fields.duplicate(at, name) for k in seen if k.split("/", 1)[0] == name
                )
            seen.add(key)
        if name not in known:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += " which is empty" if not known else ": " + ", ".join(known)
            errors.append(fields.not_found(at, name, detail))
    return errors


def claim_status_errors(status: Obj, spec: Obj) -> list[FieldError]:
    """validatePodResourceClaimStatuses: each entry names one of the pod's claims, once, and
    the claim it names has a valid name."""
    errors: list[FieldError] = []
    names = set(_claim_names(spec))
    seen: set[str] = set()
    for index, entry in enumerate(status.get("resourceClaimStatuses") or []):
        if not isinstance(entry, dict):
            continue
        at = f"status.resourceClaimStatuses[{index}]"
        name = str(entry.get("name") or "")
        if name not in names:
            errors.append(
                fields.invalid(
                    f"{at}.name", name, "must match the name of an entry in `spec.resourceClaims`"
                )
            )
        if name in seen:
            errors.append(fields.duplicate(f"{at}.name", name))
        seen.add(name)
        claim = entry.get("resourceClaimName")
        if claim is not None:
            errors.extend(
                fields.invalid(f"{at}.resourceClaimName", claim, p)
                for p in subdomain_problems(str(claim))
            )
    return errors


def _spread_errors(constraints: list[Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, constraint in enumerate(constraints):
        if not isinstance(constraint, dict):
            continue
        at = f"spec.topologySpreadConstraints[{index}]"
        skew = constraint.get("maxSkew", 0)
        if not isinstance(skew, int) or skew <= 0:
            errors.append(_invalid(f"{at}.maxSkew", skew, _NOT_POSITIVE))
        key = constraint.get("topologyKey", "")
        if not key:
            errors.append(fields.required(f"{at}.topologyKey", "can not be empty"))
        when = constraint.get("whenUnsatisfiable", "")
        if when not in _WHEN_UNSATISFIABLE:
            errors.append(_not_supported(f"{at}.whenUnsatisfiable", when, _WHEN_UNSATISFIABLE))
        # {topologyKey, whenUnsatisfiable} names one kind of constraint: no repeats
        for later in constraints[index + 1 :]:
            if isinstance(later, dict) and (
                later.get("topologyKey", ""),
                later.get("whenUnsatisfiable", ""),
            ) == (key, when):
                errors.append(
                    FieldError(
                        f"{at}.{{topologyKey, whenUnsatisfiable}}",
                        f"Duplicate value: {_quoted(f'{{{key}, {when}}}')}",
                        "FieldValueDuplicate",
                    )
                )
                break
        domains = constraint.get("minDomains")
        if domains is not None:
            if not isinstance(domains, int) or domains <= 0:
                errors.append(_invalid(f"{at}.minDomains", domains, _NOT_POSITIVE))
            if when != "DoNotSchedule":
                errors.append(
                    _invalid(
                        f"{at}.minDomains",
                        domains,
                        f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}",
                    )
                )
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            value = constraint.get(policy)
            if value is not None and value not in _NODE_INCLUSION_POLICIES:
                errors.append(_not_supported(f"{at}.{policy}", value, _NODE_INCLUSION_POLICIES))
        errors.extend(label_selector_errors(constraint.get("labelSelector"), f"{at}.labelSelector"))
    return errors


def _pod_affinity_errors(terms: Obj, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, term in enumerate(terms.get(_REQUIRED) or []):
        if isinstance(term, dict):
            errors.extend(_term_errors(term, f"{path}.{_REQUIRED}[{index}]"))
    for index, weighted in enumerate(terms.get(_PREFERRED) or []):
        if not isinstance(weighted, dict):
            continue
        at = f"{path}.{_PREFERRED}[{index}]"
        weight = weighted.get("weight", 0)
        if not isinstance(weight, int) or weight <= 0 or weight > 100:
            errors.append(_invalid(f"{at}.weight", weight, "must be in the range 1-100"))
        term = weighted.get("podAffinityTerm")
        errors.extend(_term_errors(term if isinstance(term, dict) else {}, f"{at}.podAffinityTerm"))
    return errors


def _term_errors(term: Obj, path: str) -> list[FieldError]:
    errors = label_selector_errors(term.get("labelSelector"), f"{path}.labelSelector")
    errors.extend(label_selector_errors(term.get("namespaceSelector"), f"{path}.namespaceSelector"))
    key = term.get("topologyKey", "")
    if not key:
        errors.append(fields.required(f"{path}.topologyKey", "can not be empty"))
    errors.extend(qualified_name_errors(str(key), f"{path}.topologyKey"))
    return errors


def _claim_errors(claims: list[Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, claim in enumerate(claims):
        if not isinstance(claim, dict):
            continue
        at = f"spec.resourceClaims[{index}]"
        name = claim.get("name", "")
        if not name:
            errors.append(fields.required(f"{at}.name"))
        elif name in seen:
            errors.append(
                FieldError(f"{at}.name", f"Duplicate value: {_quoted(name)}", "FieldValueDuplicate")
            )
        else:
            if not is_dns_label(str(name)):
                errors.append(_invalid(f"{at}.name", name, LABEL_MSG))
            seen.add(str(name))
        by_name = claim.get("resourceClaimName")
        by_template = claim.get("resourceClaimTemplateName")
        shown = _go_claim(claim)
        if by_name is not None and by_template is not None:
            errors.append(
                FieldError(
                    at,
                    f"Invalid value: {shown}: at most one of `resourceClaimName` or "
                    "`resourceClaimTemplateName` may be specified",
                )
            )
        if by_name is None and by_template is None:
            errors.append(
                FieldError(
                    at,
                    f"Invalid value: {shown}: must specify one of: `resourceClaimName`, "
                    "`resourceClaimTemplateName`",
                )
            )
    return errors


def _go_claim(claim: Obj) -> str:
    # the whole claim, printed as Go's %#v prints core.PodResourceClaim
    def pointer(value: Any) -> str:
        return "(*string)(nil)" if value is None else f"(*string)({json.dumps(str(value))})"

    return (
        f"core.PodResourceClaim{{Name:{json.dumps(str(claim.get('name', '')))}, "
        f"ResourceClaimName:{pointer(claim.get('resourceClaimName'))}, "
        f"ResourceClaimTemplateName:{pointer(claim.get('resourceClaimTemplateName'))}}}"
    )
