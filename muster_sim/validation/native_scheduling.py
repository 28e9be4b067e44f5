"""Kubernetes' own gang API, scheduling.k8s.io Workloads and PodGroups, as kube-apiserver
defaults and validates them: v1alpha2 as 1.36 serves it (GenericWorkload,
TopologyAwareWorkloadScheduling, DRAWorkloadResourceClaims and WorkloadAwarePreemption on),
v1beta1 as 1.37's types say (those gates and PodGroupPreemptionPolicy and CompositePodGroup
on). Their rules are declarative validation (`+k8s:` tags) in the real server, worded by
apimachinery's validate package; the messages below are the ones a 1.36 server answers.

What a server stores beyond the request: v1alpha2 writes `podGroupTemplateRef` and a
template's `schedulingConstraints` as explicit nulls (no omitempty), a PodGroup's
`disruptionMode` defaults to `Pod` (v1beta1: `{single: {}}`), a new PodGroup's status is
reset, and neither kind carries a `metadata.generation`. The admission plugins (Priority,
PodGroupProtection, PodGroupWorkloadExists) are apiserver/admission_plugins.py's.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from muster_sim.errors import FieldError
from muster_sim.validation import fields
from muster_sim.validation.names import (
    LABEL_MSG,
    is_dns_label,
    qualified_name_errors,
    subdomain_problem,
)
from muster_sim.validation.strategy import KindStrategy

Obj = dict[str, Any]

GROUP = "scheduling.k8s.io"
V1ALPHA2 = "v1alpha2"
V1BETA1 = "v1beta1"
VERSIONS = (V1ALPHA2, V1BETA1)

MAX_TEMPLATES = 8
MAX_CLAIMS = 4
MAX_TOPOLOGY = 1
# HighestUserDefinablePriority.
MAX_PRIORITY = 1_000_000_000
# metav1.Condition's message length limit.
MAX_CONDITION_MESSAGE = 32768
_CONDITION_STATUSES = ("False", "True", "Unknown")
_REASON = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_REASON_RE = re.compile(f"^{_REASON}$")
_REASON_MSG = (
    "a condition reason must start with alphabetic character, optionally followed by a string "
    "of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' "
    "(e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or "
    f"'ReasonA:ReasonB', regex used for validation is '{_REASON}')"
)
_LABEL_KEY_MSG = (
    "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
    "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with "
    "an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
)
# A template's fields in the order Go writes them (a Duplicate message prints the item).
_TEMPLATE_FIELDS = (
    "name",
    "schedulingPolicy",
    "schedulingConstraints",
    "resourceClaims",
    "disruptionMode",
    "priorityClassName",
    "priority",
    "preemptionPolicy",
)
_CLAIM_FIELDS = ("name", "resourceClaimName", "resourceClaimTemplateName")
PROTECTION_FINALIZER = "scheduling.k8s.io/podgroup-protection"


def _union(path: str, present: list[str], members: tuple[str, ...]) -> list[FieldError]:
    """A union field's check (apimachinery's validate.Union), in its words."""
    listed = ", ".join(f"`{m}`" for m in members)
    if not present:
        return [fields.invalid(path, "", f"must specify one of: {listed}")]
    if len(present) > 1:
        value = "{" + ", ".join(present) + "}"
        return [fields.invalid(path, value, f"must specify exactly one of: {listed}")]
    return []


def _too_many(path: str, count: int, limit: int) -> FieldError:
    items = "item" if limit == 1 else "items"
    return FieldError(
        path, f"Too many: {count}: must have at most {limit} {items}", "FieldValueTooMany"
    )


def _immutable(path: str) -> FieldError:
    # Declarative validation shows no value for an immutable field.
    return fields.invalid(path, None, "field is immutable")


def _present(obj: Any, key: str) -> bool:
    return isinstance(obj, dict) and obj.get(key) is not None


def policy_errors(policy: Any, path: str) -> list[FieldError]:
    """schedulingPolicy: exactly one of `basic` and `gang`, gang.minCount at least 1."""
    present = [m for m in ("basic", "gang") if _present(policy, m)]
    errors = _union(path, present, ("basic", "gang"))
    gang = policy.get("gang") if isinstance(policy, dict) else None
    if isinstance(gang, dict):
        count = gang.get("minCount")
        if not count:
            # Zero is the absent value of a required int32: "required", not "at least 1".
            errors.append(fields.required(f"{path}.gang.minCount"))
        elif isinstance(count, int) and count < 1:
            errors.append(
                fields.invalid(f"{path}.gang.minCount", count, "must be greater than or equal to 1")
            )
    return errors


def constraints_errors(constraints: Any, path: str) -> list[FieldError]:
    """schedulingConstraints: at most one topology constraint, its key a label key."""
    if not isinstance(constraints, dict):
        return []
    topology = constraints.get("topology") or []
    if len(topology) > MAX_TOPOLOGY:
        return [_too_many(f"{path}.topology", len(topology), MAX_TOPOLOGY)]
    errors: list[FieldError] = []
    for index, item in enumerate(topology):
        key = item.get("key") if isinstance(item, dict) else None
        at = f"{path}.topology[{index}].key"
        if not key:
            errors.append(fields.required(at))
        elif qualified_name_errors(str(key), at):
            errors.append(fields.invalid(at, key, _LABEL_KEY_MSG))
    return errors


def claims_errors(claims: Any, path: str) -> list[FieldError]:
    """resourceClaims: at most 4, each named once (a DNS label), exactly one source."""
    if not isinstance(claims, list):
        return []
    if len(claims) > MAX_CLAIMS:
        return [_too_many(path, len(claims), MAX_CLAIMS)]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, claim in enumerate(claims):
        if not isinstance(claim, dict):
            continue
        at = f"{path}[{index}]"
        name = claim.get("name")
        if name and name in seen:
            errors.append(
                FieldError(
                    at, f"Duplicate value: {_go_json(claim, _CLAIM_FIELDS)}", "FieldValueDuplicate"
                )
            )
        if not name:
            errors.append(fields.required(f"{at}.name"))
        elif not is_dns_label(str(name)):
            errors.append(fields.invalid(f"{at}.name", name, LABEL_MSG))
        if name:
            seen.add(str(name))
        sources = ("resourceClaimName", "resourceClaimTemplateName")
        errors += _union(at, [s for s in sources if _present(claim, s)], sources)
    return errors


def _disruption_errors(mode: Any, path: str, version: str) -> list[FieldError]:
    if mode is None:
        return []
    if version == V1ALPHA2:
        if mode not in ("Pod", "PodGroup"):
            return [fields.not_supported(path, mode, ("Pod", "PodGroup"))]
        return []
    return _union(path, [m for m in ("single", "all") if _present(mode, m)], ("single", "all"))


def _priority_errors(spec: Obj, path: str, version: str) -> list[FieldError]:
    errors: list[FieldError] = []
    priority = spec.get("priority")
    if isinstance(priority, int) and priority > MAX_PRIORITY:
        errors.append(
            fields.invalid(
                f"{path}.priority", priority, f"must be less than or equal to {MAX_PRIORITY}"
            )
        )
    name = spec.get("priorityClassName")
    if name:
        problem = subdomain_problem(str(name))
        if problem:
            errors.append(fields.invalid(f"{path}.priorityClassName", name, problem))
    policy = spec.get("preemptionPolicy")
    if (
        version == V1BETA1
        and policy is not None
        and policy not in ("Never", "PreemptLowerPriority")
    ):
        errors.append(
            fields.not_supported(
                f"{path}.preemptionPolicy", policy, ("Never", "PreemptLowerPriority")
            )
        )
    return errors


def _group_errors(spec: Obj, path: str, version: str) -> list[FieldError]:
    """What a PodGroup's spec and a Workload's template share."""
    errors = policy_errors(spec.get("schedulingPolicy"), f"{path}.schedulingPolicy")
    errors += constraints_errors(spec.get("schedulingConstraints"), f"{path}.schedulingConstraints")
    errors += claims_errors(spec.get("resourceClaims"), f"{path}.resourceClaims")
    errors += _disruption_errors(spec.get("disruptionMode"), f"{path}.disruptionMode", version)
    errors += _priority_errors(spec, path, version)
    return errors


def _reference_errors(spec: Obj, version: str) -> list[FieldError]:
    """The template a PodGroup names: v1alpha2's podGroupTemplateRef.workload, v1beta1's
    workloadRef (both names required)."""
    if version == V1ALPHA2:
        reference = spec.get("podGroupTemplateRef")
        if reference is None:
            return []
        path = "spec.podGroupTemplateRef"
        if not _present(reference, "workload"):
            return _union(path, [], ("workload",))
        workload, names = reference["workload"], ("workloadName", "podGroupTemplateName")
        path = f"{path}.workload"
    else:
        workload = spec.get("workloadRef")
        if workload is None:
            return []
        path, names = "spec.workloadRef", ("workloadName", "templateName")
    errors: list[FieldError] = []
    for name, check in zip(names, (subdomain_problem, _label_problem), strict=True):
        value = workload.get(name) if isinstance(workload, dict) else None
        if not value:
            errors.append(fields.required(f"{path}.{name}"))
        elif check(str(value)):
            errors.append(fields.invalid(f"{path}.{name}", value, check(str(value))))
    return errors


def _label_problem(value: str) -> str:
    return "" if is_dns_label(value) else LABEL_MSG


def condition_errors(status: Any) -> list[FieldError]:
    """metav1.Condition's rules (ValidateConditions) over status.conditions."""
    conditions = status.get("conditions") if isinstance(status, dict) else None
    errors: list[FieldError] = []
    for index, condition in enumerate(conditions or []):
        if not isinstance(condition, dict):
            continue
        at = f"status.conditions[{index}]"
        kind = condition.get("type")
        if not kind:
            errors.append(fields.required(f"{at}.type"))
        else:
            errors += qualified_name_errors(str(kind), f"{at}.type")
        status_value = condition.get("status")
        if status_value not in _CONDITION_STATUSES:
            errors.append(fields.not_supported(f"{at}.status", status_value, _CONDITION_STATUSES))
        if not condition.get("lastTransitionTime"):
            errors.append(fields.required(f"{at}.lastTransitionTime"))
        reason = condition.get("reason")
        if not reason:
            errors.append(fields.required(f"{at}.reason"))
        elif not _REASON_RE.match(str(reason)):
            errors.append(fields.invalid(f"{at}.reason", reason, _REASON_MSG))
        message = condition.get("message") or ""
        if len(str(message)) > MAX_CONDITION_MESSAGE:
            errors.append(fields.too_long(f"{at}.message", MAX_CONDITION_MESSAGE))
    return errors


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


class PodGroupStrategy(KindStrategy):
    """A native PodGroup at one version: its defaults, and its validation on create, on
    update (the spec is immutable but v1beta1's gang.minCount) and on a status write."""

    group = GROUP
    kind = "PodGroup"

    def __init__(self, version: str) -> None:
        self.version = version

    def prepare_for_create(self, obj: Obj) -> None:
        """Defaults; a new PodGroup's status is reset."""
        self._default(obj)
        obj["status"] = {}

    def _default(self, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        if self.version == V1ALPHA2:
            spec.setdefault("podGroupTemplateRef", None)
            if spec.get("disruptionMode") is None:
                spec["disruptionMode"] = "Pod"
        elif spec.get("disruptionMode") is None:
            spec["disruptionMode"] = {"single": {}}

    def _errors(self, obj: Obj) -> list[FieldError]:
        spec = _spec(obj)
        errors = _reference_errors(spec, self.version)
        errors += _group_errors(spec, "spec", self.version)
        parent = spec.get("parentCompositePodGroupName")
        if self.version == V1BETA1 and parent:
            problem = subdomain_problem(str(parent))
            if problem:
                errors.append(fields.invalid("spec.parentCompositePodGroupName", parent, problem))
        return errors

    def validate_update(self, old: Obj, new: Obj) -> None:
        """422 for a changed immutable field, an invalid spec or invalid conditions."""
        errors = self._errors(new) + self._immutable_errors(_spec(old), _spec(new))
        errors += condition_errors(new.get("status"))
        self._refuse(new, errors)

    def _immutable_errors(self, old: Obj, new: Obj) -> list[FieldError]:
        fixed = [
            "podGroupTemplateRef",
            "workloadRef",
            "parentCompositePodGroupName",
            "schedulingConstraints",
            "resourceClaims",
            "disruptionMode",
            "priorityClassName",
            "priority",
            "preemptionPolicy",
        ]
        errors = [_immutable(f"spec.{f}") for f in fixed if old.get(f) != new.get(f)]
        old_policy, new_policy = old.get("schedulingPolicy"), new.get("schedulingPolicy")
        if self.version == V1ALPHA2:
            if old_policy != new_policy:
                errors.append(_immutable("spec.schedulingPolicy"))
        elif _variant(old_policy) != _variant(new_policy):
            # v1beta1: the variant is fixed, gang.minCount may change (a gang resized).
            errors.append(_immutable("spec.schedulingPolicy"))
        return errors


def _variant(policy: Any) -> tuple[str, ...]:
    return tuple(m for m in ("basic", "gang") if _present(policy, m))


class WorkloadStrategy(KindStrategy):
    """A native Workload at one version: v1alpha2 writes a template's schedulingConstraints
    as null; its templates (1 to 8, each named once) are validated as a PodGroup's spec, and
    are immutable (v1beta1: none added or removed, only gang.minCount changes)."""

    group = GROUP
    kind = "Workload"

    def __init__(self, version: str) -> None:
        self.version = version

    def _default(self, obj: Obj) -> None:
        if self.version != V1ALPHA2:
            return
        for template in _spec(obj).get("podGroupTemplates") or []:
            if isinstance(template, dict):
                template.setdefault("schedulingConstraints", None)

    def _errors(self, obj: Obj) -> list[FieldError]:
        spec = _spec(obj)
        errors = self._reference_errors(spec.get("controllerRef"))
        templates = spec.get("podGroupTemplates")
        path = "spec.podGroupTemplates"
        if not templates:
            return [*errors, fields.required(path)]
        if len(templates) > MAX_TEMPLATES:
            return [*errors, _too_many(path, len(templates), MAX_TEMPLATES)]
        seen: set[str] = set()
        for index, template in enumerate(templates):
            if not isinstance(template, dict):
                continue
            at = f"{path}[{index}]"
            name = template.get("name")
            if name in seen:
                errors.append(
                    FieldError(
                        at,
                        f"Duplicate value: {_go_json(template, _TEMPLATE_FIELDS)}",
                        "FieldValueDuplicate",
                    )
                )
            seen.add(str(name))
            if not name:
                errors.append(fields.required(f"{at}.name"))
            elif not is_dns_label(str(name)):
                errors.append(fields.invalid(f"{at}.name", name, LABEL_MSG))
            errors += _group_errors(template, at, self.version)
        return errors

    @staticmethod
    def _reference_errors(reference: Any) -> list[FieldError]:
        if not isinstance(reference, dict):
            return []
        errors = [
            fields.required(f"spec.controllerRef.{name}")
            for name in ("kind", "name")
            if not reference.get(name)
        ]
        group = reference.get("apiGroup")
        if group and subdomain_problem(str(group)):
            errors.append(
                fields.invalid("spec.controllerRef.apiGroup", group, subdomain_problem(str(group)))
            )
        return errors

    def validate_update(self, old: Obj, new: Obj) -> None:
        """422 for a changed immutable field, or an invalid spec."""
        old_spec, new_spec = _spec(old), _spec(new)
        errors = self._errors(new)
        if old_spec.get("controllerRef") != new_spec.get("controllerRef"):
            errors.append(_immutable("spec.controllerRef"))
        old_templates = old_spec.get("podGroupTemplates") or []
        new_templates = new_spec.get("podGroupTemplates") or []
        if self.version == V1ALPHA2:
            if old_templates != new_templates:
                errors.append(_immutable("spec.podGroupTemplates"))
        elif [_without_min_count(t) for t in old_templates] != [
            _without_min_count(t) for t in new_templates
        ]:
            errors.append(_immutable("spec.podGroupTemplates"))
        self._refuse(new, errors)


def _without_min_count(template: Any) -> Any:
    """A v1beta1 template as far as it is immutable: all of it but gang.minCount."""
    if not isinstance(template, dict):
        return template
    fixed = copy.deepcopy(template)
    gang = (fixed.get("schedulingPolicy") or {}).get("gang")
    if isinstance(gang, dict):
        gang.pop("minCount", None)
    return fixed


def _go_json(item: Obj, order: tuple[str, ...]) -> str:
    """A list item as Go's JSON encoding writes it: its fields in the struct's order."""
    ordered = {key: item[key] for key in order if key in item}
    return json.dumps(ordered, separators=(",", ":"))


def scheduling_group_errors(spec: Obj) -> list[FieldError]:
    """A pod's spec.schedulingGroup: a one-of whose one member, podGroupName, must be set,
    a DNS subdomain (the PodGroup, in the pod's namespace, need not exist yet)."""
    group = spec.get("schedulingGroup")
    if group is None:
        return []
    name = group.get("podGroupName") if isinstance(group, dict) else None
    path = "spec.schedulingGroup.podGroupName"
    if not name:
        return [fields.invalid(path, None, "must specify one of: `podGroupName`")]
    problem = subdomain_problem(str(name))
    return [fields.invalid(path, name, problem)] if problem else []
