"""Which ResourceClaim each of a pod's `spec.resourceClaims` is, and whether the pod may use
it, as k8s.io/dynamic-resource-allocation's resourceclaim package answers the kubelet and the
resourceclaim controller, with its errors' words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

CLAIMS = "resourceclaims.resource.k8s.io"
TEMPLATES = "resourceclaimtemplates.resource.k8s.io"
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"


class ClaimNameError(Exception):
    """The claim's name cannot be known (not created yet, or an API this code predates)."""


class NotCreatedYet(ClaimNameError):
    """A template's claim the resourceclaim controller has not recorded in the pod yet."""


@dataclass(frozen=True)
class ClaimName:
    """A pod claim's ResourceClaim: its name (None when the pod needs none) and whether the
    pod must own it (a claim made from a template)."""

    name: str | None
    generated: bool


def claim_name(pod: Obj, pod_claim: Obj) -> ClaimName:
    """resourceclaim.Name: a named claim, or the one `status.resourceClaimStatuses` records for
    a template; ClaimNameError when it cannot be told."""
    meta = pod["metadata"]
    if pod_claim.get("resourceClaimName") is not None:
        return ClaimName(str(pod_claim["resourceClaimName"]), False)
    if pod_claim.get("resourceClaimTemplateName") is not None:
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("name") == pod_claim.get("name"):
                name = status.get("resourceClaimName")
                return ClaimName(None if name is None else str(name), True)
        raise NotCreatedYet(
            f'pod "{meta.get("namespace")}/{meta.get("name")}": ResourceClaim not created yet'
        )
    raise ClaimNameError(
        f'pod "{meta.get("namespace")}/{meta.get("name")}", spec.resourceClaim '
        f'"{pod_claim.get("name")}": none of the supported fields are set'
    )


def owner_problem(pod: Obj, claim: Obj) -> str | None:
    """resourceclaim.IsForPod: None when the pod controls the claim, else why not."""
    pod_meta, claim_meta = pod["metadata"], claim["metadata"]
    pod_key = f"{pod_meta.get('namespace')}/{pod_meta.get('name')}"
    claim_key = f"{claim_meta.get('namespace')}/{claim_meta.get('name')}"
    if claim_meta.get("namespace") != pod_meta.get("namespace"):
        return f"ResourceClaim {claim_key} is not in the same namespace as Pod {pod_key}"
    if controlling_pod_uid(claim) != pod_meta.get("uid"):
        return f"ResourceClaim {claim_key} was not created for Pod {pod_key} (Pod is not owner)"
    return None


def controlling_pod(claim: Obj) -> tuple[str, str] | None:
    """(name, uid) of the pod whose controller ownerReference the claim carries."""
    for ref in claim["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("apiVersion") == "v1" and ref.get("kind") == "Pod":
            return str(ref.get("name", "")), str(ref.get("uid", ""))
    return None


def controlling_pod_uid(claim: Obj) -> str | None:
    """The uid of the claim's controlling pod, if a pod controls it."""
    owner = controlling_pod(claim)
    return None if owner is None else owner[1]


def reserved_for(pod: Obj, claim: Obj) -> bool:
    """resourceclaim.IsReservedForPod: the pod's uid is among the claim's consumers."""
    uid = pod["metadata"].get("uid")
    return any(c.get("uid") == uid for c in (claim.get("status") or {}).get("reservedFor") or [])


def pod_consumer(pod: Obj) -> Obj:
    """The reservedFor entry that names a pod."""
    meta = pod["metadata"]
    return {"resource": "pods", "name": meta["name"], "uid": meta["uid"]}


def pod_done(pod: Obj) -> bool:
    """The controller's isPodDone: it finished, or was deleted before it was scheduled."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return True
    return bool(pod["metadata"].get("deletionTimestamp")) and not pod["spec"].get("nodeName")
