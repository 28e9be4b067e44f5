"""ProvisioningRequests (autoscaling.x-k8s.io/v1): how muster asks a cluster autoscaler for
the nodes of a whole gang at once, and reads back what became of the request.

cluster-autoscaler (`--enable-provisioning-requests`) answers a ProvisioningRequest by
its class: `best-effort-atomic-scale-up.autoscaling.x-k8s.io` scales one node group up for
all of its pods or for none; `check-capacity.autoscaling.x-k8s.io` only checks the nodes
there are. It writes the request's conditions (Accepted, Provisioned, Failed,
BookingExpired, CapacityRevoked), keeps what it provisioned booked for 10 minutes after
Provisioned, and leaves out of its ordinary scale-up any pending pod annotated
`autoscaling.x-k8s.io/consume-provisioning-request`.

Everything muster needs to resume after a restart is on the objects: the request is named
after its PodGroup and attempt, labelled as muster's (with the attempt), owned by the
PodGroup; its conditions say where it stands and since when. `ScaleUpRequest` is that
reading; the decisions are framework/scaleup.py's.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import msgspec

from scheduler.api import wire
from scheduler.api.names import CONSUME_PROVISIONING_REQUEST
from scheduler.api.native import GROUP as NATIVE_GROUP
from scheduler.api.native import native_key
from scheduler.api.timestamps import parse_rfc3339

GROUP = "autoscaling.x-k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "ProvisioningRequest"
PLURAL = "provisioningrequests"
PATH = f"/apis/{API_VERSION}/{PLURAL}"

# The classes cluster-autoscaler serves.
BEST_EFFORT_ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
KNOWN_CLASSES = (BEST_EFFORT_ATOMIC, CHECK_CAPACITY)

# On a pending pod: the request whose capacity it waits for (cluster-autoscaler then leaves
# it out of its ordinary, pod-by-pod scale-up), and that request's class.
CONSUME_ANNOTATION = CONSUME_PROVISIONING_REQUEST
CLASS_ANNOTATION = "autoscaling.x-k8s.io/provisioning-class-name"

# The request's condition types (cluster-autoscaler's apis/provisioningrequest v1).
ACCEPTED = "Accepted"
PROVISIONED = "Provisioned"
FAILED = "Failed"
BOOKING_EXPIRED = "BookingExpired"
CAPACITY_REVOKED = "CapacityRevoked"

# How muster marks the requests and templates it writes, and the attempt a request is.
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "muster"
ATTEMPT_LABEL = "scale-up.muster.dev/attempt"

# The upstream schema's limits: 1 to 32 pod sets; names are DNS subdomains (253).
MAX_POD_SETS = 32
MAX_NAME = 253


class RequestState(enum.Enum):
    """Where a request stands, from its conditions; an earlier member wins when several are
    True, in Kueue's order (Failed, CapacityRevoked, BookingExpired, Provisioned, Accepted)."""

    FAILED = "Failed"
    REVOKED = "CapacityRevoked"
    EXPIRED = "BookingExpired"
    PROVISIONED = "Provisioned"
    # Provisioned=False: the autoscaler tried and found no capacity; it tries again itself.
    NOT_FOUND = "CapacityNotFound"
    ACCEPTED = "Accepted"
    # No condition yet: no autoscaler has looked at it.
    WAITING = "Waiting"

    @property
    def ended(self) -> bool:
        """Whether the request will give nothing more (muster may make another attempt)."""
        return self in _ENDED


_ENDED = frozenset({RequestState.FAILED, RequestState.REVOKED, RequestState.EXPIRED})


@dataclass(frozen=True, slots=True)
class ScaleUpRequest:
    """One of muster's ProvisioningRequests as sessions read it."""

    namespace: str
    name: str
    uid: str
    # The owning PodGroup (name and uid) and which attempt for it this request is.
    podgroup: str
    podgroup_uid: str
    attempt: int
    class_name: str
    state: RequestState
    # When the condition that decides `state` last changed (epoch seconds; the creation
    # time while there is none), and its reason and message.
    since: float
    reason: str
    message: str
    # The PodTemplates it names, with their counts.
    pod_sets: tuple[tuple[str, int], ...]
    # Whether the owning PodGroup is a native one (scheduling.k8s.io, api/native.py).
    native: bool = False
    # The owning PodGroup's apiVersion, as the owner reference gives it.
    podgroup_api_version: str = ""

    @property
    def key(self) -> str:
        """The owning PodGroup's gang key."""
        if self.native:
            return native_key(self.namespace, self.podgroup)
        return f"{self.namespace}/{self.podgroup}"

    @property
    def count(self) -> int:
        """How many pods it asks room for."""
        return sum(count for _, count in self.pod_sets)

    @property
    def templates(self) -> tuple[str, ...]:
        """The names of the PodTemplates it names."""
        return tuple(name for name, _ in self.pod_sets)


def request_name(podgroup: str, attempt: int, *, native: bool = False) -> str:
    """The name of a PodGroup's request for attempt `attempt` (1, 2, ...). A native
    PodGroup's ends in `-native`: a Volcano PodGroup and a native one may share a name in a
    namespace, and a Volcano one's request always ends in its attempt, so theirs never meet."""
    name = f"{podgroup}-scaleup-{attempt}"
    return limited_name(f"{name}-native" if native else name)


def template_name(request: str, index: int) -> str:
    """The name of the request's PodTemplate for its pod set `index`."""
    return limited_name(f"{request}-{index}")


def limited_name(full: str) -> str:
    """`full` when it is a valid length for a name, else its head and a hash of it (as
    Kueue shortens the names of its requests)."""
    if len(full) <= MAX_NAME:
        return full
    digest = hashlib.sha1(full.encode(), usedforsecurity=False).hexdigest()[:10]
    return f"{full[: MAX_NAME - 11].rstrip('-.')}-{digest}"


def is_ours(labels: Mapping[str, str]) -> bool:
    """Whether an object carries muster's managed-by label."""
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY


def read_request(obj: ProvisioningRequest) -> ScaleUpRequest | None:
    """The request as sessions read it; None when it is not one muster made for a PodGroup
    (another client's, or one whose labels or owner were edited away)."""
    meta = obj.metadata
    if not is_ours(meta.labels):
        return None
    owner = next((ref for ref in meta.owner_references if ref.kind == "PodGroup"), None)
    attempt_text = meta.labels.get(ATTEMPT_LABEL, "")
    if owner is None or not attempt_text.isdigit() or int(attempt_text) < 1:
        return None
    state, condition = _state(obj.status.conditions)
    created = parse_rfc3339(meta.creation_timestamp) or 0.0
    since = created
    reason = message = ""
    if condition is not None:
        since = parse_rfc3339(condition.last_transition_time) or created
        reason, message = condition.reason, condition.message
    return ScaleUpRequest(
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid,
        podgroup=owner.name,
        podgroup_uid=owner.uid,
        attempt=int(attempt_text),
        class_name=obj.spec.provisioning_class_name,
        state=state,
        since=since,
        reason=reason,
        message=message,
        pod_sets=tuple((s.pod_template_ref.name, s.count) for s in obj.spec.pod_sets),
        native=owner.api_version.startswith(f"{NATIVE_GROUP}/"),
        podgroup_api_version=owner.api_version,
    )


def _state(conditions: Iterable[wire.Condition]) -> tuple[RequestState, wire.Condition | None]:
    by_type = {c.type: c for c in conditions}
    for kind, state in (
        (FAILED, RequestState.FAILED),
        (CAPACITY_REVOKED, RequestState.REVOKED),
        (BOOKING_EXPIRED, RequestState.EXPIRED),
        (PROVISIONED, RequestState.PROVISIONED),
    ):
        found = by_type.get(kind)
        if found is not None and found.status == "True":
            return state, found
    provisioned = by_type.get(PROVISIONED)
    if provisioned is not None and provisioned.status == "False":
        return RequestState.NOT_FOUND, provisioned
    accepted = by_type.get(ACCEPTED)
    if accepted is not None and accepted.status == "True":
        return RequestState.ACCEPTED, accepted
    return RequestState.WAITING, None


def requests_by_podgroup(
    requests: Iterable[ScaleUpRequest],
) -> dict[str, tuple[ScaleUpRequest, ...]]:
    """Requests by their PodGroup's key, oldest attempt first."""
    grouped: dict[str, list[ScaleUpRequest]] = {}
    for request in requests:
        grouped.setdefault(request.key, []).append(request)
    return {
        key: tuple(sorted(found, key=lambda r: (r.attempt, r.name)))
        for key, found in grouped.items()
    }


# Wire structs ----------------------------------------------------------------------------
# The subset of autoscaling.x-k8s.io/v1 ProvisioningRequest JSON that muster reads, in the
# style of api/wire/ (unknown fields skipped, camelCase names).


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True):
    """Base of the ProvisioningRequest wire structs."""


class Reference(_Wire):
    """spec.podSets[].podTemplateRef."""

    name: str = ""


class PodSet(_Wire):
    """spec.podSets[]."""

    pod_template_ref: Reference = msgspec.field(default_factory=Reference)
    count: int = 0


class ProvisioningRequestSpec(_Wire):
    """spec."""

    provisioning_class_name: str = ""
    pod_sets: list[PodSet] = msgspec.field(default_factory=list)
    parameters: dict[str, str] = msgspec.field(default_factory=dict)


class ProvisioningRequestStatus(_Wire):
    """status."""

    conditions: list[wire.Condition] = msgspec.field(default_factory=list)
    provisioning_class_details: dict[str, str] = msgspec.field(default_factory=dict)


class ProvisioningRequest(_Wire):
    """A ProvisioningRequest."""

    metadata: wire.ObjectMeta = msgspec.field(default_factory=wire.ObjectMeta)
    spec: ProvisioningRequestSpec = msgspec.field(default_factory=ProvisioningRequestSpec)
    status: ProvisioningRequestStatus = msgspec.field(default_factory=ProvisioningRequestStatus)
