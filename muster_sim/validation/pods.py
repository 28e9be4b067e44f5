"""A pod's defaults and validation as kube-apiserver applies them: SetDefaults_Pod (and the
DefaultTolerationSeconds admission), ValidatePodSpec's container and resource checks, and what
an update may change; also a pod template's spec, which gets the same defaults and checks."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from muster_sim.errors import FieldError, bad_request, invalid

Obj = dict[str, Any]

_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_RE = re.compile(f"^{_SUBDOMAIN}$")
_LABEL_RE = re.compile(f"^{_LABEL}$")
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
QUANTITY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QUANTITY_RE = re.compile(QUANTITY_PATTERN)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
# Kinds whose names are DNS-1123 labels rather than subdomains.
_LABEL_NAMED = frozenset({"Namespace", "Service", "StatefulSet"})


def parse_quantity(text: Any) -> Decimal | None:
    """A Kubernetes quantity ("500m", "1Gi", "2e3") as a Decimal; None when it does not parse."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return Decimal(str(text))
    if not isinstance(text, str) or not _QUANTITY_RE.match(text):
        return None
    match = _QUANTITY_RE.match(text)
    assert match is not None
    number, suffix = match.group(1), match.group(2)
    try:
        value = Decimal(number)
    except InvalidOperation:
        return None
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    if suffix in _DECIMAL:
        return value * _DECIMAL[suffix]
    if suffix[:1] in ("e", "E"):
        try:
            return value * (Decimal(10) ** int(suffix[1:]))
        except ValueError:
            return None
    return None


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
        (_LABEL_RE, LABEL_MSG) if kind in _LABEL_NAMED else (_SUBDOMAIN_RE, SUBDOMAIN_MSG)
    )
    if len(name) > 253 or not pattern.match(name):
        raise invalid(
            group, kind, name, [FieldError("metadata.name", f'Invalid value: "{name}": {message}')]
        )


def _path_segment_problem(name: str) -> str:
    """apimachinery's ValidatePathSegmentName, in its words ("" when the name is fine)."""
    if name in (".", ".."):
        return f"may not be '{name}'"
    for character in ("/", "%"):
        if character in name:
            return f"may not contain '{character}'"
    return ""


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
    status.setdefault("qosClass", _qos_class(spec))


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


def _qos_class(spec: Obj) -> str:
    guaranteed = True
    any_set = False
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        if requests or limits:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in limits or parse_quantity(requests.get(name, limits[name])) != (
                parse_quantity(limits[name])
            ):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


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
    # Imported here: its selector rules live in storage_validation, which imports this module.
    from muster_sim.validation.pod_scheduling import scheduling_field_errors

    errors.extend(scheduling_field_errors(spec))
    return errors


def _container_errors(path: str, container: Obj, kind: str) -> list[FieldError]:
    errors: list[FieldError] = []
    cname = container.get("name")
    if not cname:
        errors.append(FieldError(f"{path}.name", "Required value", "FieldValueRequired"))
    elif not _LABEL_RE.match(str(cname)):
        errors.append(FieldError(f"{path}.name", f'Invalid value: "{cname}": {LABEL_MSG}'))
    resources = container.get("resources") or {}
    parsed: dict[str, dict[str, Decimal]] = {}
    for section in ("requests", "limits"):
        for resource, raw in (resources.get(section) or {}).items():
            value = parse_quantity(raw)
            if value is None:
                # the real server fails while decoding, before validation: a 400
                raise bad_request(
                    f'{kind} in version "v1" cannot be handled as a {kind}: quantities must '
                    f"match the regular expression '{QUANTITY_PATTERN}'"
                )
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
    """422 when an update changes pod spec fields the real server keeps immutable (nodeName...)."""
    name = str(old["metadata"]["name"])
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
