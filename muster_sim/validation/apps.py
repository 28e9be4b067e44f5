"""The apps/v1 workload kinds as kube-apiserver defaults and validates them: ReplicaSets,
Deployments (RollingUpdate's surge and unavailability) and StatefulSets (their service name,
pod management and update strategy, what an update may change)."""

from __future__ import annotations

import re
from typing import Any

from muster_sim.errors import FieldError
from muster_sim.validation import fields
from muster_sim.validation.names import qualified_name_errors
from muster_sim.validation.workloads import (
    WorkloadStrategy,
    nonnegative_errors,
    restart_always_errors,
    selector_errors,
    selector_immutable,
    spec_of,
    template_errors,
    template_labels,
    template_of,
)

Obj = dict[str, Any]

APPS_GROUP = "apps"
_PERCENT = re.compile(r"^[0-9]+%$")
_PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  "
    "or '93%', regex used for validation is '[0-9]+%')"
)


class ReplicaSetStrategy(WorkloadStrategy):
    """apps/v1 ReplicaSet: replicas 1 by default, a selector its template matches."""

    group = APPS_GROUP
    kind = "ReplicaSet"

    def _errors(self, obj: Obj) -> list[FieldError]:
        spec = spec_of(obj)
        errors = nonnegative_errors(spec.get("replicas"), "spec.replicas")
        errors += nonnegative_errors(spec.get("minReadySeconds"), "spec.minReadySeconds")
        errors += selector_errors(spec, "empty selector is invalid for deployment")
        template = template_of(spec)
        errors += template_errors(template, "spec.template", self.kind)
        errors += restart_always_errors(template, self.kind)
        return errors

    def _update_errors(self, old: Obj, new: Obj) -> list[FieldError]:
        return selector_immutable(old, new)


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
                fields.invalid(
                    f"{path}.{name}",
                    value,
                    _PERCENT_MESSAGE,
                )
            )
        else:
            errors += nonnegative_errors(value, f"{path}.{name}")
    unavailable = rolling.get("maxUnavailable")
    if _percent_or_int(unavailable) == 0 and _percent_or_int(rolling.get("maxSurge")) == 0:
        errors.append(
            fields.invalid(
                f"{path}.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0"
            )
        )
    if isinstance(unavailable, str) and _PERCENT.match(unavailable) and int(unavailable[:-1]) > 100:
        errors.append(
            fields.invalid(f"{path}.maxUnavailable", unavailable, "must not be greater than 100%")
        )
    return errors


class DeploymentStrategy(WorkloadStrategy):
    """apps/v1 Deployment: RollingUpdate 25%/25%, 10 revisions kept, a 600 s deadline."""

    group = APPS_GROUP
    kind = "Deployment"

    def _default(self, obj: Obj) -> None:
        super()._default(obj)
        spec = spec_of(obj)
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
        spec = spec_of(obj)
        errors = nonnegative_errors(spec.get("replicas"), "spec.replicas")
        errors += selector_errors(spec, "empty selector is invalid for deployment")
        template = template_of(spec)
        errors += template_errors(template, "spec.template", "Deployment")
        errors += restart_always_errors(template, "ReplicaSet")
        errors += self._strategy_errors(spec.get("strategy") or {})
        errors += nonnegative_errors(spec.get("minReadySeconds"), "spec.minReadySeconds")
        errors += nonnegative_errors(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
        deadline = spec.get("progressDeadlineSeconds")
        if isinstance(deadline, int):
            errors += nonnegative_errors(deadline, "spec.progressDeadlineSeconds")
            if deadline <= int(spec.get("minReadySeconds") or 0):
                errors.append(
                    fields.invalid(
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
                    fields.forbidden(
                        "spec.strategy.rollingUpdate",
                        "may not be specified when strategy `type` is 'Recreate'",
                    )
                ]
            return []
        if kind == "RollingUpdate":
            if not isinstance(rolling, dict):
                return [
                    fields.required(
                        "spec.strategy.rollingUpdate", "this should be defaulted and never be nil"
                    )
                ]
            return _rolling_update_errors(rolling, "spec.strategy.rollingUpdate")
        return [fields.not_supported("spec.strategy", strategy, ("Recreate", "RollingUpdate"))]

    def _update_errors(self, old: Obj, new: Obj) -> list[FieldError]:
        return selector_immutable(old, new)


# What an update may change in a StatefulSet's spec; the rest is fixed at create.
_STATEFULSET_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)


class StatefulSetStrategy(WorkloadStrategy):
    """apps/v1 StatefulSet: OrderedReady, RollingUpdate from partition 0, claims retained."""

    group = APPS_GROUP
    kind = "StatefulSet"

    def _default(self, obj: Obj) -> None:
        super()._default(obj)
        spec = spec_of(obj)
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
        spec = spec_of(obj)
        errors: list[FieldError] = []
        policy = spec.get("podManagementPolicy", "")
        if not policy:
            errors.append(fields.required("spec.podManagementPolicy"))
        elif policy not in ("OrderedReady", "Parallel"):
            errors.append(
                fields.invalid(
                    "spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"
                )
            )
        errors += self._update_strategy_errors(spec.get("updateStrategy") or {})
        retention = spec.get("persistentVolumeClaimRetentionPolicy")
        if isinstance(retention, dict):
            for name in ("whenDeleted", "whenScaled"):
                value = retention.get(name, "")
                if value not in ("Retain", "Delete"):
                    errors.append(
                        fields.not_supported(
                            f"spec.persistentVolumeClaimRetentionPolicy.{name}",
                            value,
                            ("Retain", "Delete"),
                        )
                    )
        errors += nonnegative_errors(spec.get("replicas"), "spec.replicas")
        errors += nonnegative_errors(spec.get("minReadySeconds"), "spec.minReadySeconds")
        ordinals = spec.get("ordinals")
        if isinstance(ordinals, dict):
            errors += nonnegative_errors(ordinals.get("start"), "spec.ordinals.start")
        errors += selector_errors(spec, "empty selector is invalid for statefulset")
        # ValidatePodTemplateSpecForStatefulSet checks the template's labels and not its
        # pod spec (a TODO in kube's source): a StatefulSet's containers are not validated.
        template = template_of(spec)
        for key in template_labels(template):
            errors.extend(qualified_name_errors(str(key), "spec.template.labels"))
        errors += restart_always_errors(template, self.kind)
        return errors

    @staticmethod
    def _update_strategy_errors(update: Obj) -> list[FieldError]:
        kind = update.get("type", "")
        rolling = update.get("rollingUpdate")
        if not kind:
            return [fields.required("spec.updateStrategy")]
        if kind == "OnDelete":
            if rolling is not None:
                return [
                    fields.invalid(
                        "spec.updateStrategy.rollingUpdate",
                        rolling,
                        "only allowed for updateStrategy 'RollingUpdate'",
                    )
                ]
            return []
        if kind == "RollingUpdate":
            if isinstance(rolling, dict):
                return nonnegative_errors(
                    rolling.get("partition"), "spec.updateStrategy.rollingUpdate.partition"
                )
            return []
        return [
            fields.invalid("spec.updateStrategy", update, "must be 'RollingUpdate' or 'OnDelete'")
        ]

    def _update_errors(self, old: Obj, new: Obj) -> list[FieldError]:
        fixed_old = {k: v for k, v in spec_of(old).items() if k not in _STATEFULSET_MUTABLE}
        fixed_new = {k: v for k, v in spec_of(new).items() if k not in _STATEFULSET_MUTABLE}
        if fixed_old != fixed_new:
            return [
                fields.forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                    "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                    "'minReadySeconds' are forbidden",
                )
            ]
        return []
