"""What the workload kinds share as kube-apiserver defaults and validates them: a pod
template (defaulted and checked as a pod spec), a selector its labels match, replicas, and
the strategy every one of them follows (apps.py: Deployments, ReplicaSets, StatefulSets;
jobs.py: Jobs).

They are stored and validated with no controller behind them: sim makes no pods for them, as
a test or an operator under test makes the pods (with their ownerReferences) itself. The
defaults are apps/v1's and batch/v1's SetDefaults_*, a pod template's are a pod spec's; the
checks are those of pkg/apis/apps/validation and pkg/apis/batch/validation a client can trip
on, in the real server's words and field paths.
"""

from __future__ import annotations

from typing import Any

from muster_sim.errors import FieldError
from muster_sim.selectors import label_selector_matches
from muster_sim.validation import fields
from muster_sim.validation.names import qualified_name_errors
from muster_sim.validation.pods import default_pod_spec, pod_spec_errors
from muster_sim.validation.selector_fields import label_selector_errors
from muster_sim.validation.strategy import KindStrategy

Obj = dict[str, Any]

_NONNEGATIVE = "must be greater than or equal to 0"
SELECTOR_MISMATCH = "`selector` does not match template `labels`"


def spec_of(obj: Obj) -> Obj:
    """The object's spec, or {} where it is not a mapping."""
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def template_of(spec: Obj) -> Obj:
    """The spec's pod template, or {} where it is not a mapping."""
    template = spec.get("template")
    return template if isinstance(template, dict) else {}


def template_labels(template: Obj) -> dict[str, str]:
    """The pod template's labels."""
    labels = (template.get("metadata") or {}).get("labels")
    return dict(labels) if isinstance(labels, dict) else {}


def default_template(spec: Obj) -> None:
    """A pod template's defaults: a pod spec's."""
    template = spec.setdefault("template", {})
    if isinstance(template, dict):
        template_spec = template.setdefault("spec", {})
        if isinstance(template_spec, dict):
            default_pod_spec(template_spec)


def nonnegative_errors(value: Any, path: str) -> list[FieldError]:
    """An error unless the integer `value` (if it is one) is at least 0."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [fields.invalid(path, value, _NONNEGATIVE)]
    return []


def template_errors(template: Obj, path: str, kind: str) -> list[FieldError]:
    """ValidatePodTemplateSpec: the pod spec's checks under `path`.spec, and label keys."""
    errors: list[FieldError] = []
    for key in template_labels(template):
        errors.extend(qualified_name_errors(str(key), f"{path}.metadata.labels"))
    template_spec = template.get("spec")
    for error in pod_spec_errors(template_spec if isinstance(template_spec, dict) else {}, kind):
        errors.append(
            FieldError(f"{path}.spec{error.field[len('spec') :]}", error.message, error.reason)
        )
    return errors


def selector_errors(spec: Obj, empty_detail: str) -> list[FieldError]:
    """A required, valid, non-empty selector that the template's labels match."""
    selector = spec.get("selector")
    if selector is None:
        return [fields.required("spec.selector")]
    if not isinstance(selector, dict):
        return []
    errors = label_selector_errors(selector, "spec.selector")
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errors.append(fields.invalid("spec.selector", selector, empty_detail))
        return errors
    labels = template_labels(template_of(spec))
    if not label_selector_matches(selector, labels):
        errors.append(fields.invalid("spec.template.metadata.labels", labels, SELECTOR_MISMATCH))
    return errors


def restart_always_errors(template: Obj, kind: str) -> list[FieldError]:
    """The template of a controller that keeps pods running: restartPolicy Always only."""
    template_spec = template.get("spec") or {}
    errors: list[FieldError] = []
    policy = template_spec.get("restartPolicy", "")
    if policy != "Always":
        errors.append(fields.not_supported("spec.template.spec.restartPolicy", policy, ("Always",)))
    if template_spec.get("activeDeadlineSeconds") is not None:
        errors.append(
            fields.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )
    return errors


class WorkloadStrategy(KindStrategy):
    """A workload kind's defaults, status reset and validation: one 422 lists every error."""

    group = ""
    kind = ""

    def prepare_for_create(self, obj: Obj) -> None:
        """Drop a client's status (the strategy's reset) and apply the v1 defaults."""
        obj.pop("status", None)
        self._default(obj)

    def validate_update(self, old: Obj, new: Obj) -> None:
        """422 listing every field error of the new object and every change not allowed."""
        self._refuse(new, self._errors(new) + self._update_errors(old, new))

    def _default(self, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("replicas", 1)
            default_template(spec)

    def _errors(self, obj: Obj) -> list[FieldError]:
        raise NotImplementedError

    def _update_errors(self, old: Obj, new: Obj) -> list[FieldError]:
        return []


def selector_immutable(old: Obj, new: Obj) -> list[FieldError]:
    """An error when an update changes the selector."""
    selector = spec_of(new).get("selector")
    if selector != spec_of(old).get("selector"):
        return [fields.immutable("spec.selector", selector)]
    return []
