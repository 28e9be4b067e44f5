"""VolumeBinding: kube-scheduler's claim checks, with its verdicts and reason strings.

For each claim of a pod (persistentVolumeClaim volumes, and generic ephemeral volumes'
`<pod>-<volume>` claims), as kube-scheduler's PreFilter and Filter do:

- a claim that does not exist, or is being deleted: the pod is unresolvable;
- a claim bound to a PersistentVolume (volumeName set and pv.kubernetes.io/bind-completed):
  the volume must exist and its spec.nodeAffinity.required must match the node;
- an unbound claim of an Immediate class (or pre-bound by volumeName, waiting for the PV
  controller): the pod waits, "pod has unbound immediate PersistentVolumeClaims";
- an unbound claim of a WaitForFirstConsumer class: a node where an Available volume
  matches it (class, access modes, capacity, selector, volume node affinity; the
  smallest, and never one another pod of the session took), or where its class can
  provision (a provisioner other than kubernetes.io/no-provisioner, allowedTopologies
  matching the node); a claim already carrying volume.kubernetes.io/selected-node fits
  that node only.

What it decides for the pods it places is returned as ClaimBindings for the binder's
PreBind. Pure: reads a StorageView, keeps the session's chosen volumes. The predicates
plugin calls it through nodefit/storagefilters.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from scheduler.api import wire
from scheduler.api.errors import InvalidQuantity
from scheduler.api.node import NodeInfo
from scheduler.api.quantity import parse_quantity
from scheduler.api.selectors import SelectorRequirement, SelectorTerm, label_selector
from scheduler.api.snapshot import StorageView
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.framework.decisions import ClaimBinding
from scheduler.framework.status import OK, Status, unresolvable
from scheduler.nodefit.matching import term_matches

REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


def claim_class(claim: wire.PersistentVolumeClaim) -> str:
    """The claim's StorageClass, as kube's GetPersistentVolumeClaimClass reads it: the beta
    annotation first, then spec.storageClassName."""
    annotated = claim.metadata.annotations.get(BETA_CLASS_ANNOTATION)
    if annotated is not None:
        return annotated
    return claim.spec.storage_class_name or ""


def volume_class(volume: wire.PersistentVolume) -> str:
    """The volume's StorageClass (the beta annotation first, as kube reads it)."""
    annotated = volume.metadata.annotations.get(BETA_CLASS_ANNOTATION)
    if annotated is not None:
        return annotated
    return volume.spec.storage_class_name


def _terms(selector: wire.NodeSelector) -> tuple[SelectorTerm, ...]:
    def requirements(items: list[wire.NodeSelectorRequirement]) -> tuple[SelectorRequirement, ...]:
        return tuple(SelectorRequirement(r.key, r.operator, tuple(r.values)) for r in items)

    return tuple(
        SelectorTerm(requirements(term.match_expressions), requirements(term.match_fields))
        for term in selector.node_selector_terms
    )


def _storage(resources: Mapping[str, wire.Quantity]) -> Fraction | None:
    value = resources.get("storage")
    if value is None:
        return Fraction(0)
    try:
        return parse_quantity(value)
    except InvalidQuantity:
        return None


def _bound_to(volume: wire.PersistentVolume, claim: wire.PersistentVolumeClaim) -> bool:
    """kube's IsVolumeBoundToClaim: the volume's claimRef names the claim (and its uid, if set)."""
    ref = volume.spec.claim_ref
    if ref is None:
        return False
    meta = claim.metadata
    return (
        ref.name == meta.name
        and ref.namespace == meta.namespace
        and (not ref.uid or ref.uid == meta.uid)
    )


def _controlled_by(claim: wire.PersistentVolumeClaim, uid: str) -> bool:
    return any(ref.controller and ref.uid == uid for ref in claim.metadata.owner_references)


@dataclass(frozen=True, slots=True)
class _PodClaims:
    """A pod's claims sorted as PreFilter does, or why the pod cannot be placed at all."""

    failure: Status | None
    bound: tuple[wire.PersistentVolumeClaim, ...] = ()
    # Unbound WaitForFirstConsumer claims, smallest request first (findMatchingVolumes'
    # order, so each gets the smallest volume that fits it).
    to_bind: tuple[wire.PersistentVolumeClaim, ...] = ()


@dataclass(frozen=True, slots=True)
class _Plan:
    """What Filter found on one node: the reasons it refuses, or the volume per claim
    ("" for a claim to provision)."""

    reasons: tuple[str, ...]
    volumes: tuple[tuple[wire.PersistentVolumeClaim, str], ...] = ()


class VolumeBinding:
    """One session's VolumeBinding: static verdicts, the volumes its placements took,
    and the PreBind each placed pod needs."""

    def __init__(self, storage: StorageView, nodes: Mapping[str, NodeInfo]) -> None:
        self.storage = storage
        self.nodes = nodes
        # PreFilter per claims (and, for a pod with ephemeral claims, per pod: it must own them).
        self._claims: dict[tuple[tuple[str, ...], str], _PodClaims] = {}
        self._volume_terms: dict[str, tuple[SelectorTerm, ...] | None] = {}
        # Volumes taken by placements of this session: volume name -> task uid.
        self._taken: dict[str, str] = {}
        self._plans: dict[str, tuple[tuple[wire.PersistentVolumeClaim, str], ...]] = {}

    # The plugin's calls ---------------------------------------------------
    def admits(self, task: TaskInfo, node: NodeInfo) -> Status:
        """The verdict from the cluster's storage alone (volumes this session took aside)."""
        claims = self._pod_claims(task)
        if claims.failure is not None:
            return claims.failure
        plan = self._plan(claims, node, exclude=None)
        return unresolvable(*plan.reasons) if plan.reasons else OK

    def fits(self, task: TaskInfo, node: NodeInfo) -> Status:
        """The verdict once volumes other pods of this session took are out of reach."""
        if not self._taken:
            return OK
        claims = self._pod_claims(task)
        if claims.failure is not None or not claims.to_bind:
            return OK if claims.failure is None else claims.failure
        plan = self._plan(claims, node, exclude=task.uid)
        return unresolvable(*plan.reasons) if plan.reasons else OK

    def utilization(self, task: TaskInfo, node: NodeInfo) -> float | None:
        """How full (0..100) the static volumes the pod's unbound claims would bind on the
        node are: per StorageClass the claims' requests over the volumes' capacity, the
        mean over the classes (kube's VolumeBinding score input); None when it binds none."""
        claims = self._pod_claims(task)
        if claims.failure is not None or not claims.to_bind:
            return None
        plan = self._plan(claims, node, exclude=task.uid)
        per_class: dict[str, tuple[Fraction, Fraction]] = {}
        for claim, volume in plan.volumes:
            if not volume:
                continue
            requested = _storage(claim.spec.resources.requests) or Fraction(0)
            capacity = _storage(self.storage.volumes[volume].spec.capacity) or Fraction(0)
            asked, held = per_class.get(claim_class(claim), (Fraction(0), Fraction(0)))
            per_class[claim_class(claim)] = (asked + requested, held + capacity)
        if plan.reasons or not per_class:
            return None
        shares = [float(100 * asked / held) for asked, held in per_class.values() if held]
        return sum(shares) / len(shares) if shares else None

    def allocate(self, task: TaskInfo) -> None:
        """A pod was placed in this session: it takes the volumes its node offers."""
        if task.status not in (TaskStatus.ALLOCATED, TaskStatus.PIPELINED):
            return  # an eviction undone: its claims are bound already
        claims = self._pod_claims(task)
        if claims.failure is not None or not claims.to_bind:
            return
        node = self.nodes.get(task.node_name)
        if node is None:
            return
        plan = self._plan(claims, node, exclude=task.uid)
        if plan.reasons:
            return  # not reachable through the filters; nothing to take
        self._plans[task.uid] = plan.volumes
        for _claim, volume in plan.volumes:
            if volume:
                self._taken[volume] = task.uid

    def deallocate(self, task: TaskInfo) -> None:
        """A placement was undone: its volumes are free for the session's other pods."""
        plan = self._plans.pop(task.uid, None)
        if plan is None:
            return
        for _claim, volume in plan:
            if volume and self._taken.get(volume) == task.uid:
                del self._taken[volume]

    def has_plans(self) -> bool:
        """Whether a pod placed in this session has claims to provision or bind."""
        return bool(self._plans)

    def claim_bindings(self, uid: str) -> tuple[ClaimBinding, ...]:
        """The PreBind of a placed pod: per claim to bind, the static volume or provisioning."""
        plan = self._plans.get(uid, ())
        bindings: list[ClaimBinding] = []
        for claim, volume in plan:
            meta = claim.metadata
            if volume:
                version = self.storage.volumes[volume].metadata.resource_version
                bindings.append(ClaimBinding(meta.namespace, meta.name, meta.uid, volume, version))
            elif SELECTED_NODE not in meta.annotations:
                bindings.append(ClaimBinding(meta.namespace, meta.name, meta.uid))
        return tuple(bindings)

    # PreFilter ------------------------------------------------------------
    def _pod_claims(self, task: TaskInfo) -> _PodClaims:
        placement = task.placement
        key = (placement.claims, task.uid if placement.ephemeral_claims else "")
        cached = self._claims.get(key)
        if cached is None:
            cached = self._claims[key] = self._prefilter(task)
        return cached

    def _prefilter(self, task: TaskInfo) -> _PodClaims:
        keys = task.placement.claims
        ephemeral = task.placement.ephemeral_claims
        bound: list[wire.PersistentVolumeClaim] = []
        to_bind: list[wire.PersistentVolumeClaim] = []
        immediate = False
        for key in keys:
            claim = self.storage.claims.get(key)
            name = key.partition("/")[2]
            if claim is None:
                return _PodClaims(unresolvable(f'persistentvolumeclaim "{name}" not found'))
            if claim.metadata.deletion_timestamp is not None:
                return _PodClaims(unresolvable(f'persistentvolumeclaim "{name}" is being deleted'))
            if key in ephemeral and not _controlled_by(claim, task.uid):
                # kube's ephemeral.VolumeIsForPod: a claim of that name made for another pod.
                return _PodClaims(
                    unresolvable(f"PVC {key} was not created for pod {task.key} (pod is not owner)")
                )
            if claim.spec.volume_name and BIND_COMPLETED in claim.metadata.annotations:
                bound.append(claim)
            elif self._delays_binding(claim) and not claim.spec.volume_name:
                to_bind.append(claim)
            else:
                # Immediate, or pre-bound by volumeName: the PV controller binds it first.
                immediate = True
        if immediate:
            return _PodClaims(unresolvable(REASON_UNBOUND_IMMEDIATE))
        to_bind.sort(key=lambda c: _storage(c.spec.resources.requests) or Fraction(0))
        return _PodClaims(None, tuple(bound), tuple(to_bind))

    def _delays_binding(self, claim: wire.PersistentVolumeClaim) -> bool:
        # kube's IsDelayBindingMode: no class, or a class that does not exist, binds now.
        name = claim_class(claim)
        storage_class = self.storage.classes.get(name) if name else None
        return (
            storage_class is not None
            and storage_class.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER
        )

    # Filter ---------------------------------------------------------------
    def _plan(self, claims: _PodClaims, node: NodeInfo, exclude: str | None) -> _Plan:
        """FindPodVolumes on one node; `exclude` set: volumes the session took for pods
        other than that uid are out of reach."""
        bound_ok = True
        volumes_exist = True
        for claim in claims.bound:
            volume = self.storage.volumes.get(claim.spec.volume_name)
            if volume is None:
                volumes_exist = False
                break
            if not self._volume_fits(volume, node):
                bound_ok = False
                break
        unbound_ok = True
        chosen: list[tuple[wire.PersistentVolumeClaim, str]] = []
        if claims.to_bind:
            unbound_ok = self._match(claims.to_bind, node, exclude, chosen)
        reasons = []
        if not bound_ok:
            reasons.append(REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(REASON_BIND_CONFLICT)
        if not volumes_exist:
            reasons.append(REASON_PV_NOT_EXIST)
        return _Plan(tuple(reasons), tuple(chosen))

    def _match(
        self,
        to_bind: tuple[wire.PersistentVolumeClaim, ...],
        node: NodeInfo,
        exclude: str | None,
        chosen: list[tuple[wire.PersistentVolumeClaim, str]],
    ) -> bool:
        picked: set[str] = set()
        for claim in to_bind:
            selected = claim.metadata.annotations.get(SELECTED_NODE)
            if selected is not None:
                # Already handed to its provisioner for one node: only that node will do.
                if selected != node.name:
                    return False
                if not self._provisionable(claim, node):
                    return False
                chosen.append((claim, ""))
                continue
            volume = self._smallest_match(claim, node, exclude, picked)
            if volume:
                picked.add(volume)
                chosen.append((claim, volume))
            elif self._provisionable(claim, node):
                chosen.append((claim, ""))
            else:
                return False
        return True

    def _smallest_match(
        self,
        claim: wire.PersistentVolumeClaim,
        node: NodeInfo,
        exclude: str | None,
        picked: set[str],
    ) -> str:
        """kube's FindMatchingVolume for a node: a volume pre-bound to the claim, else the
        smallest Available one that matches; "" when none does."""
        requested = _storage(claim.spec.resources.requests)
        if requested is None:
            return ""
        wanted_class = claim_class(claim)
        best = ""
        best_size: Fraction | None = None
        for name, volume in self.storage.volumes.items():
            if name in picked:
                continue
            holder = self._taken.get(name)
            if exclude is not None and holder is not None and holder != exclude:
                continue
            size = _storage(volume.spec.capacity)
            if size is None or size < requested:
                continue
            if volume.spec.volume_mode != claim.spec.volume_mode:
                continue
            if volume.metadata.deletion_timestamp is not None:
                continue
            node_ok = self._volume_fits(volume, node)
            if _bound_to(volume, claim):
                return name if node_ok else ""
            if volume.status.phase != "Available" or volume.spec.claim_ref is not None:
                continue
            selector = claim.spec.selector
            if selector is not None and not label_selector(selector).matches(
                volume.metadata.labels
            ):
                continue
            if volume_class(volume) != wanted_class or not node_ok:
                continue
            if not set(claim.spec.access_modes) <= set(volume.spec.access_modes):
                continue
            if best_size is None or size < best_size:
                best, best_size = name, size
        return best

    def _provisionable(self, claim: wire.PersistentVolumeClaim, node: NodeInfo) -> bool:
        """checkVolumeProvisions: the class has a provisioner and its allowedTopologies
        admit the node (storage capacity tracking is not checked)."""
        storage_class = self.storage.classes.get(claim_class(claim))
        if storage_class is None:
            return False
        if storage_class.provisioner in ("", NO_PROVISIONER):
            return False
        if not storage_class.allowed_topologies:
            return True
        labels = node.labels
        return any(
            all(
                labels.get(expression.key) in expression.values
                for expression in term.match_label_expressions
            )
            for term in storage_class.allowed_topologies
        )

    def _volume_fits(self, volume: wire.PersistentVolume, node: NodeInfo) -> bool:
        """kube's CheckNodeAffinity: the volume's required node affinity matches the node's
        labels (it builds the node from its labels alone, so matchFields match nothing)."""
        name = volume.metadata.name
        if name not in self._volume_terms:
            affinity = volume.spec.node_affinity
            required = affinity.required if affinity is not None else None
            self._volume_terms[name] = _terms(required) if required is not None else None
        terms = self._volume_terms[name]
        if terms is None:
            return True
        return any(term_matches(term, node.labels, "") for term in terms)
