"""What a session decides: the values the effects layer turns into API calls.

The records a session makes per pod or per gang (binds, conditions, messages) are frozen
msgspec Structs rather than frozen dataclasses: a session makes tens of thousands, and a
frozen dataclass's constructor sets each field through object.__setattr__, several times
slower than a Struct's. Both are immutable and compare and hash by value. The per-queue
records, which hold mutable vectors, stay dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from scheduler.api import dra
from scheduler.api.native import PodGroupApi, native_key
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.reasons import INVALID_OBJECT, PARTLY_BOUND_UNDOING, PREEMPTED
from scheduler.api.resources import Resource
from scheduler.api.snapshot import SettledJob

# kube-scheduler's VolumeBinding bindTimeoutSeconds: how long a bind waits for its claims.
DEFAULT_CLAIMS_TIMEOUT = 600.0


class ClaimBinding(msgspec.Struct, frozen=True, gc=False):
    """PreBind for one unbound WaitForFirstConsumer claim of a pod being bound: provision
    it on the bind's node (the claim gets volume.kubernetes.io/selected-node), or bind it
    to a static PersistentVolume (the volume's claimRef names the claim)."""

    namespace: str
    claim: str
    claim_uid: str
    # A static PV to bind ("" provisions), and its resourceVersion as the session saw it:
    # the claimRef patch is conditional on it, so two binds never take one volume.
    volume: str = ""
    volume_resource_version: str = ""


class Bind(msgspec.Struct, frozen=True, gc=False):
    """Bind a pod to a node (POST pods/NAME/binding), after its claims' PreBind."""

    namespace: str
    name: str
    uid: str
    node: str
    job: str
    claims: tuple[ClaimBinding, ...] = ()
    # How long the bind waits for its claims to be bound (predicates'
    # volumebinding.bindTimeoutSeconds).
    claims_timeout: float = DEFAULT_CLAIMS_TIMEOUT


class DeviceClaimBinding(msgspec.Struct, frozen=True, gc=False):
    """PreBind for one ResourceClaim of a pod being bound (DRA), as kube-scheduler writes it:
    the claim's delete-protection finalizer, then one write of its status with the
    allocation (when this session allocated the claim) and the pod added to reservedFor."""

    namespace: str
    name: str
    # The claim's uid as the session saw it: a claim deleted and made again is another.
    uid: str
    # The devices chosen for it; None when the claim was allocated already (the pod only
    # joins its reservedFor).
    allocation: dra.AllocationResult | None = None
    # Whether the API server holds an allocation muster wrote for a pod that was never bound,
    # which this bind replaces: it is cleared first, as kube-scheduler's PostFilter clears it.
    replaces: bool = False


class DeviceBind(Bind, frozen=True, gc=False):
    """A bind of a pod with ResourceClaims: the claims are written before it (PreBind)."""

    devices: tuple[DeviceClaimBinding, ...] = ()


class Evict(msgspec.Struct, frozen=True, gc=False):
    """Evict a pod through the Eviction API, after the DisruptionTarget condition and an
    event naming the reason. The evictions made for one preemptor are sent together:
    checked first (dry run), and none is sent if a PodDisruptionBudget refuses one."""

    namespace: str
    name: str
    uid: str
    node: str
    job: str
    reason: str
    # The gang the room is made for ("namespace/name"); for an undo, the gang undone.
    preemptor: str = ""

    @property
    def undoes(self) -> bool:
        """Whether the eviction undoes its own gang (a partly bound gang past its time,
        actions/partly_bound.py): preempt and reclaim never evict a member of the gang
        they make room for."""
        return self.preemptor == self.job

    @property
    def event(self) -> str:
        """The reason of the event on the pod."""
        return PARTLY_BOUND_UNDOING if self.undoes else PREEMPTED


class GroupCondition(msgspec.Struct, frozen=True, gc=False):
    """A PodGroup condition as the session wants it."""

    type: str
    status: str
    reason: str
    message: str
    # RFC 3339; kept while the status stays the same, the session's time when it changes
    # ("" lets the writer stamp it). The admission time is read back from it after a restart.
    last_transition_time: str = ""


class PodGroupStatusUpdate(msgspec.Struct, frozen=True, gc=False):
    """A PodGroup status that differs from what the API server holds."""

    namespace: str
    name: str
    phase: PodGroupPhase
    conditions: tuple[GroupCondition, ...]
    running: int
    succeeded: int
    failed: int
    # events name the PodGroup by uid too: `kubectl describe podgroup` selects events by it
    uid: str = ""
    # The annotation volcano.sh/job-allocated-hypernode to write with the status ("": none).
    allocated_hypernode: str = ""

    @property
    def api(self) -> PodGroupApi:
        """Which API the PodGroup comes from."""
        return PodGroupApi.VOLCANO

    @property
    def key(self) -> str:
        """The gang key of the PodGroup."""
        return f"{self.namespace}/{self.name}"


class NativeStatusUpdate(PodGroupStatusUpdate, frozen=True, gc=False):
    """A native PodGroup's conditions that differ from what the API server holds (it has no
    phase or counts: those fields are the session's verdict, for events and tools): its
    version, and the condition types of muster's to delete from it (its status is written
    with a strategic merge patch, which keeps what it does not name)."""

    version: str = ""
    removed: tuple[str, ...] = ()

    @property
    def api(self) -> PodGroupApi:
        """A native PodGroup's."""
        return PodGroupApi.NATIVE

    @property
    def key(self) -> str:
        """The gang key of the PodGroup (api/native.py)."""
        return native_key(self.namespace, self.name)


class PodGroupEvent(msgspec.Struct, frozen=True, gc=False):
    """An event on a PodGroup that a condition's change of reason calls for (one whose
    event the status writer does not record: PartlyBound's)."""

    namespace: str
    name: str
    uid: str
    type: str  # "Normal" or "Warning"
    reason: str
    message: str


class HyperNodeStatusUpdate(msgspec.Struct, frozen=True, gc=False):
    """A HyperNode's status.nodeCount that differs from what the API server holds."""

    name: str
    node_count: int


class PodUnschedulable(msgspec.Struct, frozen=True, gc=False):
    """A pending pod that stays pending: PodScheduled=False and a FailedScheduling event."""

    namespace: str
    name: str
    uid: str
    job: str
    reason: str  # "Unschedulable" or "SchedulingGated", as kube-scheduler writes them
    message: str


class FieldNotHonoured(msgspec.Struct, frozen=True, gc=False):
    """A pod placed although muster does not honour some of its spec (api/pod_fields.py):
    a Warning event FieldNotHonoured on it, once per pod."""

    namespace: str
    name: str
    uid: str
    message: str


@dataclass(frozen=True, slots=True)
class HeldRoom:
    """Room a session held for a gang (framework/holds.py), by node: for the metrics and
    `muster explain`. `kind` is "starving", "provisioned" (capacity an autoscaler added) or
    "partly-bound" (a partly bound gang's missing members)."""

    job: str
    since: float
    nodes: dict[str, Resource]
    kind: str = "starving"


class PodSetTemplate(msgspec.Struct, frozen=True):
    """One pod set of a ProvisioningRequest to create: its PodTemplate's name and
    `template` (metadata and spec), and how many pods of it."""

    name: str
    count: int
    template: dict[str, Any]


class CreateProvisioningRequest(msgspec.Struct, frozen=True):
    """Create the PodTemplates, then the ProvisioningRequest naming them, owned by the
    PodGroup (the templates then owned by the request); framework/scaleup.py."""

    namespace: str
    name: str
    podgroup: str
    podgroup_uid: str
    attempt: int
    class_name: str
    parameters: tuple[tuple[str, str], ...]
    pod_sets: tuple[PodSetTemplate, ...]
    # The owning PodGroup's apiVersion ("": Volcano's): a native one's is scheduling.k8s.io's.
    podgroup_api_version: str = ""


class DeleteProvisioningRequest(msgspec.Struct, frozen=True, gc=False):
    """Delete a ProvisioningRequest and the PodTemplates it names, and why."""

    namespace: str
    name: str
    podgroup: str
    templates: tuple[str, ...]
    reason: str
    # The PodGroup's apiVersion (a native one's, scheduling.k8s.io/...): what events name.
    podgroup_api_version: str = ""


class AnnotatePod(msgspec.Struct, frozen=True, gc=False):
    """Set a pending pod's consume-provisioning-request and provisioning-class-name
    annotations to `request` and `class_name` (both removed when `request` is "")."""

    namespace: str
    name: str
    uid: str
    job: str
    request: str
    class_name: str


@dataclass(frozen=True, slots=True)
class ScaleUpReport:
    """Where a gang's scale-up stands after the session, for `muster explain` and `whatif`:
    "asked" (this session), "pending", "provisioned", "retrying" or "failed"; the request
    and attempt; what it adds (per pod shape: how many pods, each one's request)."""

    job: str
    state: str
    request: str
    attempt: int
    adds: tuple[tuple[int, Resource], ...]


@dataclass(frozen=True, slots=True)
class QueueFigures:
    """What the session's queue policy (proportion or capacity) computed for one queue:
    what it deserves and what its jobs request (the status writer and metrics read them)."""

    deserved: Resource
    request: Resource


@dataclass(frozen=True, slots=True)
class QueueStatusUpdate:
    """A queue's status as this session computed it; the writer skips it if unchanged."""

    name: str
    state: str
    allocated: Resource
    deserved: Resource | None
    podgroups: dict[str, int]
    # For metrics only; not written to the Queue's status.
    request: Resource | None = None
    capability: Resource | None = None
    # Resource names the server's status.allocated holds now (to clear the stale ones).
    observed_allocated: frozenset[str] = frozenset()


class InvalidObjectReport(msgspec.Struct, frozen=True, gc=False):
    """An object muster cannot use, or uses without honouring all of it: the writer puts
    the message on a Warning event with `reason`."""

    kind: str
    name: str
    message: str
    reason: str = INVALID_OBJECT


class NativeObjectReport(InvalidObjectReport, frozen=True, gc=False):
    """A report about a native PodGroup, at the version its events name."""

    version: str = ""


@dataclass(slots=True)
class SessionResult:
    """Everything one session decided, in the order it should reach the API server."""

    binds: list[Bind] = field(default_factory=list)
    evictions: list[Evict] = field(default_factory=list)
    podgroups: list[PodGroupStatusUpdate] = field(default_factory=list)
    # Events on PodGroups beside their status (a partly bound gang completed, held, undone).
    events: list[PodGroupEvent] = field(default_factory=list)
    unschedulable: list[PodUnschedulable] = field(default_factory=list)
    queues: list[QueueStatusUpdate] = field(default_factory=list)
    invalid: list[InvalidObjectReport] = field(default_factory=list)
    # Pods bound by this session whose spec uses fields muster placed them without.
    field_warnings: list[FieldNotHonoured] = field(default_factory=list)
    hypernodes: list[HyperNodeStatusUpdate] = field(default_factory=list)
    # Jobs holding pipelined room at the end of the session (the cache keeps them
    # nominated for the next one), and per job tried: whether anything of it was placed.
    nominated: list[str] = field(default_factory=list)
    attempts: dict[str, bool] = field(default_factory=dict)
    # Jobs enqueue admitted (Pending -> Inqueue) and jobs it sent back to Pending
    # because they did not start in time; the cache times admissions with them.
    admitted: list[str] = field(default_factory=list)
    dequeued: list[str] = field(default_factory=list)
    # Seconds per action ("allocate") and per plugin ("plugin:gang"), for metrics.
    timings: dict[str, float] = field(default_factory=dict)
    # Pods of ours waiting for a node when the session ended, attempted or not: a gang
    # waiting out its backoff is not tried, so `unschedulable` has no message for it.
    pending: int = 0
    # Room held for starving gangs at the end of the session's placements, and how many
    # gangs starved (held for or not).
    holds: list[HeldRoom] = field(default_factory=list)
    starving: int = 0
    # Jobs the session leaves settled (framework/settled.py): the cache shares them with
    # the next sessions, which do not act on them, until something that could move them
    # changes.
    settled: dict[str, SettledJob] = field(default_factory=dict)
    # ProvisioningRequests to create and delete, pending pods to annotate for them, and
    # where each gang's scale-up stands (framework/scaleup.py).
    provisioning_requests: list[CreateProvisioningRequest] = field(default_factory=list)
    provisioning_deletions: list[DeleteProvisioningRequest] = field(default_factory=list)
    pod_annotations: list[AnnotatePod] = field(default_factory=list)
    scale_ups: list[ScaleUpReport] = field(default_factory=list)
    # muster's words for pods whose ResourceClaims found no devices, by pod (ns/name): which
    # claim, request and class, how many devices match and how many are free, on a few of
    # the nodes examined (for `muster explain` and `whatif`; the conditions keep
    # kube-scheduler's words).
    devices: dict[str, list[str]] = field(default_factory=dict)
