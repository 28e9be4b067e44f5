"""TaskInfo: the compact record of one pod, with the status the session moves it through."""

from __future__ import annotations

import enum
import functools
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import msgspec

from scheduler.api import wire
from scheduler.api.annotations import UNPROTECTED, PodProtection, pod_protection
from scheduler.api.names import (
    CONSUME_PROVISIONING_REQUEST,
    GROUP_NAME_ANNOTATION,
    QUEUE_NAME_ANNOTATION,
    TASK_SPEC_ANNOTATION,
)
from scheduler.api.native import native_key
from scheduler.api.pod_fields import Unhonoured, unhonoured
from scheduler.api.resource_claims import PodClaims, of_pod
from scheduler.api.resources import CPU, HUGEPAGES_PREFIX, MEMORY, Resource


class TaskStatus(enum.Enum):
    """Where a pod stands, as the scheduler sees it (Volcano's task statuses)."""

    PENDING = "Pending"
    ALLOCATED = "Allocated"  # placed in this session, not yet bound
    PIPELINED = "Pipelined"  # placed on resources that are being released
    BINDING = "Binding"  # bind sent, answer not yet seen
    BOUND = "Bound"  # spec.nodeName set, not yet running
    RUNNING = "Running"
    RELEASING = "Releasing"  # being deleted or evicted
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"

    # Members are singletons: identity hashing is correct and, unlike Enum's
    # Python-level __hash__, costs nothing in the set lookups of the hot path.
    __hash__ = object.__hash__


# Statuses that hold resources on a node (Volcano's AllocatedStatus).
ALLOCATED_STATUSES = frozenset(
    {TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING}
)
# Statuses that count towards a gang's minMember.
READY_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
TERMINAL_STATUSES = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})
# Statuses of a pod that holds room on its node under a bind, sent or done. A tuple, for
# its order: listing a gang's members by these gives the running ones first.
BOUND_STATUSES = (TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.BINDING)


@dataclass(frozen=True, slots=True)
class Toleration:
    """spec.tolerations[]."""

    key: str
    operator: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class SelectorRequirement:
    """One matchExpressions or matchFields entry of a node selector term."""

    key: str
    operator: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SelectorTerm:
    """A node selector term: all its requirements must hold."""

    match_expressions: tuple[SelectorRequirement, ...]
    match_fields: tuple[SelectorRequirement, ...]


@dataclass(frozen=True, slots=True)
class HostPort:
    """A host port a container claims on its node."""

    ip: str
    protocol: str
    port: int

    def conflicts_with(self, other: HostPort) -> bool:
        """Two claims clash on the same port and protocol unless both name distinct IPs."""
        if self.port != other.port or self.protocol != other.protocol:
            return False
        wildcard = ("", "0.0.0.0")
        return self.ip in wildcard or other.ip in wildcard or self.ip == other.ip


@dataclass(frozen=True, slots=True)
class PodPlacementSpec:
    """What a pod asks of its node; shared between a task and its clones."""

    node_selector: tuple[tuple[str, str], ...] = ()
    required_terms: tuple[SelectorTerm, ...] = ()
    preferred_terms: tuple[tuple[int, SelectorTerm], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    # The PersistentVolumeClaims the pod mounts, as "namespace/name" (persistentVolumeClaim
    # volumes, and generic ephemeral volumes' <pod>-<volume> claims): part of the spec, so
    # pods with different claims never share a node picker shape.
    claims: tuple[str, ...] = ()
    # Those of `claims` that generic ephemeral volumes use: the pod must own them.
    ephemeral_claims: tuple[str, ...] = ()
    # The pod's images (TaskInfo.images), only in a session's copy and only when some node
    # of the session holds one of them (nodeorder sets it when the session opens): the
    # ImageLocality score then depends on them, so such pods get node picker shapes of
    # their own, while pods whose images no node holds keep sharing theirs.
    images: tuple[str, ...] = ()
    # What tells the pod's ResourceClaims apart for the device filter, only in a session's
    # copy of a pod with claims (predicates sets it when the session opens,
    # nodefit/dynamicresources.py): pods whose claims every node answers alike (a gang's
    # members, each with a fresh claim from one template) share a shape, the others do not.
    devices: tuple[str, ...] = ()
    # The hash, worked out once (as PodTopologySpec's): the spec keys the session's admit
    # cache and the node picker's shapes, looked up twice per pod placed.
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        fields = (
            self.node_selector,
            self.required_terms,
            self.preferred_terms,
            self.tolerations,
            self.host_ports,
            self.claims,
            self.ephemeral_claims,
            self.images,
            self.devices,
        )
        object.__setattr__(self, "_hash", hash(fields))

    def __hash__(self) -> int:
        return self._hash


def _task_status(pod: wire.Pod) -> TaskStatus:
    phase = pod.status.phase
    deleting = pod.metadata.deletion_timestamp is not None
    if phase == "Running":
        return TaskStatus.RELEASING if deleting else TaskStatus.RUNNING
    if phase == "Pending" or phase == "":
        if deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if pod.spec.node_name else TaskStatus.PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


def _started(pod: wire.Pod) -> str:
    """When the pod started: status.startTime, else when it was bound (its PodScheduled
    condition turned True, which Volcano's cdp plugin reads), else ""."""
    if pod.status.start_time:
        return pod.status.start_time
    return _bound_at(pod)


def _bound_at(pod: wire.Pod) -> str:
    """When the pod was bound: its PodScheduled condition's lastTransitionTime once True
    (the binding subresource sets it, on kube-apiserver as on sim), else ""."""
    for condition in pod.status.conditions:
        if condition.type == "PodScheduled" and condition.status == "True":
            # Interned: the pods of a gang are bound within the same second or two.
            return sys.intern(condition.last_transition_time or "")
    return ""


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


def normalized_image_name(image: str) -> str:
    """The image as ImageLocality looks it up among a node's image names: ":latest" added
    when the reference names no tag or digest (kube-scheduler adds nothing else, so
    "nginx" does not match a node's "docker.io/library/nginx:latest")."""
    if image.rfind(":") <= image.rfind("/"):
        image += ":latest"
    # Interned: the members of a gang share one string per image.
    return sys.intern(image)


def pod_images(spec: wire.PodSpec) -> tuple[str, ...]:
    """The normalised images of the pod's init containers and containers (ImageLocality
    counts both; ephemeral containers are not scheduled for)."""
    return _shared_images(
        tuple(
            normalized_image_name(container.image)
            for containers in (spec.init_containers, spec.containers)
            for container in containers
        )
    )


@functools.lru_cache(maxsize=4096)
def _shared_images(images: tuple[str, ...]) -> tuple[str, ...]:
    # The first equal tuple seen: the members of a gang hold one tuple, not one each
    # (bounded, so images of long-gone pods are not kept for ever).
    return images


def _requirements(items: list[wire.NodeSelectorRequirement]) -> tuple[SelectorRequirement, ...]:
    return tuple(SelectorRequirement(r.key, r.operator, tuple(r.values)) for r in items)


def _term(term: wire.NodeSelectorTerm) -> SelectorTerm:
    return SelectorTerm(_requirements(term.match_expressions), _requirements(term.match_fields))


def pod_claims(spec: wire.PodSpec, namespace: str, pod_name: str) -> tuple[str, ...]:
    """The claims a pod's volumes use, as "namespace/name", in volume order, once each."""
    claims: list[str] = []
    for volume in spec.volumes:
        if volume.persistent_volume_claim is not None:
            claims.append(f"{namespace}/{volume.persistent_volume_claim.claim_name}")
        elif volume.ephemeral:
            # kube's ephemeral.VolumeClaimName: the pod's name, a dash, the volume's name.
            claims.append(f"{namespace}/{pod_name}-{volume.name}")
    return tuple(dict.fromkeys(claims))


def ephemeral_claims(spec: wire.PodSpec, namespace: str, pod_name: str) -> tuple[str, ...]:
    """The claims of the pod's generic ephemeral volumes, as "namespace/name"."""
    return tuple(f"{namespace}/{pod_name}-{v.name}" for v in spec.volumes if v.ephemeral)


def placement_spec(
    spec: wire.PodSpec, claims: tuple[str, ...] = (), ephemeral: tuple[str, ...] = ()
) -> PodPlacementSpec:
    """The node constraints of a pod spec (`claims` from pod_claims, `ephemeral` from
    ephemeral_claims)."""
    if (
        not claims
        and not ephemeral
        and (spec.affinity is None or spec.affinity.node_affinity is None)
        and not any(port.host_port > 0 for c in spec.containers for port in c.ports)
    ):
        # Most pods ask their node for no more than labels and tolerations (the API server
        # gives every pod two): pods asking the same share one record, built once.
        return _simple_placement(
            tuple(sorted(spec.node_selector.items())) if spec.node_selector else (),
            tuple((t.key, t.operator or "Equal", t.value, t.effect) for t in spec.tolerations),
        )
    required: tuple[SelectorTerm, ...] = ()
    preferred: tuple[tuple[int, SelectorTerm], ...] = ()
    node_affinity = spec.affinity.node_affinity if spec.affinity else None
    if node_affinity is not None:
        selector = node_affinity.required_during_scheduling_ignored_during_execution
        if selector is not None:
            # An empty terms list matches no node in kube-scheduler; one empty
            # term (which matches nothing) keeps that apart from "no affinity".
            required = tuple(_term(term) for term in selector.node_selector_terms) or (
                SelectorTerm((), ()),
            )
        preferred = tuple(
            (p.weight, _term(p.preference))
            for p in node_affinity.preferred_during_scheduling_ignored_during_execution
        )
    ports = tuple(
        HostPort(port.host_ip, port.protocol or "TCP", port.host_port)
        for container in spec.containers
        for port in container.ports
        if port.host_port > 0
    )
    tolerations = tuple(
        Toleration(t.key, t.operator or "Equal", t.value, t.effect) for t in spec.tolerations
    )
    return PodPlacementSpec(
        node_selector=tuple(sorted(spec.node_selector.items())),
        required_terms=required,
        preferred_terms=preferred,
        tolerations=tolerations,
        host_ports=ports,
        claims=claims,
        ephemeral_claims=ephemeral,
    )


def task_name(meta: wire.ObjectMeta) -> str:
    """The pod's task (its role for minTaskMember): the annotation volcano.sh/task-spec,
    else the label of the same key, as Volcano reads it."""
    return meta.annotations.get(TASK_SPEC_ANNOTATION) or meta.labels.get(TASK_SPEC_ANNOTATION, "")


def _shared_labels(labels: dict[str, str]) -> Mapping[str, str]:
    """An equal label set seen before (the members of a gang), else this one. Labels are
    only read once cached (affinity and spread selectors), so pods may share one dict."""
    if not labels:
        return _NO_LABELS
    if len(labels) > 16:
        return labels  # big, rarely shared sets are not worth the key
    key = tuple(labels.items())
    shared = _LABEL_SETS.get(key)
    if shared is None:
        if len(_LABEL_SETS) >= 8192:
            _LABEL_SETS.clear()  # bounded: the sets of long-gone pods are not kept for ever
        shared = _LABEL_SETS[key] = labels
    return shared


_LABEL_SETS: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
_NO_LABELS: Mapping[str, str] = MappingProxyType({})


@functools.lru_cache(maxsize=4096)
def _simple_placement(
    node_selector: tuple[tuple[str, str], ...], tolerations: tuple[tuple[str, str, str, str], ...]
) -> PodPlacementSpec:
    # Bounded, as _shared_images: the records of long-gone pods are not kept for ever.
    return PodPlacementSpec(
        node_selector=node_selector, tolerations=tuple(Toleration(*t) for t in tolerations)
    )


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A metav1.LabelSelector: every matchLabels pair and matchExpressions entry must hold
    (an empty selector matches every label set)."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[SelectorRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a label set satisfies the selector (metav1.LabelSelectorAsSelector)."""
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for requirement in self.match_expressions:
            operator = requirement.operator
            present = requirement.key in labels
            if operator == "In":
                if not present or labels[requirement.key] not in requirement.values:
                    return False
            elif operator == "NotIn":
                if present and labels[requirement.key] in requirement.values:
                    return False
            elif operator == "Exists":
                if not present:
                    return False
            elif operator == "DoesNotExist":
                if present:
                    return False
            else:
                # The API server refuses other operators; a selector it let through with
                # one (an older server) matches nothing rather than everything.
                return False
        return True

    def anchor(self) -> tuple[str, str] | None:
        """A label pair every matching set must carry, for index lookups, or None."""
        if self.match_labels:
            return self.match_labels[0]
        for requirement in self.match_expressions:
            if requirement.operator == "In" and len(requirement.values) == 1:
                return (requirement.key, requirement.values[0])
        return None

    def keys(self) -> frozenset[str]:
        """The label keys the selector reads."""
        return frozenset(
            [key for key, _ in self.match_labels] + [r.key for r in self.match_expressions]
        )


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """A pod (anti-)affinity term, resolved against its pod: matchLabelKeys and
    mismatchLabelKeys merged into the selector, namespaces defaulted to the pod's own."""

    topology_key: str
    # None: the term names no labelSelector and matches no pod.
    selector: LabelSelector | None
    namespaces: frozenset[str]
    # None: only `namespaces`; an empty selector: every namespace.
    namespace_selector: LabelSelector | None = None

    def matches(
        self,
        namespace: str,
        labels: Mapping[str, str],
        namespace_labels: Mapping[str, Mapping[str, str]],
    ) -> bool:
        """Whether a pod in `namespace` with `labels` is one the term is about."""
        if self.selector is None:
            return False
        if namespace not in self.namespaces:
            chooser = self.namespace_selector
            if chooser is None:
                return False
            if chooser.match_labels or chooser.match_expressions:
                known = namespace_labels.get(namespace)
                if known is None or not chooser.matches(known):
                    return False
        return self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A topologySpreadConstraints[] entry, resolved: matchLabelKeys merged into the
    selector, policies and minDomains defaulted as the API defaults them."""

    max_skew: int
    topology_key: str
    # whenUnsatisfiable DoNotSchedule (a filter); ScheduleAnyway is a score.
    hard: bool
    selector: LabelSelector | None
    min_domains: int = 1
    # nodeAffinityPolicy Honor (the default) and nodeTaintsPolicy Honor (Ignore is the default).
    honour_node_affinity: bool = True
    honour_node_taints: bool = False


@dataclass(frozen=True, slots=True)
class PodTopologySpec:
    """What a pod asks of the pods around it: pod (anti-)affinity and topology spread.

    Kept apart from PodPlacementSpec (the node-only constraints the session caches per
    node); None on a task that uses none of these fields, so such pods pay nothing."""

    namespace: str
    required_affinity: tuple[PodAffinityTerm, ...] = ()
    required_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()
    preferred_anti_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    # The pod's own labels under the keys its selectors read: whether it matches its own
    # terms (kube's first-pod-of-a-group rule, spread's self match) depends on them, so
    # pods that differ there never share a node picker shape.
    own_labels: tuple[tuple[str, str], ...] = ()
    # The hash, worked out once: the spec is part of node picker shape keys, looked up on
    # every pick, and hashing its nested terms each time cost more than the pick.
    _hash: int = field(default=0, init=False, repr=False, compare=False)
    # `spread` split by whenUnsatisfiable (DoNotSchedule, ScheduleAnyway), once: the
    # filter asks for the hard ones on every node it checks.
    hard_spread: tuple[SpreadConstraint, ...] = field(
        default=(), init=False, repr=False, compare=False
    )
    soft_spread: tuple[SpreadConstraint, ...] = field(
        default=(), init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "hard_spread", tuple(c for c in self.spread if c.hard))
        object.__setattr__(self, "soft_spread", tuple(c for c in self.spread if not c.hard))
        fields = (
            self.namespace,
            self.required_affinity,
            self.required_anti_affinity,
            self.preferred_affinity,
            self.preferred_anti_affinity,
            self.spread,
            self.own_labels,
        )
        object.__setattr__(self, "_hash", hash(fields))

    def __hash__(self) -> int:
        return self._hash


def label_selector(selector: wire.LabelSelector) -> LabelSelector:
    """A wire LabelSelector compiled for matching label sets (a claim's volume selector)."""
    return _label_selector(selector, {}) or LabelSelector()


def _label_selector(
    selector: wire.LabelSelector | None,
    labels: Mapping[str, str],
    match_keys: Iterable[str] = (),
    mismatch_keys: Iterable[str] = (),
) -> LabelSelector | None:
    if selector is None:
        return None
    expressions = list(_requirements_of(selector.match_expressions))
    # matchLabelKeys / mismatchLabelKeys: the pod's own values, ANDed in as In / NotIn
    # (kube-apiserver merges them the same way; a key the pod lacks is ignored).
    expressions.extend(
        SelectorRequirement(key, "In", (labels[key],)) for key in match_keys if key in labels
    )
    expressions.extend(
        SelectorRequirement(key, "NotIn", (labels[key],)) for key in mismatch_keys if key in labels
    )
    return LabelSelector(tuple(sorted(selector.match_labels.items())), tuple(expressions))


def _requirements_of(
    items: list[wire.LabelSelectorRequirement],
) -> Iterable[SelectorRequirement]:
    return (SelectorRequirement(r.key, r.operator, tuple(r.values)) for r in items)


def _affinity_term(
    term: wire.PodAffinityTerm, namespace: str, labels: Mapping[str, str]
) -> PodAffinityTerm:
    namespace_selector = (
        _label_selector(term.namespace_selector, {}) if term.namespace_selector else None
    )
    namespaces = frozenset(term.namespaces)
    if not namespaces and namespace_selector is None:
        namespaces = frozenset({namespace})
    return PodAffinityTerm(
        term.topology_key,
        _label_selector(
            term.label_selector, labels, term.match_label_keys, term.mismatch_label_keys
        ),
        namespaces,
        namespace_selector,
    )


def topology_spec(
    spec: wire.PodSpec, namespace: str, labels: Mapping[str, str]
) -> PodTopologySpec | None:
    """The pod-to-pod constraints of a pod spec, or None when it has none."""
    affinity = spec.affinity
    pod_affinity = affinity.pod_affinity if affinity is not None else None
    anti_affinity = affinity.pod_anti_affinity if affinity is not None else None
    if pod_affinity is None and anti_affinity is None and not spec.topology_spread_constraints:
        return None

    def required(terms: wire.PodAffinity | None) -> tuple[PodAffinityTerm, ...]:
        if terms is None:
            return ()
        return tuple(
            _affinity_term(t, namespace, labels)
            for t in terms.required_during_scheduling_ignored_during_execution
        )

    def preferred(terms: wire.PodAffinity | None) -> tuple[tuple[int, PodAffinityTerm], ...]:
        if terms is None:
            return ()
        return tuple(
            (w.weight, _affinity_term(w.pod_affinity_term, namespace, labels))
            for w in terms.preferred_during_scheduling_ignored_during_execution
        )

    spread = tuple(
        SpreadConstraint(
            max_skew=c.max_skew,
            topology_key=c.topology_key,
            hard=c.when_unsatisfiable != "ScheduleAnyway",
            selector=_label_selector(c.label_selector, labels, c.match_label_keys),
            min_domains=c.min_domains if c.min_domains is not None else 1,
            honour_node_affinity=c.node_affinity_policy != "Ignore",
            honour_node_taints=c.node_taints_policy == "Honor",
        )
        for c in spec.topology_spread_constraints
    )
    result = PodTopologySpec(
        namespace=namespace,
        required_affinity=required(pod_affinity),
        required_anti_affinity=required(anti_affinity),
        preferred_affinity=preferred(pod_affinity),
        preferred_anti_affinity=preferred(anti_affinity),
        spread=spread,
    )
    keys: set[str] = set()
    for term in (
        *result.required_affinity,
        *result.required_anti_affinity,
        *(t for _, t in result.preferred_affinity),
        *(t for _, t in result.preferred_anti_affinity),
    ):
        if term.selector is not None:
            keys |= term.selector.keys()
    for constraint in spread:
        if constraint.selector is not None:
            keys |= constraint.selector.keys()
    own = tuple(sorted((key, labels[key]) for key in keys if key in labels))
    return replace(result, own_labels=own)


def named_group(meta: wire.ObjectMeta, spec: wire.PodSpec) -> tuple[str, str]:
    """The gang key of the PodGroup a pod names ("" for none), and the native PodGroup it
    names but does not join ("" for none).

    A pod joins a Volcano PodGroup through its annotation scheduling.k8s.io/group-name and
    a native one through spec.schedulingGroup.podGroupName, both in its namespace. When it
    carries both, the annotation wins: it is what an operator wrote for a
    Volcano-compatible scheduler, and Kubernetes' Job controller adds schedulingGroup to
    pods whose template already names a Volcano PodGroup."""
    annotated = meta.annotations.get(GROUP_NAME_ANNOTATION)
    group = spec.scheduling_group
    native = (group.pod_group_name or "") if group is not None else ""
    if annotated:
        return f"{meta.namespace}/{annotated}", native
    if native:
        return native_key(meta.namespace, native), ""
    return "", ""


class TaskInfo:
    """One pod: identity, request, constraints, and where the session has put it."""

    __slots__ = (
        "bound_at",
        "creation_timestamp",
        "devices",
        "digest",
        "gated",
        "ignored_group",
        "images",
        "job",
        "labels",
        "name",
        "namespace",
        "node_name",
        "owner_uid",
        "placement",
        "preemption_policy",
        "priority",
        "protection",
        "queue_annotation",
        "request",
        "role",
        "scale_up_request",
        "scheduler_name",
        "started",
        "status",
        "topology",
        "uid",
        "unhonoured",
    )

    def __init__(
        self,
        *,
        uid: str,
        namespace: str,
        name: str,
        request: Resource,
        job: str = "",
        role: str = "",
        scheduler_name: str = "",
        priority: int = 0,
        preemption_policy: str = "PreemptLowerPriority",
        node_name: str = "",
        status: TaskStatus = TaskStatus.PENDING,
        placement: PodPlacementSpec | None = None,
        gated: bool = False,
        queue_annotation: str = "",
        owner_uid: str = "",
        creation_timestamp: str = "",
        unhonoured: Unhonoured | None = None,
        labels: Mapping[str, str] | None = None,
        topology: PodTopologySpec | None = None,
        images: tuple[str, ...] = (),
        started: str = "",
        bound_at: str = "",
        protection: PodProtection = UNPROTECTED,
        digest: int = 0,
        scale_up_request: str = "",
        ignored_group: str = "",
        devices: PodClaims | None = None,
    ) -> None:
        self.uid = uid
        self.namespace = namespace
        self.name = name
        self.request = request
        self.job = job
        self.role = role
        self.scheduler_name = scheduler_name
        self.priority = priority
        self.preemption_policy = preemption_policy
        self.node_name = node_name
        self.status = status
        self.placement = placement if placement is not None else _NO_CONSTRAINTS
        # The pod's labels, which other pods' affinity and spread selectors read; and its
        # own pod-to-pod constraints (None for most pods).
        self.labels: Mapping[str, str] = labels if labels is not None else {}
        self.topology = topology
        # The normalised image of each init container and container, for ImageLocality.
        self.images = images
        # Fields muster does not honour (api/pod_fields.py): a refused pod is never placed,
        # like a pod with scheduling gates, so `gated` covers both; job_status tells
        # them apart by `unhonoured.refusals`.
        self.unhonoured = unhonoured
        self.gated = gated or bool(unhonoured is not None and unhonoured.refusals)
        self.queue_annotation = queue_annotation
        self.owner_uid = owner_uid
        self.creation_timestamp = creation_timestamp
        # RFC 3339: when the pod started (status.startTime, else when it was bound): a
        # victim's runtime, for the minimum runtimes and cooldowns, counts from here.
        self.started = started
        # RFC 3339: when the pod was bound (its PodScheduled condition turned True), "" while
        # it is not: a partly bound gang's time to be completed counts from its first member's
        # (api/gang_state.py), so a new leader reads it from the API server.
        self.bound_at = bound_at
        # What its labels and annotations say about being preempted or reclaimed.
        self.protection = protection
        # pod_digest of the pod it was read from (0: not taken): a later version of the pod
        # with the same digest differs in its status alone, and is read with restated().
        self.digest = digest
        # The ProvisioningRequest its consume-provisioning-request annotation names ("" for
        # none): the one whose capacity the pod waits for (api/provisioning.py).
        self.scale_up_request = scale_up_request
        # The native PodGroup its spec.schedulingGroup names when its Volcano annotation
        # names another, which wins (named_group): said on a Warning event.
        self.ignored_group = ignored_group
        # The ResourceClaims it uses (DRA; api/resource_claims.py), None for none. Read from
        # its spec and its status (the claims made from its templates).
        self.devices = devices

    @classmethod
    def from_pod(cls, pod: wire.Pod) -> TaskInfo:
        """The record of a pod; raises InvalidObject on a malformed quantity."""
        meta = pod.metadata
        spec = pod.spec
        owner = next((ref.uid for ref in meta.owner_references if ref.controller), "")
        job, ignored = named_group(meta, spec)
        if not job and owner:
            # A controlled pod with no group waits for the one `muster controller` makes for
            # its owner (podgroup-<owner uid>): as a shadow gang of one it would bypass
            # minMember.
            job = f"{meta.namespace}/podgroup-{owner}"
        # Strings many pods repeat (namespace, gang, role, node...) are interned, and equal
        # label sets shared: a cached pod holds one copy of each, not its own.
        intern = sys.intern
        return TaskInfo(
            uid=meta.uid,
            namespace=intern(meta.namespace),
            name=meta.name,
            request=pod_request(spec, name=f"{meta.namespace}/{meta.name}"),
            job=intern(job),
            role=intern(task_name(meta)),
            scheduler_name=intern(spec.scheduler_name),
            priority=spec.priority or 0,
            preemption_policy=spec.preemption_policy or "PreemptLowerPriority",
            node_name=intern(spec.node_name),
            status=_task_status(pod),
            placement=placement_spec(
                spec,
                pod_claims(spec, meta.namespace, meta.name) if spec.volumes else (),
                ephemeral_claims(spec, meta.namespace, meta.name) if spec.volumes else (),
            ),
            gated=bool(spec.scheduling_gates),
            queue_annotation=intern(meta.annotations.get(QUEUE_NAME_ANNOTATION, "")),
            owner_uid=intern(owner),
            creation_timestamp=intern(meta.creation_timestamp or ""),
            unhonoured=unhonoured(spec, pod.unknown_spec_fields),
            labels=_shared_labels(meta.labels),
            topology=topology_spec(spec, meta.namespace, meta.labels),
            images=pod_images(spec),
            started=_started(pod),
            bound_at=_bound_at(pod),
            protection=pod_protection(meta.labels, meta.annotations),
            scale_up_request=meta.annotations.get(CONSUME_PROVISIONING_REQUEST, ""),
            ignored_group=ignored,
            devices=of_pod(pod) if spec.resource_claims else None,
        )

    def restated(self, pod: wire.Pod) -> TaskInfo:
        """This record with the status, node and start time of `pod`, a later version of
        the pod it was read from whose pod_digest is this record's: everything else from_pod
        reads is the same, so it is not read again (a pod's status changes two or three
        times after its bind, and from_pod cost about three times this)."""
        twin = self.clone()
        twin.node_name = sys.intern(pod.spec.node_name)
        twin.status = _task_status(pod)
        twin.bound_at = _bound_at(pod)
        twin.started = pod.status.start_time or twin.bound_at
        if self.devices is not None:
            # The claims made from its templates are in its status.
            twin.devices = of_pod(pod)
        return twin

    @property
    def key(self) -> str:
        """namespace/name, as logs and events name a pod."""
        return f"{self.namespace}/{self.name}"

    @property
    def refusal(self) -> str:
        """Why muster will not place this pod (the fields it does not honour), or ""."""
        if self.unhonoured is None or not self.unhonoured.refusals:
            return ""
        return "; ".join(self.unhonoured.refusals)

    @property
    def best_effort(self) -> bool:
        """A pod with no requests at all (placed by backfill); a pod with claims asks for
        devices."""
        return self.request.is_empty() and self.devices is None

    def clone(self) -> TaskInfo:
        """A copy with its own status and node; request and placement are shared."""
        # Through the constructor, not __new__ and attribute copies: the compiled core
        # (docs/design.md, "The compiled core") builds native objects only this way.
        return TaskInfo(
            uid=self.uid,
            namespace=self.namespace,
            name=self.name,
            request=self.request,
            job=self.job,
            role=self.role,
            scheduler_name=self.scheduler_name,
            priority=self.priority,
            preemption_policy=self.preemption_policy,
            node_name=self.node_name,
            status=self.status,
            placement=self.placement,
            gated=self.gated,
            queue_annotation=self.queue_annotation,
            owner_uid=self.owner_uid,
            creation_timestamp=self.creation_timestamp,
            unhonoured=self.unhonoured,
            labels=self.labels,
            topology=self.topology,
            images=self.images,
            started=self.started,
            bound_at=self.bound_at,
            protection=self.protection,
            digest=self.digest,
            scale_up_request=self.scale_up_request,
            ignored_group=self.ignored_group,
            devices=self.devices,
        )

    def __repr__(self) -> str:
        return f"TaskInfo({self.key}, {self.status.value}, node={self.node_name or '-'})"


_NO_CONSTRAINTS = PodPlacementSpec()
_encode = msgspec.json.Encoder().encode


def pod_digest(pod: wire.Pod) -> int:
    """A digest of everything of a pod from_pod reads but its status (and deletion time):
    its spec, labels, annotations, owners and creation time. Two versions of a pod with
    the same digest differ in their status alone (TaskInfo.restated)."""
    meta = pod.metadata
    body = (
        meta.labels,
        meta.annotations,
        meta.owner_references,
        meta.creation_timestamp,
        pod.spec,
        pod.unknown_spec_fields,
    )
    return hash(_encode(body)) or 1
