"""batch/v1 Jobs as kube-apiserver defaults and validates them: completions, parallelism and
their modes, backoff, the selector and template labels generated from the Job's uid (the Job
strategy's PrepareForCreate), and what an update may change."""

from __future__ import annotations

import copy
from typing import Any

from muster_sim.errors import FieldError
from muster_sim.selectors import label_selector_matches
from muster_sim.validation import fields
from muster_sim.validation.names import LABEL_RE
from muster_sim.validation.selector_fields import label_selector_errors
from muster_sim.validation.workloads import (
    SELECTOR_MISMATCH,
    WorkloadStrategy,
    default_template,
    nonnegative_errors,
    spec_of,
    template_errors,
    template_labels,
    template_of,
)

Obj = dict[str, Any]

BATCH_GROUP = "batch"

# The labels the Job strategy puts on a Job's pod template; the first two select its pods.
JOB_CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")


class JobStrategy(WorkloadStrategy):
    """batch/v1 Job: completions and parallelism 1 when neither is set, NonIndexed, a
    backoff of 6, a selector generated from its uid."""

    group = BATCH_GROUP
    kind = "Job"

    def _default(self, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
            spec["parallelism"] = 1
        if spec.get("parallelism") is None:
            spec["parallelism"] = 1
        if spec.get("backoffLimit") is None:
            spec["backoffLimit"] = 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6
        pod_labels = template_labels(template_of(spec))
        meta = obj.setdefault("metadata", {})
        if pod_labels and not meta.get("labels"):
            meta["labels"] = dict(pod_labels)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        spec.setdefault("manualSelector", False)
        if spec.get("podReplacementPolicy") is None:
            spec["podReplacementPolicy"] = (
                "Failed" if spec.get("podFailurePolicy") is not None else "TerminatingOrFailed"
            )
        default_template(spec)

    def generate_selector(self, obj: Obj) -> None:
        """The selector and template labels of a Job that does not choose its own (kube's
        generateSelector, in the Job strategy's PrepareForCreate, once the uid is set)."""
        spec = spec_of(obj)
        if spec.get("manualSelector"):
            return
        meta = obj["metadata"]
        template = spec.setdefault("template", {})
        template_meta = template.setdefault("metadata", {})
        labels = template_meta.setdefault("labels", {})
        for key in JOB_NAME_LABELS:
            labels.setdefault(key, meta.get("name", ""))
        for key in JOB_CONTROLLER_UID_LABELS:
            labels.setdefault(key, meta.get("uid", ""))
        selector = spec.get("selector")
        if not isinstance(selector, dict):
            selector = spec["selector"] = {}
        match = selector.setdefault("matchLabels", {})
        match.setdefault(JOB_CONTROLLER_UID_LABELS[1], meta.get("uid", ""))

    def _errors(self, obj: Obj) -> list[FieldError]:
        spec = spec_of(obj)
        errors = self._generated_selector_errors(obj)
        for name in (
            "parallelism",
            "completions",
            "activeDeadlineSeconds",
            "backoffLimit",
            "ttlSecondsAfterFinished",
            "backoffLimitPerIndex",
            "maxFailedIndexes",
        ):
            errors += nonnegative_errors(spec.get(name), f"spec.{name}")
        errors += self._completion_mode_errors(spec)
        template = template_of(spec)
        errors += template_errors(template, "spec.template", self.kind)
        policy = (template.get("spec") or {}).get("restartPolicy", "")
        if policy in ("Always", ""):
            errors.append(
                fields.required(
                    "spec.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"'
                )
            )
        elif policy not in ("OnFailure", "Never"):
            errors.append(
                fields.not_supported(
                    "spec.template.spec.restartPolicy", policy, ("OnFailure", "Never")
                )
            )
        selector = spec.get("selector")
        if selector is None:
            errors.append(fields.required("spec.selector"))
        elif isinstance(selector, dict):
            errors += label_selector_errors(selector, "spec.selector")
            labels = template_labels(template)
            if not label_selector_matches(selector, labels):
                errors.append(
                    fields.invalid("spec.template.metadata.labels", labels, SELECTOR_MISMATCH)
                )
        errors += self._hostname_errors(obj)
        return errors

    @staticmethod
    def _generated_selector_errors(obj: Obj) -> list[FieldError]:
        spec = spec_of(obj)
        if spec.get("manualSelector") or not isinstance(spec.get("selector"), dict):
            return []
        meta = obj["metadata"]
        labels = template_labels(template_of(spec))
        errors: list[FieldError] = []
        expected = {
            **{key: str(meta.get("uid", "")) for key in JOB_CONTROLLER_UID_LABELS},
            **{key: str(meta.get("name", "")) for key in JOB_NAME_LABELS},
        }
        for key, value in expected.items():
            if key not in labels:
                errors.append(
                    fields.required(f"spec.template.metadata.labels[{key}]", f"must be '{value}'")
                )
            elif labels[key] != value:
                errors.append(
                    fields.invalid(
                        f"spec.template.metadata.labels[{key}]", labels, f"must be '{value}'"
                    )
                )
        if not label_selector_matches(spec["selector"], expected):
            errors.append(
                fields.invalid("spec.selector", spec["selector"], "`selector` not auto-generated")
            )
        return errors

    @staticmethod
    def _completion_mode_errors(spec: Obj) -> list[FieldError]:
        mode = spec.get("completionMode")
        errors: list[FieldError] = []
        if mode not in ("NonIndexed", "Indexed"):
            return [fields.not_supported("spec.completionMode", mode, ("NonIndexed", "Indexed"))]
        if mode == "Indexed":
            if spec.get("completions") is None:
                errors.append(
                    fields.required("spec.completions", "when completion mode is Indexed")
                )
            parallelism = spec.get("parallelism")
            if isinstance(parallelism, int) and parallelism > 100_000:
                errors.append(
                    fields.invalid(
                        "spec.parallelism",
                        parallelism,
                        "must be less than or equal to 100000 when completion mode is Indexed",
                    )
                )
            return errors
        for name in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(name) is not None:
                errors.append(
                    fields.invalid(f"spec.{name}", spec[name], "requires indexed completion mode")
                )
        return errors

    @staticmethod
    def _hostname_errors(obj: Obj) -> list[FieldError]:
        # An Indexed Job's pods are named <job>-<index>: the last must be a DNS label.
        spec = spec_of(obj)
        completions = spec.get("completions")
        if spec.get("completionMode") != "Indexed" or not isinstance(completions, int):
            return []
        if completions <= 0:
            return []
        name = str(obj["metadata"].get("name", ""))
        host = f"{name}-{completions - 1}"
        if len(host) <= 63 and LABEL_RE.match(host):
            return []
        return [
            fields.invalid(
                "metadata.name",
                name,
                f"will not able to create pod with invalid DNS label: {host}",
            )
        ]

    def _update_errors(self, old: Obj, new: Obj) -> list[FieldError]:
        before, after = spec_of(old), spec_of(new)
        errors: list[FieldError] = []
        errors += self._completions_update_errors(before, after)
        for name in (
            "selector",
            "completionMode",
            "podFailurePolicy",
            "backoffLimitPerIndex",
            "managedBy",
            "successPolicy",
        ):
            if after.get(name) != before.get(name):
                errors.append(fields.immutable(f"spec.{name}", after.get(name)))
        errors += self._template_update_errors(old, before, after)
        return errors

    @staticmethod
    def _completions_update_errors(before: Obj, after: Obj) -> list[FieldError]:
        # Elastic Indexed Jobs: completions may change only together with parallelism.
        if after.get("completions") == before.get("completions"):
            return []
        if after.get("completionMode") != "Indexed":
            return [fields.immutable("spec.completions", after.get("completions"))]
        if after.get("completions") is None or after.get("completions") == after.get("parallelism"):
            return []
        return [
            fields.invalid(
                "spec.completions",
                after.get("completions"),
                "can only be modified in tandem with spec.parallelism",
            )
        ]

    @staticmethod
    def _template_update_errors(old: Obj, before: Obj, after: Obj) -> list[FieldError]:
        old_template, new_template = template_of(before), template_of(after)
        suspended = bool(before.get("suspend"))
        if suspended and not (old.get("status") or {}).get("startTime"):
            # a suspended Job that never started may change its scheduling directives
            old_template = copy.deepcopy(old_template)
            old_meta = old_template.setdefault("metadata", {})
            new_meta = new_template.get("metadata") or {}
            for key in ("labels", "annotations"):
                _copy_key(old_meta, new_meta, key)
            old_spec = old_template.setdefault("spec", {})
            new_spec = new_template.get("spec") or {}
            for key in ("nodeSelector", "tolerations", "schedulingGates", "affinity"):
                _copy_key(old_spec, new_spec, key)
        if new_template != old_template:
            return [fields.immutable("spec.template", new_template)]
        return []


def _copy_key(target: Obj, source: Obj, key: str) -> None:
    if key in source:
        target[key] = source[key]
    else:
        target.pop(key, None)
