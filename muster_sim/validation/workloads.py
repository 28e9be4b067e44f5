"""Defaults, strategy resets and validation of the workload kinds, as kube-apiserver applies them.

Deployments, ReplicaSets and StatefulSets (apps/v1) and Jobs (batch/v1) are stored and
validated, with no controller behind them: sim makes no pods for them, as a test or an
operator under test makes the pods (with their ownerReferences) itself. The defaults are
apps/v1's and batch/v1's SetDefaults_*, a pod template's are a pod spec's; the checks are
those of pkg/apis/apps/validation and pkg/apis/batch/validation a client can trip on, in the
real server's words and field paths. A Job's selector and its template's labels are
generated from its uid, as the Job strategy's PrepareForCreate does.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from muster_sim.errors import FieldError, invalid
from muster_sim.selectors import label_selector_matches
from muster_sim.validation.pods import default_pod_spec, pod_spec_errors
from muster_sim.validation.volumes import (
    _forbidden,
    _immutable,
    _invalid,
    _not_supported,
    _required,
    label_selector_errors,
    qualified_name_errors,
)

Obj = dict[str, Any]

APPS_GROUP = "apps"
BATCH_GROUP = "batch"

_NONNEGATIVE = "must be greater than or equal to 0"
_SELECTOR_MISMATCH = "`selector` does not match template `labels`"
_PERCENT = re.compile(r"^[0-9]+%$")
_PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  "
    "or '93%', regex used for validation is '[0-9]+%')"
)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

# The labels the Job strategy puts on a Job's pod template; the first two select its pods.
JOB_CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _template(spec: Obj) -> Obj:
    template = spec.get("template")
    return template if isinstance(template, dict) else {}


def _labels(template: Obj) -> dict[str, str]:
    labels = (template.get("metadata") or {}).get("labels")
    return dict(labels) if isinstance(labels, dict) else {}


def _default_template(spec: Obj) -> None:
    template = spec.setdefault("template", {})
    if isinstance(template, dict):
        template_spec = template.setdefault("spec", {})
        if isinstance(template_spec, dict):
            default_pod_spec(template_spec)


def _nonnegative(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [_invalid(path, value, _NONNEGATIVE)]
    return []


def _template_errors(template: Obj, path: str, kind: str) -> list[FieldError]:
    """ValidatePodTemplateSpec: the pod spec's checks under `path`.spec, and label keys."""
    errors: list[FieldError] = []
    for key in _labels(template):
        errors.extend(qualified_name_errors(str(key), f"{path}.metadata.labels"))
    template_spec = template.get("spec")
    for error in pod_spec_errors(template_spec if isinstance(template_spec, dict) else {}, kind):
        errors.append(
            FieldError(f"{path}.spec{error.field[len('spec') :]}", error.message, error.reason)
        )
    return errors


def _selector_errors(spec: Obj, empty_detail: str) -> list[FieldError]:
    """A required, valid, non-empty selector that the template's labels match."""
    selector = spec.get("selector")
    if selector is None:
        return [_required("spec.selector")]
    if not isinstance(selector, dict):
        return []
    errors = label_selector_errors(selector, "spec.selector")
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errors.append(_invalid("spec.selector", selector, empty_detail))
        return errors
    labels = _labels(_template(spec))
    if not label_selector_matches(selector, labels):
        errors.append(_invalid("spec.template.metadata.labels", labels, _SELECTOR_MISMATCH))
    return errors


def _restart_always_errors(template: Obj, kind: str) -> list[FieldError]:
    """The template of a controller that keeps pods running: restartPolicy Always only."""
    template_spec = template.get("spec") or {}
    errors: list[FieldError] = []
    policy = template_spec.get("restartPolicy", "")
    if policy != "Always":
        errors.append(_not_supported("spec.template.spec.restartPolicy", policy, ("Always",)))
    if template_spec.get("activeDeadlineSeconds") is not None:
        errors.append(
            _forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )
    return errors


class _WorkloadStrategy:
    """A workload kind's defaults, status reset and validation: one 422 lists every error."""

    group = ""
    kind = ""

    def prepare_for_create(self, obj: Obj) -> None:
        """Drop a client's status (the strategy's reset) and apply the v1 defaults."""
        obj.pop("status", None)
        self._default(obj)

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        """The v1 defaults, as decoding applies them to every write."""
        self._default(new)

    def validate_create(self, obj: Obj) -> None:
        """422 listing every field error of a new object."""
        self._refuse(obj, self._errors(obj))

    def validate_update(self, old: Obj, new: Obj) -> None:
        """422 listing every field error of the new object and every change not allowed."""
        self._refuse(new, self._errors(new) + self._update_errors(old, new))

    def _refuse(self, obj: Obj, errors: list[FieldError]) -> None:
        if errors:
            raise invalid(self.group, self.kind, str(obj["metadata"].get("name", "")), errors)

    def _default(self, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("replicas", 1)
            _default_template(spec)

    def _errors(self, obj: Obj) -> list[FieldError]:
        raise NotImplementedError

    def _update_errors(self, old: Obj, new: Obj) -> list[FieldError]:
        return []


def _selector_immutable(old: Obj, new: Obj) -> list[FieldError]:
    selector = _spec(new).get("selector")
    if selector != _spec(old).get("selector"):
        return [_immutable("spec.selector", selector)]
    return []


class ReplicaSetStrategy(_WorkloadStrategy):
    """apps/v1 ReplicaSet: replicas 1 by default, a selector its template matches."""

    group = APPS_GROUP
    kind = "ReplicaSet"

    def _errors(self, obj: Obj) -> list[FieldError]:
        spec = _spec(obj)
        errors = _nonnegative(spec.get("replicas"), "spec.replicas")
        errors += _nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
        errors += _selector_errors(spec, "empty selector is invalid for deployment")
        template = _template(spec)
        errors += _template_errors(template, "spec.template", self.kind)
        errors += _restart_always_errors(template, self.kind)
        return errors

    def _update_errors(self, old: Obj, new: Obj) -> list[FieldError]:
        return _selector_immutable(old, new)


def _percent_or_int(value: Any) -> int:
    if isinstance(value, str) and _PERCENT.match(value):
        return int(value[:-1])
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _rolling_update_errors(rolling: Obj, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for name in ("maxUnavailable", "maxSurge"):
        value = rolling.get(name)
        if isinstance(value, str) and not _PERCENT.match(value):
            errors.append(
                _invalid(
                    f"{path}.{name}",
                    value,
                    _PERCENT_MESSAGE,
                )
            )
        else:
            errors += _nonnegative(value, f"{path}.{name}")
    unavailable = rolling.get("maxUnavailable")
    if _percent_or_int(unavailable) == 0 and _percent_or_int(rolling.get("maxSurge")) == 0:
        errors.append(
            _invalid(f"{path}.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0")
        )
    if isinstance(unavailable, str) and _PERCENT.match(unavailable) and int(unavailable[:-1]) > 100:
        errors.append(
            _invalid(f"{path}.maxUnavailable", unavailable, "must not be greater than 100%")
        )
    return errors


class DeploymentStrategy(_WorkloadStrategy):
    """apps/v1 Deployment: RollingUpdate 25%/25%, 10 revisions kept, a 600 s deadline."""

    group = APPS_GROUP
    kind = "Deployment"

    def _default(self, obj: Obj) -> None:
        super()._default(obj)
        spec = _spec(obj)
        strategy = spec.setdefault("strategy", {})
        if isinstance(strategy, dict):
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = strategy.setdefault("rollingUpdate", {})
                if isinstance(rolling, dict):
                    rolling.setdefault("maxUnavailable", "25%")
                    rolling.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)

    def _errors(self, obj: Obj) -> list[FieldError]:
        spec = _spec(obj)
        errors = _nonnegative(spec.get("replicas"), "spec.replicas")
        errors += _selector_errors(spec, "empty selector is invalid for deployment")
        template = _template(spec)
        errors += _template_errors(template, "spec.template", "Deployment")
        errors += _restart_always_errors(template, "ReplicaSet")
        errors += self._strategy_errors(spec.get("strategy") or {})
        errors += _nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
        errors += _nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
        deadline = spec.get("progressDeadlineSeconds")
        if isinstance(deadline, int):
            errors += _nonnegative(deadline, "spec.progressDeadlineSeconds")
            if deadline <= int(spec.get("minReadySeconds") or 0):
                errors.append(
                    _invalid(
                        "spec.progressDeadlineSeconds",
                        deadline,
                        "must be greater than minReadySeconds",
                    )
                )
        return errors

    @staticmethod
    def _strategy_errors(strategy: Obj) -> list[FieldError]:
        kind = strategy.get("type")
        rolling = strategy.get("rollingUpdate")
        if kind == "Recreate":
            if rolling is not None:
                return [
                    _forbidden(
                        "spec.strategy.rollingUpdate",
                        "may not be specified when strategy `type` is 'Recreate'",
                    )
                ]
            return []
        if kind == "RollingUpdate":
            if not isinstance(rolling, dict):
                return [
                    _required(
                        "spec.strategy.rollingUpdate", "this should be defaulted and never be nil"
                    )
                ]
            return _rolling_update_errors(rolling, "spec.strategy.rollingUpdate")
        return [_not_supported("spec.strategy", strategy, ("Recreate", "RollingUpdate"))]

    def _update_errors(self, old: Obj, new: Obj) -> list[FieldError]:
        return _selector_immutable(old, new)


# What an update may change in a StatefulSet's spec; the rest is fixed at create.
_STATEFULSET_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)


class StatefulSetStrategy(_WorkloadStrategy):
    """apps/v1 StatefulSet: OrderedReady, RollingUpdate from partition 0, claims retained."""

    group = APPS_GROUP
    kind = "StatefulSet"

    def _default(self, obj: Obj) -> None:
        super()._default(obj)
        spec = _spec(obj)
        spec.setdefault("podManagementPolicy", "OrderedReady")
        update = spec.setdefault("updateStrategy", {})
        if isinstance(update, dict):
            if not update.get("type"):
                update["type"] = "RollingUpdate"
                update.setdefault("rollingUpdate", {})
            rolling = update.get("rollingUpdate")
            if update["type"] == "RollingUpdate" and isinstance(rolling, dict):
                rolling.setdefault("partition", 0)
        retention = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
        if isinstance(retention, dict):
            retention.setdefault("whenDeleted", "Retain")
            retention.setdefault("whenScaled", "Retain")
        spec.setdefault("revisionHistoryLimit", 10)

    def _errors(self, obj: Obj) -> list[FieldError]:
        spec = _spec(obj)
        errors: list[FieldError] = []
        policy = spec.get("podManagementPolicy", "")
        if not policy:
            errors.append(_required("spec.podManagementPolicy"))
        elif policy not in ("OrderedReady", "Parallel"):
            errors.append(
                _invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'")
            )
        errors += self._update_strategy_errors(spec.get("updateStrategy") or {})
        retention = spec.get("persistentVolumeClaimRetentionPolicy")
        if isinstance(retention, dict):
            for name in ("whenDeleted", "whenScaled"):
                value = retention.get(name, "")
                if value not in ("Retain", "Delete"):
                    errors.append(
                        _not_supported(
                            f"spec.persistentVolumeClaimRetentionPolicy.{name}",
                            value,
                            ("Retain", "Delete"),
                        )
                    )
        errors += _nonnegative(spec.get("replicas"), "spec.replicas")
        errors += _nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
        ordinals = spec.get("ordinals")
        if isinstance(ordinals, dict):
            errors += _nonnegative(ordinals.get("start"), "spec.ordinals.start")
        errors += _selector_errors(spec, "empty selector is invalid for statefulset")
        # ValidatePodTemplateSpecForStatefulSet checks the template's labels and not its
        # pod spec (a TODO in kube's source): a StatefulSet's containers are not validated.
        template = _template(spec)
        for key in _labels(template):
            errors.extend(qualified_name_errors(str(key), "spec.template.labels"))
        errors += _restart_always_errors(template, self.kind)
        return errors

    @staticmethod
    def _update_strategy_errors(update: Obj) -> list[FieldError]:
        kind = update.get("type", "")
        rolling = update.get("rollingUpdate")
        if not kind:
            return [_required("spec.updateStrategy")]
        if kind == "OnDelete":
            if rolling is not None:
                return [
                    _invalid(
                        "spec.updateStrategy.rollingUpdate",
                        rolling,
                        "only allowed for updateStrategy 'RollingUpdate'",
                    )
                ]
            return []
        if kind == "RollingUpdate":
            if isinstance(rolling, dict):
                return _nonnegative(
                    rolling.get("partition"), "spec.updateStrategy.rollingUpdate.partition"
                )
            return []
        return [_invalid("spec.updateStrategy", update, "must be 'RollingUpdate' or 'OnDelete'")]

    def _update_errors(self, old: Obj, new: Obj) -> list[FieldError]:
        fixed_old = {k: v for k, v in _spec(old).items() if k not in _STATEFULSET_MUTABLE}
        fixed_new = {k: v for k, v in _spec(new).items() if k not in _STATEFULSET_MUTABLE}
        if fixed_old != fixed_new:
            return [
                _forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                    "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                    "'minReadySeconds' are forbidden",
                )
            ]
        return []


class JobStrategy(_WorkloadStrategy):
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
        template_labels = _labels(_template(spec))
        meta = obj.setdefault("metadata", {})
        if template_labels and not meta.get("labels"):
            meta["labels"] = dict(template_labels)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        spec.setdefault("manualSelector", False)
        if spec.get("podReplacementPolicy") is None:
            spec["podReplacementPolicy"] = (
                "Failed" if spec.get("podFailurePolicy") is not None else "TerminatingOrFailed"
            )
        _default_template(spec)

    def generate_selector(self, obj: Obj) -> None:
        """The selector and template labels of a Job that does not choose its own (kube's
        generateSelector, in the Job strategy's PrepareForCreate, once the uid is set)."""
        spec = _spec(obj)
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
        spec = _spec(obj)
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
            errors += _nonnegative(spec.get(name), f"spec.{name}")
        errors += self._completion_mode_errors(spec)
        template = _template(spec)
        errors += _template_errors(template, "spec.template", self.kind)
        policy = (template.get("spec") or {}).get("restartPolicy", "")
        if policy in ("Always", ""):
            errors.append(
                _required("spec.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"')
            )
        elif policy not in ("OnFailure", "Never"):
            errors.append(
                _not_supported("spec.template.spec.restartPolicy", policy, ("OnFailure", "Never"))
            )
        selector = spec.get("selector")
        if selector is None:
            errors.append(_required("spec.selector"))
        elif isinstance(selector, dict):
            errors += label_selector_errors(selector, "spec.selector")
            labels = _labels(template)
            if not label_selector_matches(selector, labels):
                errors.append(_invalid("spec.template.metadata.labels", labels, _SELECTOR_MISMATCH))
        errors += self._hostname_errors(obj)
        return errors

    @staticmethod
    def _generated_selector_errors(obj: Obj) -> list[FieldError]:
        spec = _spec(obj)
        if spec.get("manualSelector") or not isinstance(spec.get("selector"), dict):
            return []
        meta = obj["metadata"]
        labels = _labels(_template(spec))
        errors: list[FieldError] = []
        expected = {
            **{key: str(meta.get("uid", "")) for key in JOB_CONTROLLER_UID_LABELS},
            **{key: str(meta.get("name", "")) for key in JOB_NAME_LABELS},
        }
        for key, value in expected.items():
            if key not in labels:
                errors.append(
                    _required(f"spec.template.metadata.labels[{key}]", f"must be '{value}'")
                )
            elif labels[key] != value:
                errors.append(
                    _invalid(f"spec.template.metadata.labels[{key}]", labels, f"must be '{value}'")
                )
        if not label_selector_matches(spec["selector"], expected):
            errors.append(
                _invalid("spec.selector", spec["selector"], "`selector` not auto-generated")
            )
        return errors

    @staticmethod
    def _completion_mode_errors(spec: Obj) -> list[FieldError]:
        mode = spec.get("completionMode")
        errors: list[FieldError] = []
        if mode not in ("NonIndexed", "Indexed"):
            return [_not_supported("spec.completionMode", mode, ("NonIndexed", "Indexed"))]
        if mode == "Indexed":
            if spec.get("completions") is None:
                errors.append(_required("spec.completions", "when completion mode is Indexed"))
            parallelism = spec.get("parallelism")
            if isinstance(parallelism, int) and parallelism > 100_000:
                errors.append(
                    _invalid(
                        "spec.parallelism",
                        parallelism,
                        "must be less than or equal to 100000 when completion mode is Indexed",
                    )
                )
            return errors
        for name in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(name) is not None:
                errors.append(
                    _invalid(f"spec.{name}", spec[name], "requires indexed completion mode")
                )
        return errors

    @staticmethod
    def _hostname_errors(obj: Obj) -> list[FieldError]:
        # An Indexed Job's pods are named <job>-<index>: the last must be a DNS label.
        spec = _spec(obj)
        completions = spec.get("completions")
        if spec.get("completionMode") != "Indexed" or not isinstance(completions, int):
            return []
        if completions <= 0:
            return []
        name = str(obj["metadata"].get("name", ""))
        host = f"{name}-{completions - 1}"
        if len(host) <= 63 and _DNS_LABEL.match(host):
            return []
        return [
            _invalid(
                "metadata.name",
                name,
                f"will not able to create pod with invalid DNS label: {host}",
            )
        ]

    def _update_errors(self, old: Obj, new: Obj) -> list[FieldError]:
        before, after = _spec(old), _spec(new)
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
                errors.append(_immutable(f"spec.{name}", after.get(name)))
        errors += self._template_update_errors(old, before, after)
        return errors

    @staticmethod
    def _completions_update_errors(before: Obj, after: Obj) -> list[FieldError]:
        # Elastic Indexed Jobs: completions may change only together with parallelism.
        if after.get("completions") == before.get("completions"):
            return []
        if after.get("completionMode") != "Indexed":
            return [_immutable("spec.completions", after.get("completions"))]
        if after.get("completions") is None or after.get("completions") == after.get("parallelism"):
            return []
        return [
            _invalid(
                "spec.completions",
                after.get("completions"),
                "can only be modified in tandem with spec.parallelism",
            )
        ]

    @staticmethod
    def _template_update_errors(old: Obj, before: Obj, after: Obj) -> list[FieldError]:
        old_template, new_template = _template(before), _template(after)
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
            return [_immutable("spec.template", new_template)]
        return []


def _copy_key(target: Obj, source: Obj, key: str) -> None:
    if key in source:
        target[key] = source[key]
    else:
        target.pop(key, None)
