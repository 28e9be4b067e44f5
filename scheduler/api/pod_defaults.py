"""The requests the API server writes into a new pod (SetDefaults_Pod), for a pod spec it has
not defaulted: a workload's pod template, which the controller sizes a gang from, and a
manifest `muster whatif` reads. A pod read from the API server has them already.

In kube's order:

1. each container (and init container) gets its limits as requests where it names none;
2. where the pod sets pod-level resources (spec.resources, PodLevelResources):
   - hugepages: a pod-level limit, where the pod names neither a request nor a limit of
     that size, is the containers' limits together (defaultHugePagePodLimits);
   - once the pod has pod-level limits, a pod-level request it does not name is the
     containers' requests together for cpu and memory where some container names one,
     else the pod-level limit (defaultPodRequests).

A PodTemplate's own spec gets none of this (SetDefaults_Pod is a pod's, not a template's);
the pods made from it do.
"""

from __future__ import annotations

from typing import Any

from scheduler.api import wire
from scheduler.api.pod_requests import containers_total, is_pod_level_resource
from scheduler.api.quantity import format_bytes, format_milli
from scheduler.api.resources import CPU, HUGEPAGES_PREFIX, MEMORY

Obj = dict[str, Any]

_CONTAINER_GROUPS = ("containers", "initContainers")
# Pod-level requests default from the containers' only where the API server lets a request
# be lower than its limit (hugepages' must equal it).
_OVERCOMMITTABLE = (CPU, MEMORY)


def with_defaulted_requests(spec: Obj) -> Obj:
    """A copy of the pod spec with the requests and limits SetDefaults_Pod gives a pod made
    from it; `spec` is left as it is."""
    copied = dict(spec)
    for group in _CONTAINER_GROUPS:
        if group in spec:
            copied[group] = [_container_with_requests(c) for c in spec.get(group) or []]
    resources = spec.get("resources")
    if isinstance(resources, dict) and (resources.get("requests") or resources.get("limits")):
        copied["resources"] = _pod_level_defaults(copied, resources)
    return copied


def _container_with_requests(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    resources = dict(container.get("resources") or {})
    limits = resources.get("limits") or {}
    if not limits:
        return container
    resources["requests"] = {**limits, **(resources.get("requests") or {})}
    return {**container, "resources": resources}


def _pod_level_defaults(spec: Obj, resources: Obj) -> Obj:
    typed = wire.from_dict({k: spec[k] for k in _CONTAINER_GROUPS if k in spec}, wire.PodSpec)
    requests = dict(resources.get("requests") or {})
    limits = dict(resources.get("limits") or {})
    container_limits = containers_total(typed, "limits")
    for key in _named(spec, "limits"):
        if key.startswith(HUGEPAGES_PREFIX) and key not in requests and key not in limits:
            limits[key] = _quantity(key, container_limits.get(key))
    if not limits:
        return {**resources, "requests": requests}
    container_requests = containers_total(typed, "requests")
    for key in _named(spec, "requests"):
        if key in _OVERCOMMITTABLE and key not in requests:
            requests[key] = _quantity(key, container_requests.get(key))
    for key, value in limits.items():
        if is_pod_level_resource(key) and key not in requests:
            requests[key] = value
    return {**resources, "requests": requests, "limits": limits}


def _named(spec: Obj, section: str) -> list[str]:
    """The resources some container of the spec names in `section`, in first-named order
    (a container that names one at 0 names it: the API server counts it)."""
    names: dict[str, None] = {}
    for group in _CONTAINER_GROUPS:
        for container in spec.get(group) or []:
            if isinstance(container, dict):
                found = (container.get("resources") or {}).get(section) or {}
                names.update(dict.fromkeys(str(key) for key in found))
    return list(names)


def _quantity(resource: str, value: int) -> str:
    """One resource's value as a quantity: millicores of cpu, bytes of the rest."""
    return format_milli(value) if resource == CPU else format_bytes(value)
