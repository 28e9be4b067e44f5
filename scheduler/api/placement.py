"""What a pod asks of its node, read from its spec: node selector, node affinity,
tolerations, host ports, volume claims and images (PodPlacementSpec), shared between the
pods that ask alike."""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field

from scheduler.api import wire
from scheduler.api.selectors import SelectorRequirement, SelectorTerm


@dataclass(frozen=True, slots=True)
class Toleration:
    """spec.tolerations[]."""

    key: str
    operator: str
    value: str
    effect: str


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


@functools.lru_cache(maxsize=4096)
def _simple_placement(
    node_selector: tuple[tuple[str, str], ...], tolerations: tuple[tuple[str, str, str, str], ...]
) -> PodPlacementSpec:
    # Bounded, as _shared_images: the records of long-gone pods are not kept for ever.
    return PodPlacementSpec(
        node_selector=node_selector, tolerations=tuple(Toleration(*t) for t in tolerations)
    )
