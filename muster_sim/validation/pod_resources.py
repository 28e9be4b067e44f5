"""Pod-level resources (spec.resources, PodLevelResources, on by default since 1.34) as
kube-apiserver 1.36 treats them: SetDefaults_Pod's pod-level defaults, validatePodResources'
checks, and the QoS class a pod's resources give it (ComputePodQOS).

The containers' resources together are component-helpers' AggregateContainerRequests and
AggregateContainerLimits: max(sum of containers + sidecars, each init container with the
sidecars started before it). A sum keeps the format of its first non-zero part, as
resource.Quantity's Add does, since defaulted values and messages are written in it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from muster_sim.errors import FieldError
from muster_sim.validation import fields
from muster_sim.validation.names import qualified_name_errors
from muster_sim.validation.quantities import (
    canonical_quantity,
    decoded_quantity,
    quantity,
    quantity_format,
)

Obj = dict[str, Any]
# A value and the format it is written back in.
Amount = tuple[Fraction, str]
Amounts = dict[str, Amount]

CPU = "cpu"
MEMORY = "memory"
HUGEPAGES_PREFIX = "hugepages-"
# SupportedPodLevelResources(), as NotSupported lists them.
_SUPPORTED = ("cpu", "hugepages-", "memory")
# core's standard resource names (IsStandardResourceName), besides hugepages-<size>.
_STANDARD = frozenset(
    {
        "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
        "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
        "pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
        "configmaps", "persistentvolumeclaims", "requests.storage",
        "services.nodeports", "services.loadbalancers",
    }
)  # fmt: skip
_QOS_RESOURCES = (CPU, MEMORY)


def is_pod_level_resource(name: str) -> bool:
    """IsSupportedPodLevelResource: cpu, memory, hugepages-<size>."""
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def _hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def _overcommit_allowed(name: str) -> bool:
    """IsOvercommitAllowed: a native resource (no domain, or kubernetes.io's) but hugepages."""
    native = "/" not in name or "kubernetes.io/" in name
    return native and not _hugepages(name)


# --------------------------------------------------------------- defaults


def default_pod_resources(spec: Obj) -> None:
    """SetDefaults_Pod's pod-level defaults, after the containers' (requests from limits):
    hugepages limits from the containers' where the pod names neither a request nor a
    limit of that size, then, once the pod has limits, requests from the containers' (cpu
    and memory a container names) or else from the pod's limits."""
    resources = spec.get("resources")
    if not isinstance(resources, dict):
        return
    requests = _section(resources, "requests")
    limits = _section(resources, "limits")
    if requests or limits:
        for name, amount in containers_total(spec, "limits").items():
            if _hugepages(name) and name not in requests and name not in limits:
                limits[name] = _written(amount)
        if limits:
            resources["limits"] = limits
    if not limits:
        return
    for name, amount in containers_total(spec, "requests").items():
        if is_pod_level_resource(name) and _overcommit_allowed(name) and name not in requests:
            requests[name] = _written(amount)
    for name, value in limits.items():
        if is_pod_level_resource(name) and name not in requests:
            requests[name] = value
    if requests:
        resources["requests"] = requests


def drop_empty_lists(spec: Obj) -> None:
    """Go omits an empty requests or limits map of spec.resources when it writes the pod."""
    resources = spec.get("resources")
    if isinstance(resources, dict):
        for section in ("requests", "limits"):
            if section in resources and not resources[section]:
                del resources[section]


def _section(resources: Obj, section: str) -> Obj:
    found = resources.get(section)
    return dict(found) if isinstance(found, dict) else {}


def _written(amount: Amount) -> str:
    return canonical_quantity(*amount)


# --------------------------------------------------------------- the containers together


def containers_total(spec: Obj, section: str) -> Amounts:
    """AggregateContainerRequests (section "requests") or AggregateContainerLimits ("limits"):
    every resource some container names, with its total."""
    total: Amounts = {}
    for container in _containers(spec, "containers"):
        _add(total, _amounts(container, section))
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in _containers(spec, "initContainers"):
        own = _amounts(container, section)
        if container.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            running = dict(sidecars)
        else:
            running = {}
            _add(running, own)
            _add(running, sidecars)
        _keep_larger(init_peak, running)
    _keep_larger(total, init_peak)
    return total


def pod_requests(spec: Obj) -> dict[str, Fraction]:
    """PodRequests, what a pod asks of its node: the containers' requests together, each
    resource the pod level may name replaced by its pod-level request where it names one,
    plus overhead."""
    total = {name: value for name, (value, _) in containers_total(spec, "requests").items()}
    resources = spec.get("resources")
    pod_level = _section(resources, "requests") if isinstance(resources, dict) else {}
    for name, raw in pod_level.items():
        value = quantity(raw)
        if is_pod_level_resource(name) and value is not None:
            total[name] = value
    overhead = spec.get("overhead")
    for name, raw in (overhead if isinstance(overhead, dict) else {}).items():
        value = quantity(raw)
        if value is not None:
            total[name] = total.get(name, Fraction(0)) + value
    return total


def _containers(spec: Obj, group: str) -> list[Obj]:
    return [c for c in spec.get(group) or [] if isinstance(c, dict)]


def _amounts(container: Obj, section: str) -> Amounts:
    values = (container.get("resources") or {}).get(section) or {}
    found: Amounts = {}
    for name, raw in values.items():
        value = quantity(raw)
        if value is not None:
            found[str(name)] = (value, quantity_format(raw))
    return found


def _add(total: Amounts, more: Amounts) -> None:
    """addResourceList: a sum keeps the format of its first non-zero part."""
    for name, (value, format_) in more.items():
        if name not in total:
            total[name] = (value, format_)
            continue
        held, held_format = total[name]
        total[name] = (held + value, format_ if held == 0 else held_format)


def _keep_larger(total: Amounts, other: Amounts) -> None:
    """maxResourceList: the other's amount where it is larger, or where total has none."""
    for name, amount in other.items():
        if name not in total or amount[0] > total[name][0]:
            total[name] = amount


# --------------------------------------------------------------- validation


def pod_resources_errors(spec: Obj, kind: str) -> list[FieldError]:
    """validatePodResources: spec.resources' names, quantities, requests against limits, and
    against the containers' (a quantity that does not parse is the 400 for `kind`)."""
    resources = spec.get("resources")
    if not isinstance(resources, dict):
        return []
    path = "spec.resources"
    os_name = (spec.get("os") or {}).get("name") if isinstance(spec.get("os"), dict) else None
    if os_name == "windows":
        # Go stops here: nothing else about the field is said of a pod that may not set it.
        return [fields.forbidden(path, "may not be set for a windows pod")]
    errors: list[FieldError] = []
    if resources.get("claims") is not None:
        errors.append(
            fields.forbidden(f"{path}.claims", "claims may not be set for Resources at pod-level")
        )
    requests = _parsed(resources, "requests", kind)
    limits = _parsed(resources, "limits", kind)
    errors.extend(_requirement_errors(requests, limits, path))
    errors.extend(_claim_name_errors(resources.get("claims"), spec, f"{path}.claims"))
    errors.extend(_consistency_errors(spec, requests, limits, path))
    return errors


def _parsed(resources: Obj, section: str, kind: str) -> Amounts:
    values = resources.get(section) or {}
    return {
        str(name): (decoded_quantity(raw, kind), quantity_format(raw))
        for name, raw in values.items()
    }


def _requirement_errors(requests: Amounts, limits: Amounts, path: str) -> list[FieldError]:
    """validateResourceRequirements with validatePodResourceName: limits first, then
    requests, each name then its quantity, as the real server lists them."""
    errors: list[FieldError] = []
    qos_named = False
    hugepages_named = False
    for name, amount in limits.items():
        where = f"{path}.limits[{name}]"
        errors.extend(_name_errors(name, where))
        errors.extend(_quantity_errors(name, amount, where))
        qos_named = qos_named or name in _QOS_RESOURCES
        hugepages_named = hugepages_named or _hugepages(name)
    for name, amount in requests.items():
        where = f"{path}.requests[{name}]"
        errors.extend(_name_errors(name, where))
        errors.extend(_quantity_errors(name, amount, where, divisible_too=False))
        limit = limits.get(name)
        shown = _written(amount)
        if limit is not None:
            if amount[0] != limit[0] and not _overcommit_allowed(name):
                errors.append(
                    fields.invalid(
                        f"{path}.requests",
                        shown,
                        f"must be equal to {name} limit of {_written(limit)}",
                    )
                )
            elif amount[0] > limit[0]:
                errors.append(
                    fields.invalid(
                        f"{path}.requests",
                        shown,
                        f"must be less than or equal to {name} limit of {_written(limit)}",
                    )
                )
        elif not _overcommit_allowed(name):
            errors.append(
                fields.required(
                    f"{path}.limits", "Limit must be set for non overcommitable resources"
                )
            )
        if _hugepages(name):
            hugepages_named = True
            errors.extend(_divisible_errors(name, amount, where))
        qos_named = qos_named or name in _QOS_RESOURCES
    if hugepages_named and not qos_named:
        errors.append(fields.forbidden(path, "HugePages require cpu or memory"))
    return errors


def _name_errors(name: str, where: str) -> list[FieldError]:
    """validatePodResourceName: a qualified, standard (or domain-prefixed) name that pod-level
    resources support."""
    errors = qualified_name_errors(name, where)
    if errors:
        return errors
    if "/" not in name and name not in _STANDARD and not _hugepages(name):
        return [fields.invalid(where, name, "must be a standard resource type or fully qualified")]
    if not is_pod_level_resource(name):
        return [fields.not_supported(where, name, _SUPPORTED)]
    return []


def _quantity_errors(
    name: str, amount: Amount, where: str, *, divisible_too: bool = True
) -> list[FieldError]:
    errors: list[FieldError] = []
    if amount[0] < 0:
        errors.append(fields.invalid(where, _written(amount), "must be greater than or equal to 0"))
    extended = "/" in name and "kubernetes.io/" not in name
    if (extended or name == "pods") and amount[0].denominator != 1:
        errors.append(fields.invalid(where, _written(amount), "must be an integer"))
    if divisible_too and _hugepages(name):
        errors.extend(_divisible_errors(name, amount, where))
    return errors


def _divisible_errors(name: str, amount: Amount, where: str) -> list[FieldError]:
    """validateResourceQuantityHugePageValue: a whole number of pages of the name's size."""
    page = quantity(name[len(HUGEPAGES_PREFIX) :])
    value = amount[0]
    if page is not None and page > 0 and page.denominator == 1 and value % page == 0:
        return []
    shown = _written(amount)
    return [fields.invalid(where, shown, f"{shown} is not positive integer multiple of {name}")]


def _claim_name_errors(claims: Any, spec: Obj, path: str) -> list[FieldError]:
    """validateResourceClaimNames: each names one of the pod's spec.resourceClaims."""
    if not isinstance(claims, list):
        return []
    known = sorted(
        str(c.get("name")) for c in spec.get("resourceClaims") or [] if isinstance(c, dict)
    )
    detail = ": " + ", ".join(known) if known else " which is empty"
    errors: list[FieldError] = []
    for index, claim in enumerate(claims):
        name = claim.get("name") if isinstance(claim, dict) else None
        if not name:
            errors.append(fields.required(f"{path}[{index}]"))
        elif name not in known:
            errors.append(
                FieldError(
                    f"{path}[{index}]",
                    f'Not found: "{name}": must be one of the names in pod.spec.resourceClaims'
                    + detail,
                    "FieldValueNotFound",
                )
            )
    return errors


def _consistency_errors(
    spec: Obj, requests: Amounts, limits: Amounts, path: str
) -> list[FieldError]:
    """validatePodResourceConsistency: pod-level requests at least the containers' together,
    hugepages limits at least the containers' together, and no container's limit above the
    pod's. (The real server names a container's limit spec.resources.containers[i][name].)"""
    errors: list[FieldError] = []
    for name, together in containers_total(spec, "requests").items():
        own = requests.get(name)
        if own is not None and together[0] > own[0]:
            errors.append(
                fields.invalid(
                    f"{path}.requests[{name}]",
                    _written(own),
                    f"must be greater than or equal to aggregate container requests of "
                    f"{_written(together)}",
                )
            )
    for name, together in containers_total(spec, "limits").items():
        own = limits.get(name)
        if _hugepages(name) and own is not None and together[0] > own[0]:
            errors.append(
                fields.invalid(
                    f"{path}.limits[{name}]",
                    _written(own),
                    f"must be greater than or equal to aggregate container limits of "
                    f"{_written(together)}",
                )
            )
    for index, container in enumerate(_containers(spec, "containers")):
        for name, amount in _amounts(container, "limits").items():
            own = limits.get(name)
            if own is not None and amount[0] > own[0]:
                errors.append(
                    fields.invalid(
                        f"{path}.containers[{index}][{name}].limits",
                        _written(amount),
                        f"must be less than or equal to pod limits of {_written(own)}",
                    )
                )
    return errors


# --------------------------------------------------------------- QoS


def qos_class(spec: Obj) -> str:
    """ComputePodQOS: from the pod-level resources where spec.resources is set (even empty),
    else from every container's and init container's; only positive cpu and memory count."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    resources = spec.get("resources")
    if isinstance(resources, dict):
        _add_qos(requests, resources.get("requests"))
        pod_limits = resources.get("limits") or {}
        if pod_limits and not _has_qos_resources(_add_qos(limits, pod_limits)):
            guaranteed = False
    else:
        for container in [*_containers(spec, "containers"), *_containers(spec, "initContainers")]:
            own = container.get("resources") or {}
            _add_qos(requests, own.get("requests"))
            if not _has_qos_resources(_add_qos(limits, own.get("limits"))):
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    matched = all(limits.get(name) == value for name, value in requests.items())
    return "Guaranteed" if guaranteed and matched and len(requests) == len(limits) else "Burstable"


def _add_qos(total: dict[str, Fraction], values: Any) -> set[str]:
    """Add the positive cpu and memory of `values` into `total`; the names added."""
    added: set[str] = set()
    for name, raw in (values or {}).items() if isinstance(values, dict) else ():
        value = quantity(raw)
        if name in _QOS_RESOURCES and value is not None and value > 0:
            total[name] = total.get(name, Fraction(0)) + value
            added.add(name)
    return added


def _has_qos_resources(names: set[str]) -> bool:
    return set(_QOS_RESOURCES) <= names
