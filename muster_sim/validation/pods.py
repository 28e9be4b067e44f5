"""A pod's defaults and validation as kube-apiserver applies them: SetDefaults_Pod (and the
DefaultTolerationSeconds admission), ValidatePodSpec's container and resource checks (the
pod-level resources' in pod_resources.py), and what an update may change; also a pod
template's spec, which gets the same checks and the defaults of a PodSpec."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from muster_sim.errors import FieldError, invalid
from muster_sim.validation.names import LABEL_MSG, LABEL_RE
from muster_sim.validation.pod_resources import (
    default_pod_resources,
    drop_empty_lists,
    pod_resources_errors,
    qos_class,
)
from muster_sim.validation.pod_scheduling import claim_status_errors, scheduling_field_errors
from muster_sim.validation.quantities import decoded_quantity

Obj = dict[str, Any]


def default_pod(pod: Obj) -> None:
    """Fill the defaults the real server writes into a new pod."""
    spec = pod.setdefault("spec", {})
    default_pod_spec(spec)
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if not isinstance(container, dict):
            continue
        resources = container.setdefault("resources", {})
        # a limit with no request defaults the request to the limit, which schedulers rely on
        # (SetDefaults_Pod: a pod's, not a pod template's)
        limits = resources.get("limits") or {}
        if limits:
            requests = resources.setdefault("requests", {})
            for name, value in limits.items():
                requests.setdefault(name, value)
    # then the pod level's, from the containers' as they now stand
    default_pod_resources(spec)
    # SetDefaults_Pod's own (a PodTemplate's spec does not get it)
    spec.setdefault("enableServiceLinks", True)
    # DefaultTolerationSeconds admission
    tolerations = spec.setdefault("tolerations", [])
    for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(
            t.get("key") == taint and t.get("effect") in (None, "", "NoExecute")
            for t in tolerations
            if isinstance(t, dict)
        ):
            tolerations.append(
                {
                    "key": taint,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            )
    status = pod.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", qos_class(spec))


def default_pod_spec(spec: Obj) -> None:
    """The v1 defaults of a PodSpec and its containers, which a pod and a pod template (of a
    Job, ReplicaSet, a PodTemplate...) get alike."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if not isinstance(container, dict):
            continue
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        image = str(container.get("image", ""))
        latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
        container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
        container.setdefault("resources", {})
    drop_empty_lists(spec)


def validate_pod(pod: Obj) -> None:
    """400 for unparseable quantities (a decode error), 422 for other invalid fields."""
    name = str(pod["metadata"].get("name", ""))
    errors = pod_spec_errors(pod.get("spec") or {}, "Pod")
    if errors:
        raise invalid("", "Pod", name, errors)


def pod_spec_errors(spec: Obj, kind: str) -> list[FieldError]:
    """ValidatePodSpec's checks, with field paths under `spec`; a quantity that does not
    parse is the 400 kube's decoder answers for an object of `kind`."""
    errors: list[FieldError] = []
    containers = spec.get("containers")
    if not containers:
        errors.append(FieldError("spec.containers", "Required value", "FieldValueRequired"))
    for group in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(group) or []):
            errors.extend(_container_errors(f"spec.{group}[{index}]", container, kind))
    errors.extend(pod_resources_errors(spec, kind))
    errors.extend(scheduling_field_errors(spec))
    return errors


def _container_errors(path: str, container: Obj, kind: str) -> list[FieldError]:
    errors: list[FieldError] = []
    cname = container.get("name")
    if not cname:
        errors.append(FieldError(f"{path}.name", "Required value", "FieldValueRequired"))
    elif not LABEL_RE.match(str(cname)):
        errors.append(FieldError(f"{path}.name", f'Invalid value: "{cname}": {LABEL_MSG}'))
    resources = container.get("resources") or {}
    parsed: dict[str, dict[str, Fraction]] = {}
    for section in ("requests", "limits"):
        for resource, raw in (resources.get(section) or {}).items():
            value = decoded_quantity(raw, kind)
            if value < 0:
                errors.append(
                    FieldError(
                        f"{path}.resources.{section}[{resource}]",
                        f'Invalid value: "{raw}": must be greater than or equal to 0',
                    )
                )
            parsed.setdefault(section, {})[resource] = value
    for resource, request in parsed.get("requests", {}).items():
        limit = parsed.get("limits", {}).get(resource)
        if limit is not None and request > limit:
            raw = resources["requests"][resource]
            errors.append(
                FieldError(
                    f"{path}.resources.requests",
                    f'Invalid value: "{raw}": must be less than or equal to {resource} limit of '
                    f"{resources['limits'][resource]}",
                )
            )
    return errors


_MUTABLE_POD_SPEC = (
    "spec.containers[*].image",
    "spec.initContainers[*].image",
    "spec.activeDeadlineSeconds",
    "spec.tolerations (only additions to existing tolerations)",
    "spec.terminationGracePeriodSeconds (allow it to be set to 1 if it was previously negative)",
)


def validate_pod_update(old: Obj, new: Obj) -> None:
    """422 when an update changes pod spec fields the real server keeps immutable (nodeName...),
    or writes resource claim statuses that do not match the pod's claims."""
    name = str(old["metadata"]["name"])
    status, old_status = new.get("status") or {}, old.get("status") or {}
    if status.get("resourceClaimStatuses") != old_status.get("resourceClaimStatuses"):
        errors = claim_status_errors(status, new.get("spec") or {})
        if errors:
            raise invalid("", "Pod", name, errors)
    _validate_toleration_update(name, old.get("spec") or {}, new.get("spec") or {})
    if _immutable_view(old.get("spec") or {}) == _immutable_view(new.get("spec") or {}):
        return
    allowed = ",".join(
        f"`{f.split(' ', 1)[0]}`" + (f" {f.split(' ', 1)[1]}" if " " in f else "")
        for f in _MUTABLE_POD_SPEC
    )
    raise invalid(
        "",
        "Pod",
        name,
        [
            FieldError(
                "spec",
                f"Forbidden: pod updates may not change fields other than {allowed}",
                "FieldValueForbidden",
            )
        ],
    )


def _validate_toleration_update(name: str, old: Obj, new: Obj) -> None:
    """Tolerations may be added, never dropped or changed but for tolerationSeconds."""

    def without_seconds(toleration: Any) -> Any:
        if not isinstance(toleration, dict):
            return toleration
        return {k: v for k, v in toleration.items() if k != "tolerationSeconds"}

    remaining = [without_seconds(t) for t in new.get("tolerations") or []]
    for toleration in old.get("tolerations") or []:
        kept = without_seconds(toleration)
        if kept in remaining:
            remaining.remove(kept)
            continue
        raise invalid(
            "",
            "Pod",
            name,
            [
                FieldError(
                    "spec.tolerations",
                    "Forbidden: existing toleration can not be modified except its "
                    "tolerationSeconds",
                    "FieldValueForbidden",
                )
            ],
        )


def _immutable_view(spec: Obj) -> Obj:
    view = {
        k: v
        for k, v in spec.items()
        if k
        not in (
            "activeDeadlineSeconds",
            "tolerations",
            "terminationGracePeriodSeconds",
            "schedulingGates",
        )
    }
    for group in ("containers", "initContainers"):
        if group in view:
            view[group] = [
                {k: v for k, v in c.items() if k != "image"}
                for c in view[group]
                if isinstance(c, dict)
            ]
    return view
