"""The predicates plugin: which nodes may take a pod, with kube-scheduler's reasons.

Static checks (node_admits, cached by the session per placement spec and node)
run in kube-scheduler's filter order: NodeUnschedulable, TaintToleration,
NodeAffinity. Dynamic checks (node_fits) follow NodePorts, then
NodeResourcesFit, then (in sessions where some pod uses them) PodTopologySpread and
InterPodAffinity (nodefit/podtopologyspread.py, nodefit/interpodaffinity.py), then for pods
with ResourceClaims DynamicResources (nodefit/dynamicresources.py: Volcano 1.15 runs DRA
inside predicates, on by default): a placement takes the pod's devices, an undone one gives
them back, a commit makes them the gang's, and each bind carries its claims' PreBind. Each
reason string is the one `kubectl describe pod` shows for kube-scheduler, so users read the
same words from muster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from scheduler.api import dra
from scheduler.api.job import JobInfo
from scheduler.api.node import NodeInfo, Taint
from scheduler.api.reasons import FIELD_NOT_HONOURED
from scheduler.api.resources import is_device_count
from scheduler.api.snapshot import NO_STORAGE, ClusterSnapshot
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.framework.answers import Waiting
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session
from scheduler.framework.status import OK, Status, unresolvable, unschedulable
from scheduler.nodefit.dynamicresources import DynamicResources
from scheduler.nodefit.matching import first_untolerated, required_affinity_matches, tolerated
from scheduler.nodefit.podtopologyspread import PodTopology
from scheduler.nodefit.storagefilters import StorageFilters
from scheduler.plugins.predicates_arguments import PredicatesArguments as PredicatesArguments

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_TAINT = "node(s) had untolerated taint {taint}"
REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"
REASON_TOO_MANY_PODS = "Too many pods"
REASON_INSUFFICIENT = "Insufficient {resource}"
# An extended resource a DeviceClass serves through DRA (its extendedResourceName, or the
# implicit deviceclass.resource.kubernetes.io/<class>) on a node that publishes none of it:
# kube-scheduler 1.36 would make a claim for it; muster refuses the node by name rather than
# let the pod wait for an allocatable of 0 that never grows.
REASON_EXTENDED_BY_DRA = (
    "{resource} is served by DeviceClass {device_class} through DRA on nodes that publish none "
    "of it, which muster does not allocate yet (ask for it with a ResourceClaim)"
)

# A pod that tolerates this taint may go on a cordoned node (as with DaemonSets).
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
# The node lifecycle controller taints a NotReady node with this; muster
# applies it from the Ready condition too, so it does not wait for the taint.
NOT_READY_TAINT = Taint("node.kubernetes.io/not-ready", "", "NoSchedule")

_NODE_UNSCHEDULABLE = unresolvable(REASON_UNSCHEDULABLE)
_AFFINITY_MISMATCH = unresolvable(REASON_AFFINITY)
_PORTS_TAKEN = unschedulable(REASON_PORTS)


class PredicatesPlugin(Plugin[PredicatesArguments]):
    """Filters nodes by conditions, taints, node affinity, ports, pod count, resources,
    (for pods with claims) storage and (for pods with ResourceClaims) devices."""

    name = "predicates"
    _storage = StorageFilters(NO_STORAGE, {}, PredicatesArguments.model_validate({}))
    _pods = PodTopology(ClusterSnapshot())
    _devices = DynamicResources(ClusterSnapshot(), {}, [])
    # Extended resource names DeviceClasses serve, with the class (set per session).
    _extended: Mapping[str, str] = MappingProxyType({})

    def on_session_open(self, session: Session, state: CycleState) -> None:
        """Storage filters over the session's PVCs, PVs, StorageClasses and CSINodes."""
        self._storage = StorageFilters(session.snapshot.storage, session.nodes, self.arguments)
        args = self.arguments
        self._pods = PodTopology(
            session.snapshot,
            affinity=args.pod_affinity_enable,
            spread=args.pod_topology_spread_enable,
        )
        state.spread_domains = self._pods.spread
        self._extended = extended_resources(session.snapshot.devices.classes.values())
        devices = DynamicResources(session.snapshot, session.active_jobs, session.node_list)
        if devices:
            devices.prepare()
            self._devices = devices
            state.devices = devices
            state.holds.devices = devices

    def on_session_close(self, session: Session, state: CycleState) -> None:
        """Hand each bind the PreBind of its pod's claims (the binder applies it)."""
        result = session.result
        result.binds[:] = self._storage.with_claim_bindings(result.binds)
        if self._devices:
            result.binds[:] = self._devices.with_devices(result.binds)
            for task, words in self._devices.shortages().items():
                session.record_devices(task, words)

    def on_allocate(self, task: TaskInfo) -> None:
        """A placed pod with claims takes the volumes its node offers, and the devices of
        its ResourceClaims."""
        if task.placement.claims:
            self._storage.allocate(task)
        if self._pods.pods is not None:  # only in sessions with pod-to-pod terms
            self._pods.placed(task)
        if task.devices is not None:
            self._devices.placed(task)

    def on_deallocate(self, task: TaskInfo) -> None:
        """An undone placement gives its volumes and devices back (an evicted pod, the
        devices of its claims no staying pod uses)."""
        if task.placement.claims:
            self._storage.deallocate(task)
        self._pods.unplaced(task)
        if task.devices is not None:
            self._devices.unplaced(task)

    def job_valid(self, job: JobInfo) -> Waiting | None:
        """A gang that members whose claims muster refuses (a field of a claim it does not
        honour) leave short of minMember waits whole, naming the field, as the gang plugin
        says of a pod whose spec muster refuses."""
        if not self._devices:
            return None
        refused = self._devices.refused(job)
        if refused is None:
            return None
        first, words, count = refused
        live = len(job.tasks) - job.count(TaskStatus.FAILED)
        if live - count >= job.min_member:
            return None
        return Waiting(FIELD_NOT_HONOURED, f"pod {first.key}: {words}")

    def on_commit(self, tasks: list[TaskInfo]) -> None:
        """A committed statement's pods with ResourceClaims: their devices are decided."""
        if self._devices:
            self._devices.committed(tasks)

    def __init__(self, arguments: PredicatesArguments | Mapping[str, Any] | None = None) -> None:
        super().__init__(arguments)
        args = self.arguments
        # Volcano's switches, one per kube-scheduler filter: off turns the filter off.
        self._taints = args.taint_toleration_enable
        self._node_affinity = args.node_affinity_enable
        self._ports = args.node_ports_enable

    def unused_points(self) -> frozenset[str]:
        """The VolumeBinding score needs a volumebinding.shape (as in kube-scheduler
        without StorageCapacityScoring, there is none by default)."""
        args = self.arguments
        if args.volume_binding_shape and args.volume_binding_weight:
            return frozenset()
        return frozenset({"node_score"})

    def node_admits(self, task: TaskInfo, node: NodeInfo) -> Status:
        """Static filters: cordon, taints (and NotReady), nodeSelector and required affinity."""
        placement = task.placement
        tolerations = placement.tolerations
        if node.unschedulable and not tolerated(tolerations, UNSCHEDULABLE_TAINT):
            return _NODE_UNSCHEDULABLE
        # A node that is not Ready is never used, whatever predicate.TaintTolerationEnable
        # says (Volcano leaves such nodes out of its sessions).
        taint = first_untolerated(node.taints, tolerations) if self._taints else None
        if taint is None and not node.ready:
            taint = first_untolerated((NOT_READY_TAINT,), tolerations)
        if taint is not None:
            return unresolvable(REASON_TAINT.format(taint=taint))
        if self._node_affinity and not required_affinity_matches(placement, node):
            return _AFFINITY_MISMATCH
        if placement.claims:
            return self._storage.admits(task, node)
        return OK

    def node_fits(self, task: TaskInfo, node: NodeInfo) -> Status:
        """Dynamic filters: host ports, then pod count and resources (now or once released)."""
        ports = task.placement.host_ports
        if ports and self._ports and node.used_ports and _ports_conflict(task, node):
            return _PORTS_TAKEN
        if node.pod_count < node.max_pods and task.node_request.fits_in(node.idle):
            verdict = self._storage.fits(task, node) if task.placement.claims else OK
        else:
            verdict = _resource_verdict(task, node, self._extended)
            if verdict.ok and task.placement.claims:
                verdict = self._storage.fits(task, node)
        if verdict.ok and self._pods.pods is not None:
            # PodTopologySpread and InterPodAffinity, only in sessions that use them.
            verdict = self._pods.filter(task, node)
        if verdict.ok and task.devices is not None:
            return self._devices.fits(task, node)
        return verdict

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """VolumeBinding's score, for pods with claims (volumebinding.weight and .shape)."""
        if not task.placement.claims:
            return 0.0
        return self._storage.score(task, node)


def _ports_conflict(task: TaskInfo, node: NodeInfo) -> bool:
    used = node.used_ports
    return any(port.conflicts_with(taken) for port in task.placement.host_ports for taken in used)


def extended_resources(classes: Iterable[dra.DeviceClass]) -> dict[str, str]:
    """The extended resource names DeviceClasses serve (each class's extendedResourceName and
    its implicit deviceclass.resource.kubernetes.io/<name>), with the class: on a name two
    classes give, the newest class, then the first by name (kube-scheduler's rule)."""
    found: dict[str, tuple[str, str]] = {}
    for device_class in classes:
        meta = device_class.metadata
        rank = (meta.creation_timestamp or "", meta.name)
        names = [dra.IMPLICIT_EXTENDED_RESOURCE_PREFIX + meta.name]
        if device_class.spec.extended_resource_name:
            names.append(device_class.spec.extended_resource_name)
        for name in names:
            known = found.get(name)
            # Newest wins; among equals, the smaller name.
            if known is None or (rank[0], known[1]) > (known[0], rank[1]):
                found[name] = rank
    return {name: rank[1] for name, rank in found.items()}


def _resource_verdict(task: TaskInfo, node: NodeInfo, extended: Mapping[str, str]) -> Status:
    """The slow path: pipelining onto releasing resources, or kube-scheduler's reasons."""
    request = task.node_request
    too_many_pods = node.pod_count + 1 > node.max_pods
    available = node.idle
    if not node.releasing.is_empty():
        # Resources of pods being deleted come back soon: the framework
        # pipelines the task onto them instead of allocating now.
        # Pod slots come back with them too (and pipelined pods take theirs).
        available = node.future_idle()
        if node.future_pod_count() + 1 <= node.max_pods and request.fits_in(available):
            return OK
    reasons = [REASON_TOO_MANY_PODS] if too_many_pods else []
    served = False
    for name in request.insufficient(available):
        if is_device_count(name):
            continue
        device_class = extended.get(name)
        if device_class is not None and node.allocatable.get(name) <= 0:
            served = True
            reasons.append(REASON_EXTENDED_BY_DRA.format(resource=name, device_class=device_class))
        else:
            reasons.append(REASON_INSUFFICIENT.format(resource=name))
    if served and not too_many_pods and len(reasons) == 1:
        return unresolvable(*reasons)
    return unschedulable(*reasons)
