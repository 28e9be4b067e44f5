"""A ResourceClaim as allocation reads it: its requests normalised, its constraints, its
state, and the claims a pod uses.

A request becomes a `Request` with one or more `Choice`s, tried in order: `exactly` is one
choice; `firstAvailable` gives one per sub-request, named "request/sub-request" as the
results name them. A choice is ExactCount (its count, 1 when unset, as the API server
defaults it) or All; it carries its class, its own selectors, admin access and
tolerations. A constraint (`matchAttribute` or `distinctAttribute`) applies to the
requests it names, or to all of the claim's; naming a request covers its sub-requests.

What muster does not honour is refused by name (`Claim.refusal`), never ignored: capacity
requests (consumable capacity), an allocation mode or a request, selector or constraint
kind v1 does not define, and admin access in a namespace without the
`resource.kubernetes.io/admin-access: "true"` label (the API server checks that label
when the claim is made; muster checks it again, since a label can be removed).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass

import msgspec

from scheduler.api import dra
from scheduler.api.resource_claims import PodClaims, pod_claims

# The claims a pod uses are read with the pod (api/resource_claims.py); re-exported here,
# where allocation asks about them.
__all__ = ["Choice", "Claim", "Constraint", "PodClaims", "Request", "claim_from_wire", "pod_claims"]

MATCH = "matchAttribute"
DISTINCT = "distinctAttribute"


_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True, slots=True)
class Choice:
    """One way to satisfy a request: the request itself (`exactly`) or one of its
    sub-requests (`firstAvailable`)."""

    request: str
    # The name results carry: "request", or "request/sub-request".
    name: str
    device_class: str
    selectors: tuple[str, ...]
    all_devices: bool
    count: int
    admin_access: bool
    tolerations: tuple[dra.DeviceToleration, ...]
    # Where the choice sits in the claim's spec, for refusals' field paths.
    path: str

    @property
    def sub_request(self) -> str:
        """The sub-request's name, or "" for an `exactly` request."""
        return self.name.partition("/")[2]


@dataclass(frozen=True, slots=True)
class Request:
    """A request and its choices, in the order they are tried."""

    name: str
    choices: tuple[Choice, ...]


@dataclass(frozen=True, slots=True)
class Constraint:
    """A constraint over the devices of the requests it names (none: all of the claim's)."""

    kind: str
    attribute: str
    requests: frozenset[str]

    def applies_to(self, choice: Choice) -> bool:
        """Whether a device chosen for this choice is subject to the constraint."""
        if not self.requests:
            return True
        return choice.request in self.requests or choice.name in self.requests


@dataclass(frozen=True, slots=True)
class Claim:
    """A ResourceClaim: its normalised spec, its allocation on the API server (if any), who
    it is reserved for, and what muster refuses in it."""

    namespace: str
    name: str
    uid: str
    requests: tuple[Request, ...]
    constraints: tuple[Constraint, ...]
    config: tuple[dra.DeviceClaimConfiguration, ...]
    allocation: dra.AllocationResult | None
    reserved_for: frozenset[str]
    deleting: bool
    # The pod a template made this claim for (its controller ownerReference), if any.
    owner_pod_uid: str
    refusal: str | None
    # namespace/name, and every choice of every request in spec order: asked for every pod
    # on every node, so found once.
    key: str
    choices: tuple[Choice, ...]


@dataclass(frozen=True, slots=True)
class ClaimSet:
    """A session's claims by key (read only), those reserved or allocated on the API server
    (what the allocator starts from), and whether any has a field muster refuses."""

    by_key: dict[str, Claim]
    reserved: tuple[Claim, ...]
    allocated: tuple[Claim, ...]
    refusals: bool


def claim_set(claims: Sequence[Claim]) -> ClaimSet:
    """The ClaimSet of these claims."""
    return ClaimSet(
        {claim.key: claim for claim in claims},
        tuple(claim for claim in claims if claim.reserved_for),
        tuple(claim for claim in claims if claim.allocation is not None),
        any(claim.refusal is not None for claim in claims),
    )


class ClaimSpecs:
    """Each claim's spec as alike claims share it (what tells them apart for the node
    picker: nodefit/dynamicresources.py), by claim key, made again only when the claim's
    object changed: kept across sessions (dra/kept.py), so that each session finds the
    same string, its hash computed once."""

    def __init__(self) -> None:
        self._texts: dict[str, tuple[dra.ResourceClaim, str]] = {}

    def text(self, key: str, obj: dra.ResourceClaim) -> str:
        """The text of the claim `key` ("namespace/name"): "spec", its namespace and its spec
        as JSON, as alike claims of one namespace (its admin-access label) answer alike."""
        known = self._texts.get(key)
        if known is None or known[0] is not obj:
            spec = _encode(obj.spec).decode()
            known = self._texts[key] = (obj, f"spec {obj.metadata.namespace} {spec}")
        return known[1]

    def keep_only(self, keys: Container[str]) -> None:
        """Forget the claims not among these keys."""
        self._texts = {key: known for key, known in self._texts.items() if key in keys}


def claim_from_wire(
    obj: dra.ResourceClaim, namespace_labels: Mapping[str, str] | None = None
) -> Claim:
    """The claim as allocation reads it. `namespace_labels` are its namespace's labels
    (None: not known, admin access is then taken as the API server admitted it)."""
    meta = obj.metadata
    devices = obj.spec.devices
    refusals: list[str] = []
    requests = tuple(
        _request(index, request, refusals) for index, request in enumerate(devices.requests)
    )
    constraints = tuple(
        _constraint(index, constraint, refusals)
        for index, constraint in enumerate(devices.constraints)
    )
    if namespace_labels is not None and namespace_labels.get(dra.ADMIN_ACCESS_LABEL) != "true":
        for request in requests:
            for choice in request.choices:
                if choice.admin_access:
                    refusals.append(
                        f"{choice.path}.adminAccess: admin access to devices requires the "
                        f"`{dra.ADMIN_ACCESS_LABEL}: true` label on the containing namespace"
                    )
    owner = next(
        (ref.uid for ref in meta.owner_references if ref.controller and ref.kind == "Pod"), ""
    )
    status = obj.status
    return Claim(
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid,
        requests=requests,
        constraints=tuple(c for c in constraints if c is not None),
        config=tuple(devices.config),
        allocation=status.allocation,
        reserved_for=frozenset(
            ref.uid for ref in status.reserved_for if ref.resource == "pods" and not ref.api_group
        ),
        deleting=meta.deletion_timestamp is not None,
        owner_pod_uid=owner,
        refusal="; ".join(refusals) or None,
        key=f"{meta.namespace}/{meta.name}",
        choices=tuple(choice for request in requests for choice in request.choices),
    )


def _request(index: int, request: dra.DeviceRequest, refusals: list[str]) -> Request:
    path = f"spec.devices.requests[{index}]"
    if request.exactly is not None and not request.first_available:
        exact = request.exactly
        choice = _choice(
            request.name,
            request.name,
            f"{path}.exactly",
            exact.device_class_name,
            exact.selectors,
            exact.allocation_mode,
            exact.count,
            bool(exact.admin_access),
            exact.tolerations,
            exact.capacity,
            refusals,
        )
        return Request(request.name, (choice,))
    if request.first_available and request.exactly is None:
        choices = tuple(
            _choice(
                request.name,
                f"{request.name}/{sub.name}",
                f"{path}.firstAvailable[{position}]",
                sub.device_class_name,
                sub.selectors,
                sub.allocation_mode,
                sub.count,
                False,
                sub.tolerations,
                sub.capacity,
                refusals,
            )
            for position, sub in enumerate(request.first_available)
        )
        return Request(request.name, choices)
    refusals.append(f"{path}: exactly one of `exactly` or `firstAvailable` is required")
    return Request(request.name, ())


def _choice(
    request: str,
    name: str,
    path: str,
    device_class: str,
    selectors: Sequence[dra.DeviceSelector],
    mode: str,
    count: int,
    admin_access: bool,
    tolerations: Sequence[dra.DeviceToleration],
    capacity: dra.CapacityRequirements | None,
    refusals: list[str],
) -> Choice:
    if capacity is not None and capacity.requests:
        refusals.append(
            f"{path}.capacity: {dra.NOT_HONOURED['spec.devices.requests[].exactly.capacity']} "
            "is not honoured yet"
        )
    if mode not in (dra.EXACT_COUNT, dra.ALL):
        refusals.append(f'{path}.allocationMode: unsupported allocation mode "{mode}"')
    texts: list[str] = []
    for position, selector in enumerate(selectors):
        if selector.cel is None:
            refusals.append(f"{path}.selectors[{position}]: a selector without `cel` is unknown")
        else:
            texts.append(selector.cel.expression)
    return Choice(
        request=request,
        name=name,
        device_class=device_class,
        selectors=tuple(texts),
        all_devices=mode == dra.ALL,
        # The API server defaults an ExactCount request's count to 1.
        count=0 if mode == dra.ALL else max(count, 1),
        admin_access=admin_access,
        tolerations=tuple(tolerations),
        path=path,
    )


def _constraint(
    index: int, constraint: dra.DeviceConstraint, refusals: list[str]
) -> Constraint | None:
    names = frozenset(constraint.requests)
    if constraint.match_attribute and not constraint.distinct_attribute:
        return Constraint(MATCH, constraint.match_attribute, names)
    if constraint.distinct_attribute and not constraint.match_attribute:
        return Constraint(DISTINCT, constraint.distinct_attribute, names)
    refusals.append(
        f"spec.devices.constraints[{index}]: exactly one of `matchAttribute` or "
        "`distinctAttribute` is required"
    )
    return None
