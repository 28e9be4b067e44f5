"""DynamicResources: kube-scheduler's filter for pods with ResourceClaims (DRA), over the joint
allocator of scheduler/dra, so that a gang's members get their devices together.

The predicates plugin makes one per session (Volcano 1.15 runs DRA inside `predicates`) from
the snapshot's DeviceView; its allocator is built the first time a pod with claims is
asked about, so a session with none pays nothing.

- **Before any node** (`pod_problem`): what keeps the pod from every node now, in
  kube-scheduler's words: a template's claim not made yet, a claim missing or being deleted
  or not the pod's own (its PreEnqueue), a claim another gang is allocating or a class
  that does not exist (its PreFilter), and what muster refuses by name.
- **Per node** (`fits`): the allocator's answer, as kube-scheduler's status ("cannot allocate
  all claims", "resourceclaim not available on the node", "invalid resource pools were
  encountered"); muster's words (which claim, request, class, how many devices match and
  are free) are kept for `muster explain` (`detail`). A yes that needs devices of pods
  being evicted or deleted (`later`) only pipelines the pod: no pod is bound to devices a
  claim still holds on the API server.
- **As the Statement moves pods** (`placed`, `unplaced`, `committed`): a placement takes the
  pod's devices tentatively, an undone one gives them back (so a discarded statement frees
  them, and a later member of the gang may have an earlier one's re-assigned), an eviction
  frees the devices of the claims no staying pod uses; a commit makes them the gang's for
  the rest of the session and keeps each claim's AllocationResult for the binds
  (`with_devices`).

A claim the API server holds allocated for pods of ours that were never bound (a leader died
between the claim's write and the binding, or the binding failed) is stale: its gang may
reuse it where its pod lands within reach, or allocate it again (the bind then replaces the
old allocation); until then it holds its devices against every other gang.

Pods whose claims every node answers alike share a node picker shape: each pending pod gets,
in the session's copy, a placement naming what tells its claims apart (`prepare`): a fresh
claim by its spec (a gang's claims made from one template are alike), any other by its key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from scheduler.api import dra
from scheduler.api.job import JobInfo
from scheduler.api.node import NodeInfo
from scheduler.api.placement import PodPlacementSpec
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TERMINAL_STATUSES, TaskInfo, TaskStatus
from scheduler.dra import (
    CANNOT_ALLOCATE,
    DeviceAllocator,
    DeviceFit,
    DeviceMemo,
    SelectorMemo,
    Verdict,
)
from scheduler.dra.requests import ClaimSpecs
from scheduler.framework.decisions import Bind, DeviceBind, DeviceClaimBinding
from scheduler.framework.status import OK, Status, unresolvable, unschedulable

_PLACED = frozenset({TaskStatus.ALLOCATED, TaskStatus.PIPELINED})
# kube-scheduler's PreEnqueue reasons: the pod waits for its claims, it does not fail a node.
_WAITING_PREFIXES = ("pod ", "could not find ResourceClaim", "resourceclaim ", "ResourceClaim ")


class DynamicResources:
    """The devices of one session, as kube-scheduler's DynamicResources plugin filters
    nodes for pods with claims, allocated gang by gang."""

    def __init__(
        self, snapshot: ClusterSnapshot, jobs: Mapping[str, JobInfo], nodes: Sequence[NodeInfo]
    ) -> None:
        self.snapshot = snapshot
        self.view = snapshot.devices
        self.jobs = jobs
        self.nodes = nodes
        # Every pod with claims the session sees, placed or pending, by uid.
        self.tasks: dict[str, TaskInfo] = {}
        for node in nodes:
            for task in node.tasks.values():
                if task.devices is not None:
                    self.tasks[task.uid] = task
        # The gangs with a pod with claims.
        self.gangs: set[str] = set()
        for job in jobs.values():
            for task in job.tasks.values():
                if task.devices is not None:
                    self.tasks.setdefault(task.uid, task)
                    self.gangs.add(job.key)
        self._allocator: DeviceAllocator | None = None
        # The AllocationResult of each claim a committed statement allocated.
        self._results: dict[str, dra.AllocationResult] = {}
        # muster's words for the last refusal of a pod on each node (uid -> node -> words).
        self._details: dict[str, dict[str, str]] = {}

    def __bool__(self) -> bool:
        """Whether any pod of the session has claims."""
        return bool(self.tasks)

    # Session open -------------------------------------------------------------------------

    def prepare(self) -> None:
        """Give each pending pod with claims a placement naming what tells its claims apart
        (the module docstring): pods of one shape get one answer from every node."""
        users: dict[str, int] = {}
        for task in self.tasks.values():
            devices = task.devices
            if devices is not None:
                for key in devices.claims:
                    users[key] = users.get(key, 0) + 1
        placements: dict[tuple[PodPlacementSpec, tuple[str, ...]], PodPlacementSpec] = {}
        memo = self.view.memo
        specs = memo.specs if isinstance(memo, DeviceMemo) else ClaimSpecs()
        for task in self.tasks.values():
            if task.status is not TaskStatus.PENDING or task.job not in self.jobs:
                continue
            signature = self._signature(task, users, specs)
            shared = (task.placement, signature)
            placement = placements.get(shared)
            if placement is None:
                placement = placements[shared] = replace(task.placement, devices=signature)
            task.placement = placement

    def _signature(
        self, task: TaskInfo, users: Mapping[str, int], specs: ClaimSpecs
    ) -> tuple[str, ...]:
        devices = task.devices
        assert devices is not None
        if devices.waiting is not None:
            return (f"waiting {task.uid}",)
        claims = self.view.claims
        found: list[str] = []
        for key in devices.claims:
            claim = claims.get(key)
            fresh = (
                claim is not None
                and claim.status.allocation is None
                and not claim.status.reserved_for
                and claim.metadata.deletion_timestamp is None
                and users.get(key, 0) == 1
            )
            if claim is None or not fresh:
                found.append(f"claim {key}")
            else:
                found.append(specs.text(key, claim))
        return tuple(found)

    # Before any node ------------------------------------------------------------------------

    def pod_problem(self, task: TaskInfo, nodes: int) -> str | None:
        """Why the pod's claims keep it off every node now, as its condition says it (a
        wait in kube-scheduler's PreEnqueue words; a refusal as its FitError), or None."""
        devices = task.devices
        if devices is None:
            return None
        fit = self.allocator.pod_problem(devices, task.job)
        if fit is None:
            return None
        if fit.verdict is Verdict.POD and fit.reason.startswith(_WAITING_PREFIXES):
            return fit.reason
        return f"0/{nodes} nodes are available: {fit.reason}."

    def refused(self, job: JobInfo) -> tuple[TaskInfo, str, int] | None:
        """The first pending member (by name) whose claims muster refuses (a field of a claim
        it does not honour), with the words, and how many members are refused; None for
        none. Each such member's message names its refusal (job.fit_errors)."""
        if job.key not in self.gangs or not self.allocator.refusals:
            return None
        allocator = self.allocator
        found: list[tuple[TaskInfo, str]] = []
        for task in job.tasks_in(TaskStatus.PENDING):
            devices = task.devices
            if devices is None or not allocator.may_refuse(devices):
                continue
            fit = allocator.pod_problem(devices, task.job)
            if fit is not None and fit.verdict is Verdict.REFUSED:
                found.append((task, fit.reason))
                job.fit_errors[task.uid] = fit.reason
        if not found:
            return None
        first, words = min(found, key=lambda item: item[0].name)
        return first, words, len(found)

    # Per node -------------------------------------------------------------------------------

    def fits(self, task: TaskInfo, node: NodeInfo) -> Status:
        """Whether the pod's claims can be allocated for it on the node now (or once pods
        being evicted there let their devices go)."""
        devices = task.devices
        if devices is None:
            return OK
        fit = self.allocator.fits(devices, node.name, task.job)
        if fit.fits:
            return OK
        if fit.detail:
            self._details.setdefault(task.uid, {})[node.name] = fit.detail
        return _status(fit)

    def later(self, task: TaskInfo, node: NodeInfo) -> bool:
        """Whether the pod fits the node's devices only once pods leaving it let theirs go:
        it may be pipelined there, not bound (asked after `fits` said yes)."""
        devices = task.devices
        return devices is not None and self.allocator.later(devices, node.name, task.job)

    def fits_without(self, task: TaskInfo, node: NodeInfo, leaving: Iterable[TaskInfo]) -> bool:
        """Whether the pod's claims could be allocated on the node were `leaving` evicted
        (preemption's question: only claims no staying pod uses free their devices)."""
        devices = task.devices
        if devices is None:
            return True
        allocator = self.allocator
        gone = [pod.devices for pod in leaving if pod.devices is not None]
        for pod in gone:
            allocator.release(pod)
        try:
            return allocator.fits(devices, node.name, task.job).fits
        finally:
            for pod in reversed(gone):
                allocator.unrelease(pod)

    def could_fit(self, task: TaskInfo, node: NodeInfo) -> bool:
        """Whether the node has devices enough for the pod were every device of it free
        (where a starving gang's members are laid out)."""
        devices = task.devices
        return devices is None or self.allocator.could_fit(devices, node.name)

    def hold(self, task: TaskInfo, node: NodeInfo) -> bool:
        """Take, for a starving gang's member laid out on the node, the devices its claims
        would take there now, if they fit (framework/holds.py)."""
        devices = task.devices
        return devices is not None and self.allocator.take_if_fits(devices, node.name, task.job)

    def unhold(self, task: TaskInfo) -> None:
        """Give back what `hold` took."""
        if task.devices is not None:
            self.allocator.give_back(task.devices)

    def shortages(self, shown: int = 3) -> dict[TaskInfo, list[str]]:
        """For each pod still pending whose claims some node refused: muster's words on the
        first `shown` of those nodes (by name), and how many more refused it. (Of a gang's
        members alike, the node picker asks the one it could not place.)"""
        found: dict[TaskInfo, list[str]] = {}
        for task in self.tasks.values():
            details = self._details.get(task.uid)
            if task.status is not TaskStatus.PENDING or not details:
                continue
            names = sorted(details)
            lines = [details[name] for name in names[:shown]]
            if len(names) > shown:
                rest = len(names) - shown
                lines.append(f"and {rest} more {'node' if rest == 1 else 'nodes'}")
            found[task] = lines
        return found

    # As the Statement moves pods ------------------------------------------------------------

    def placed(self, task: TaskInfo) -> None:
        """The pod was placed (it takes its devices), or an eviction of it was undone (its
        devices are held again)."""
        devices = task.devices
        if devices is None:
            return
        allocator = self.allocator
        if task.status in _PLACED:
            allocator.take_if_fits(devices, task.node_name, task.job)
        else:
            allocator.unrelease(devices)

    def unplaced(self, task: TaskInfo) -> None:
        """The pod's placement was undone (its devices are given back), or it is evicted
        (the devices of its claims no staying pod uses are freed)."""
        devices = task.devices
        if devices is None:
            return
        if task.status is TaskStatus.RELEASING:
            self.allocator.release(devices)
        else:
            self.allocator.give_back(devices)

    def committed(self, tasks: Iterable[TaskInfo]) -> None:
        """A statement committed these pods: their gangs' claims are allocated for the rest
        of the session."""
        by_gang: dict[str, set[str]] = {}
        for task in tasks:
            if task.devices is not None:
                by_gang.setdefault(task.job, set()).add(task.key)
        for gang, pods in by_gang.items():
            self._results.update(self.allocator.commit(gang, pods))

    def with_devices(self, binds: list[Bind]) -> list[Bind]:
        """The session's binds, each of a pod with claims carrying the PreBind of its claims:
        the allocation of those this session allocated, and the reservation of every one."""
        if self._allocator is None:
            return binds
        # The allocator's claims: what with_devices reads of them decoded, read natively.
        claims = self._allocator.claims
        stale = self._allocator.stale
        results = self._results
        out: list[Bind] = []
        for bind in binds:
            task = self.tasks.get(bind.uid)
            devices = task.devices if task is not None else None
            if devices is None:
                out.append(bind)
                continue
            written = []
            for key in devices.claims:
                claim = claims.get(key)
                allocation = results.get(key)
                if claim is None:
                    namespace, name = key.split("/", 1)
                    uid, held = "", None
                else:
                    namespace, name, uid = claim.namespace, claim.name, claim.uid
                    held = claim.allocation
                written.append(
                    DeviceClaimBinding(
                        namespace,
                        name,
                        uid,
                        allocation,
                        key in stale and allocation is not None and allocation != held,
                    )
                )
            out.append(
                DeviceBind(
                    bind.namespace,
                    bind.name,
                    bind.uid,
                    bind.node,
                    bind.job,
                    bind.claims,
                    bind.claims_timeout,
                    devices=tuple(written),
                )
            )
        return out

    # The allocator ----------------------------------------------------------------------------

    @property
    def allocator(self) -> DeviceAllocator:
        """The session's allocator, built when first asked."""
        if self._allocator is None:
            self._allocator = self._build()
        return self._allocator

    def _build(self) -> DeviceAllocator:
        view = self.view
        memo = view.memo if isinstance(view.memo, SelectorMemo) else None
        allocator = DeviceAllocator(
            view.classes.values(),
            view.slices.values(),
            view.claims.values(),
            {node.name: node.labels for node in self.nodes},
            memo=memo,
            namespaces=self.snapshot.namespaces,
            stale=self._stale(),
        )
        # Pods being evicted or deleted: their devices come free once they are gone.
        for task in self.tasks.values():
            if task.status is TaskStatus.RELEASING and task.devices is not None:
                allocator.release(task.devices)
        return allocator

    def _stale(self) -> dict[str, str]:
        """Claims allocated on the API server whose reservations name only pods of ours that
        wait for a node (or none), by the gang of such a pod (the module docstring)."""
        waiting: dict[str, TaskInfo] = {}
        claims = self.view.claims
        allocated = False
        for task in self.tasks.values():
            if task.status is TaskStatus.PENDING and task.job in self.jobs:
                waiting[task.uid] = task
                devices = task.devices
                assert devices is not None
                for key in devices.claims:
                    claim = claims.get(key)
                    allocated = allocated or (
                        claim is not None and claim.status.allocation is not None
                    )
        if not allocated:
            # No waiting pod's claim is allocated: none is stale.
            return {}
        in_use = {
            key
            for task in self.tasks.values()
            if task.devices is not None
            and task.node_name
            and task.status is not TaskStatus.PENDING
            and task.status not in TERMINAL_STATUSES
            for key in task.devices.claims
        }
        found: dict[str, str] = {}
        for task in waiting.values():
            devices = task.devices
            assert devices is not None
            for key in devices.claims:
                claim = self.view.claims.get(key)
                if claim is None or claim.status.allocation is None or key in found:
                    continue
                reserved = {ref.uid for ref in claim.status.reserved_for}
                if reserved <= waiting.keys() and key not in in_use:
                    found[key] = task.job
        return found


def _status(fit: DeviceFit) -> Status:
    """kube-scheduler's status for a refusal. Its DynamicResources plugin calls them all
    unresolvable; muster's preemption can free devices, so "cannot allocate all claims"
    is one freeing resources may cure."""
    if fit.verdict is Verdict.NODE and fit.reason == CANNOT_ALLOCATE:
        return unschedulable(CANNOT_ALLOCATE)
    return unresolvable(fit.reason)
