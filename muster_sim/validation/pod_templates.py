"""PodTemplates (core/v1), as kube-apiserver serves them: `template.spec` defaulted and
validated as a pod's spec is (ValidatePodTemplateSpec), on create and on every update.
ProvisioningRequests name them; sim's stand-in autoscaler reads them (cluster/autoscaler/)."""

from __future__ import annotations

from typing import Any

from muster_sim.errors import FieldError, invalid
from muster_sim.validation.pods import default_pod_spec, pod_spec_errors

Obj = dict[str, Any]


class PodTemplateStrategy:
    """The PodTemplate registry's defaults and validation."""

    def prepare_for_create(self, obj: Obj) -> None:
        """The v1 defaults of the template's pod spec."""
        _default(obj)

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        """The same defaults, as decoding applies them to every write."""
        _default(new)

    def validate_create(self, obj: Obj) -> None:
        """422 listing the template's field errors."""
        errors = template_errors(obj)
        if errors:
            raise invalid("", "PodTemplate", str(obj["metadata"].get("name", "")), errors)

    def validate_update(self, old: Obj, new: Obj) -> None:
        """A PodTemplate may change whole: its new template is validated as a new one's."""
        self.validate_create(new)


def _default(obj: Obj) -> None:
    template = obj.get("template")
    if isinstance(template, dict):
        # Go's encoding of the template's empty ObjectMeta, as the real server answers it.
        metadata = template.setdefault("metadata", {})
        if isinstance(metadata, dict):
            metadata.setdefault("creationTimestamp", None)
        spec = template.setdefault("spec", {})
        if isinstance(spec, dict):
            default_pod_spec(spec)


def template_errors(obj: Obj) -> list[FieldError]:
    """The field errors of a PodTemplate: its pod spec's, under `template.`."""
    template = obj.get("template")
    spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(spec, dict):
        # No spec is a spec with no containers, which is refused as one.
        spec = {}
    return [
        FieldError(f"template.{error.field}", error.message, error.reason)
        for error in pod_spec_errors(spec, "PodTemplate")
    ]
