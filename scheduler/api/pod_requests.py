"""A pod's request as kube-scheduler counts it: containers, sidecars and init containers,
pod-level resources and overhead (component-helpers' PodRequests)."""

from __future__ import annotations

from scheduler.api import wire
from scheduler.api.resources import CPU, HUGEPAGES_PREFIX, MEMORY, Resource


def pod_request(spec: wire.PodSpec, *, name: str = "") -> Resource:
    """The pod's effective request, as kube-scheduler computes it (component-helpers'
    PodRequests): every reader of a pod's request (fit, queues, minResources, preemption,
    explain, scale-up) has it from here.

    The containers' figure (containers_total) first. Where the pod sets pod-level requests
    (spec.resources.requests, PodLevelResources), each of cpu, memory and hugepages-* they
    name replaces the containers' figure for that resource; the others (extended resources)
    stay the containers'. Pod overhead is added last.
    """
    total = containers_total(spec, "requests", name=name)
    if spec.resources is not None and spec.resources.requests:
        total = _with_pod_level_requests(total, spec.resources.requests, name)
    if spec.overhead:
        total.add(Resource.from_list(spec.overhead, kind="Pod", name=name, field="spec.overhead"))
    return total


def containers_total(spec: wire.PodSpec, section: str, *, name: str = "") -> Resource:
    """What the pod's containers ask in `section` ("requests" or "limits") together, as
    component-helpers' AggregateContainerRequests and AggregateContainerLimits add them up:
    max(sum of containers + sidecars, each init container with the sidecars started before
    it). Sidecars are init containers with restartPolicy Always: they keep running beside
    the main containers."""
    kind = "Pod"
    total = Resource()
    for index, container in enumerate(spec.containers):
        total.add(
            Resource.from_list(
                _section(container, section),
                kind=kind,
                name=name,
                field=f"spec.containers[{index}].resources.{section}",
            )
        )
    sidecars = Resource()
    init_peak = Resource()
    for index, container in enumerate(spec.init_containers):
        request = Resource.from_list(
            _section(container, section),
            kind=kind,
            name=name,
            field=f"spec.initContainers[{index}].resources.{section}",
        )
        if container.restart_policy == "Always":
            sidecars.add(request)
            init_peak = init_peak.maximum(sidecars)
        else:
            init_peak = init_peak.maximum(request + sidecars)
    total.add(sidecars)
    if spec.init_containers:
        total = total.maximum(init_peak)
    return total


def _section(container: wire.Container, section: str) -> wire.ResourceList:
    return container.resources.limits if section == "limits" else container.resources.requests


def is_pod_level_resource(resource: str) -> bool:
    """Whether pod-level resources (spec.resources) may name `resource`: cpu, memory and
    hugepages-<size> (component-helpers' IsSupportedPodLevelResource)."""
    return resource in (CPU, MEMORY) or resource.startswith(HUGEPAGES_PREFIX)


def _with_pod_level_requests(
    containers: Resource, requests: wire.ResourceList, name: str
) -> Resource:
    """The containers' request (changed in place) with each pod-level request that may be set
    at pod level in its place. The API server refuses other resources in spec.resources; one
    that an older server let through is left out, as kube-scheduler leaves it out."""
    named = {key: raw for key, raw in requests.items() if is_pod_level_resource(key)}
    if not named:
        return containers
    pod_level = Resource.from_list(named, kind="Pod", name=name, field="spec.resources.requests")
    for key in named:
        containers.set(key, pod_level.get(key))
    return containers
