"""The ResourceClaims a pod uses (Dynamic Resource Allocation), as kube-scheduler resolves
them: a claim its `spec.resourceClaims` names is used as it is; a claim from a
ResourceClaimTemplate is the one the resourceclaim controller made and wrote into the pod's
`status.resourceClaimStatuses`, and until it has, the pod waits.

The record (`PodClaims`) is what the device filter asks about a pod (scheduler/dra/); it also
keeps the claims as the pod's spec writes them and those its containers use, for the
PodTemplates a scale-up renders (api/pod_templates.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from scheduler.api import wire
from scheduler.api.alike import alike

_Tuple = TypeVar("_Tuple", bound=tuple[object, ...])


@dataclass(frozen=True, slots=True)
class ClaimSource:
    """One entry of a pod's spec.resourceClaims: its name in the pod, and the claim it names
    or the template a claim is made from (exactly one of the two)."""

    name: str
    claim: str = ""
    template: str = ""


@dataclass(frozen=True, slots=True)
class PodClaims:
    """The claims a pod uses, as allocation asks about it: "namespace/name" keys in its
    `spec.resourceClaims` order (once each), and which of them a template made (those must
    be owned by the pod)."""

    namespace: str
    name: str
    uid: str
    claims: tuple[str, ...]
    # A tuple, not a set: a pod names a claim or two, and a small set costs four times the
    # memory in every cached pod.
    from_template: tuple[str, ...] = ()
    # Why the pod cannot be considered yet (a template's claim not made yet), in
    # kube-scheduler's words.
    waiting: str | None = None
    # The pod's spec.resourceClaims as written, and the (claim, request) pairs its
    # containers name ("" for the whole claim), each once: what a PodTemplate of the pod
    # carries.
    sources: tuple[ClaimSource, ...] = ()
    container_claims: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        """namespace/name of the pod."""
        return f"{self.namespace}/{self.name}"


def pod_claims(
    namespace: str,
    name: str,
    uid: str,
    claims: Sequence[wire.PodResourceClaim],
    statuses: Sequence[wire.PodResourceClaimStatus],
    containers: Sequence[wire.Container] = (),
) -> PodClaims:
    """The claims a pod uses: a named claim as it is, a template's claim by the name the
    resourceclaim controller wrote in the pod's status (kube-scheduler's rule: until it
    is there, the pod waits; a status entry without a claim name means none is needed)."""
    made = {status.name: status for status in statuses}
    sources = _shared(
        tuple(
            ClaimSource(
                claim.name,
                claim.resource_claim_name or "",
                claim.resource_claim_template_name or "",
            )
            for claim in claims
        )
    )
    used = _shared(
        tuple(
            dict.fromkeys(
                (entry.name, entry.request or "")
                for container in containers
                for entry in container.resources.claims
            )
        )
    )
    keys: list[str] = []
    templated: list[str] = []
    for claim in claims:
        if claim.resource_claim_name:
            keys.append(f"{namespace}/{claim.resource_claim_name}")
            continue
        status = made.get(claim.name)
        if status is None:
            return PodClaims(
                namespace,
                name,
                uid,
                (),
                waiting=f'pod "{namespace}/{name}": ResourceClaim not created yet',
                sources=sources,
                container_claims=used,
            )
        if status.resource_claim_name:
            key = f"{namespace}/{status.resource_claim_name}"
            keys.append(key)
            templated.append(key)
    claim_keys = tuple(dict.fromkeys(keys))
    made_keys = tuple(dict.fromkeys(templated))
    return PodClaims(
        namespace,
        name,
        uid,
        claim_keys,
        # One tuple where both are the same (every claim from a template).
        claim_keys if made_keys == claim_keys else made_keys,
        sources=sources,
        container_claims=used,
    )


def of_pod(pod: wire.Pod) -> PodClaims | None:
    """The claims of a pod (None for a pod whose spec names none)."""
    spec = pod.spec
    if not spec.resource_claims:
        return None
    meta = pod.metadata
    return pod_claims(
        meta.namespace,
        meta.name,
        meta.uid,
        spec.resource_claims,
        pod.status.resource_claim_statuses,
        (*spec.init_containers, *spec.containers),
    )


# Equal tuples seen before: the members of a gang, made from one template, write the same
# claims in their specs and containers, and every cached pod keeps them.
_SHARED: dict[object, object] = {}


def _shared(value: _Tuple) -> _Tuple:
    """An equal tuple seen before, else this one."""
    return value if not value else alike(_SHARED, value, value)  # type: ignore[return-value]
