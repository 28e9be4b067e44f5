"""The PodTemplates a ProvisioningRequest names: one per distinct pod shape of a gang.

An autoscaler simulates a template's pods on the nodes it could add, as kube-scheduler
would place them, so a template carries what decides where a pod may go: its request
(as one container asking the pod's effective request, init containers, pod-level requests
and overhead included), nodeSelector, node affinity, pod (anti-)affinity, tolerations,
topology spread constraints, host ports, the pod's own labels that its terms select on, and
its ResourceClaims (DRA) as its spec names them, the container using each as the pod's
containers did, for an autoscaler that simulates devices. Pods whose shapes are equal share
a template. Built from the session's records (api/task.py), which
hold these fields as muster reads them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from scheduler.api.placement import HostPort, PodPlacementSpec, Toleration
from scheduler.api.pod_topology import PodAffinityTerm, PodTopologySpec, SpreadConstraint
from scheduler.api.resource_claims import ClaimSource
from scheduler.api.resources import CPU, MEMORY, Resource
from scheduler.api.selectors import LabelSelector, SelectorRequirement, SelectorTerm
from scheduler.api.task import TaskInfo

# The container a template's pods run: never started (an autoscaler only simulates it).
PLACEHOLDER_IMAGE = "registry.k8s.io/pause:3.9"
CONTAINER_NAME = "member"
# Requests the API server lets differ from limits; any other resource (extended resources,
# hugepages) needs a limit equal to its request.
_OVERCOMMITTABLE = frozenset({CPU, MEMORY, "ephemeral-storage"})

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class PodShape:
    """What of a pod decides where it may go (the parts a template carries)."""

    request: Resource
    node_selector: tuple[tuple[str, str], ...]
    required_terms: tuple[SelectorTerm, ...]
    preferred_terms: tuple[tuple[int, SelectorTerm], ...]
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[HostPort, ...]
    topology: PodTopologySpec | None
    # The pod's spec.resourceClaims as written, and the (claim, request) its containers use.
    resource_claims: tuple[ClaimSource, ...] = ()
    container_claims: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, task: TaskInfo) -> PodShape:
        """The shape of a pod (its request without the devices its claims count for its
        queue: those are the claims' to ask)."""
        placement: PodPlacementSpec = task.placement
        devices = task.devices
        return cls(
            request=task.request.without_devices(),
            node_selector=placement.node_selector,
            required_terms=placement.required_terms,
            preferred_terms=placement.preferred_terms,
            tolerations=placement.tolerations,
            host_ports=placement.host_ports,
            topology=task.topology,
            resource_claims=devices.sources if devices is not None else (),
            container_claims=devices.container_claims if devices is not None else (),
        )


def shapes(tasks: Iterable[TaskInfo]) -> list[tuple[PodShape, int]]:
    """The distinct shapes of the tasks, each with how many tasks have it, in first-seen
    order."""
    counts: dict[PodShape, int] = {}
    for task in tasks:
        shape = PodShape.of(task)
        counts[shape] = counts.get(shape, 0) + 1
    return list(counts.items())


def template_spec(shape: PodShape) -> Obj:
    """The `template` of a PodTemplate (metadata and spec) for pods of this shape."""
    requests = shape.request.to_list()
    resources: Obj = {"requests": requests}
    limits = {name: value for name, value in requests.items() if name not in _OVERCOMMITTABLE}
    if limits:
        resources["limits"] = limits
    container: Obj = {
        "name": CONTAINER_NAME,
        "image": PLACEHOLDER_IMAGE,
        "resources": resources,
    }
    if shape.host_ports:
        container["ports"] = [_port(port) for port in shape.host_ports]
    if shape.container_claims:
        resources["claims"] = [_container_claim(*used) for used in shape.container_claims]
    spec: Obj = {"containers": [container]}
    if shape.resource_claims:
        spec["resourceClaims"] = [_claim_source(source) for source in shape.resource_claims]
    if shape.node_selector:
        spec["nodeSelector"] = dict(shape.node_selector)
    affinity = _affinity(shape)
    if affinity:
        spec["affinity"] = affinity
    if shape.tolerations:
        spec["tolerations"] = [_toleration(t) for t in shape.tolerations]
    topology = shape.topology
    if topology is not None and topology.spread:
        spec["topologySpreadConstraints"] = [_spread(c) for c in topology.spread]
    template: Obj = {"spec": spec}
    if topology is not None and topology.own_labels:
        template["metadata"] = {"labels": dict(topology.own_labels)}
    return template


def _claim_source(source: ClaimSource) -> Obj:
    found: Obj = {"name": source.name}
    if source.claim:
        found["resourceClaimName"] = source.claim
    if source.template:
        found["resourceClaimTemplateName"] = source.template
    return found


def _container_claim(name: str, request: str) -> Obj:
    return {"name": name, "request": request} if request else {"name": name}


def _port(port: HostPort) -> Obj:
    found: Obj = {"containerPort": port.port, "hostPort": port.port, "protocol": port.protocol}
    if port.ip:
        found["hostIP"] = port.ip
    return found


def _toleration(toleration: Toleration) -> Obj:
    found: Obj = {"operator": toleration.operator}
    for name, value in (
        ("key", toleration.key),
        ("value", toleration.value),
        ("effect", toleration.effect),
    ):
        if value:
            found[name] = value
    return found


def _affinity(shape: PodShape) -> Obj:
    affinity: Obj = {}
    node: Obj = {}
    if shape.required_terms:
        node["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_term(term) for term in shape.required_terms]
        }
    if shape.preferred_terms:
        node["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": weight, "preference": _term(term)} for weight, term in shape.preferred_terms
        ]
    if node:
        affinity["nodeAffinity"] = node
    topology = shape.topology
    if topology is None:
        return affinity
    for name, required, preferred in (
        ("podAffinity", topology.required_affinity, topology.preferred_affinity),
        ("podAntiAffinity", topology.required_anti_affinity, topology.preferred_anti_affinity),
    ):
        terms: Obj = {}
        if required:
            terms["requiredDuringSchedulingIgnoredDuringExecution"] = [
                _pod_term(t) for t in required
            ]
        if preferred:
            terms["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": weight, "podAffinityTerm": _pod_term(t)} for weight, t in preferred
            ]
        if terms:
            affinity[name] = terms
    return affinity


def _requirements(items: tuple[SelectorRequirement, ...]) -> list[Obj]:
    found = []
    for item in items:
        requirement: Obj = {"key": item.key, "operator": item.operator}
        if item.values:
            requirement["values"] = list(item.values)
        found.append(requirement)
    return found


def _term(term: SelectorTerm) -> Obj:
    found: Obj = {}
    if term.match_expressions:
        found["matchExpressions"] = _requirements(term.match_expressions)
    if term.match_fields:
        found["matchFields"] = _requirements(term.match_fields)
    return found


def _selector(selector: LabelSelector) -> Obj:
    found: Obj = {}
    if selector.match_labels:
        found["matchLabels"] = dict(selector.match_labels)
    if selector.match_expressions:
        found["matchExpressions"] = _requirements(selector.match_expressions)
    return found


def _pod_term(term: PodAffinityTerm) -> Obj:
    # The term as muster resolved it: matchLabelKeys merged into the selector, the pod's
    # own namespace written out when the term named none.
    found: Obj = {"topologyKey": term.topology_key}
    if term.selector is not None:
        found["labelSelector"] = _selector(term.selector)
    if term.namespaces:
        found["namespaces"] = sorted(term.namespaces)
    if term.namespace_selector is not None:
        found["namespaceSelector"] = _selector(term.namespace_selector)
    return found


def _spread(constraint: SpreadConstraint) -> Obj:
    found: Obj = {
        "maxSkew": constraint.max_skew,
        "topologyKey": constraint.topology_key,
        "whenUnsatisfiable": "DoNotSchedule" if constraint.hard else "ScheduleAnyway",
    }
    if constraint.selector is not None:
        found["labelSelector"] = _selector(constraint.selector)
    if constraint.hard and constraint.min_domains != 1:
        found["minDomains"] = constraint.min_domains
    # Written only when not the API's defaults (Honor, Ignore), which older servers lack.
    if not constraint.honour_node_affinity:
        found["nodeAffinityPolicy"] = "Ignore"
    if constraint.honour_node_taints:
        found["nodeTaintsPolicy"] = "Honor"
    return found
