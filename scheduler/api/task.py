"""TaskInfo: the compact record of one pod, with the status the session moves it through.

TaskInfo.from_pod reads a pod with the readers of each concern: its request
(api/pod_requests.py), what it asks of its node (api/placement.py) and of the pods around it
(api/pod_topology.py), its protection (api/annotations.py), its claims
(api/resource_claims.py) and the fields muster does not honour (api/pod_fields.py); what
is left here is its identity, its status and its gang.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Mapping
from types import MappingProxyType

import msgspec

from scheduler.api import wire
from scheduler.api.alike import alike
from scheduler.api.annotations import UNPROTECTED, PodProtection, pod_protection
from scheduler.api.names import (
    CONSUME_PROVISIONING_REQUEST,
    GROUP_NAME_ANNOTATION,
    QUEUE_NAME_ANNOTATION,
    TASK_SPEC_ANNOTATION,
)
from scheduler.api.native import native_key
from scheduler.api.placement import (
    PodPlacementSpec,
    ephemeral_claims,
    placement_spec,
    pod_claims,
    pod_images,
)
from scheduler.api.pod_fields import Unhonoured, unhonoured
from scheduler.api.pod_requests import pod_request
from scheduler.api.pod_topology import PodTopologySpec, topology_spec
from scheduler.api.resource_claims import PodClaims, of_pod
from scheduler.api.resources import Resource


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
    return alike(_LABEL_SETS, tuple(labels.items()), labels)


_LABEL_SETS: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
_NO_LABELS: Mapping[str, str] = MappingProxyType({})


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
        "node_request",
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
        node_request: Resource | None = None,
    ) -> None:
        self.uid = uid
        self.namespace = namespace
        self.name = name
        self.request = request
        # What a node's room holds for the pod: `request` less the devices its claims count
        # for its queue (deviceclass/<class>), which no node has and node arithmetic would
        # only carry along; `request` itself for most pods. The two change together, through
        # set_request.
        self.node_request = request if node_request is None else node_request
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
            node_request=self.node_request,
        )

    def set_request(self, request: Resource) -> None:
        """Make `request` the pod's (with the devices its claims count for its queue, if
        any); a node's room holds it without those counts (`node_request`)."""
        self.request = request
        self.node_request = request.without_devices()

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
