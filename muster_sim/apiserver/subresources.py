"""The pod subresources that are writes of their own: pods/binding (a scheduler's bind) and
pods/eviction (the Eviction API, which asks the pod's PodDisruptionBudget first)."""

from __future__ import annotations

from typing import Any

from muster_sim.apiserver.budgets import budgets_of, check_eviction
from muster_sim.apiserver.deletion import Deletion
from muster_sim.apiserver.options import DeleteOptions
from muster_sim.apiserver.resources import PODS, Registry
from muster_sim.apiserver.store import Store, clone
from muster_sim.errors import FieldError, bad_request, conflict, invalid, not_found
from muster_sim.timestamps import now_rfc3339

Obj = dict[str, Any]

# Phases in which a pod is evicted without asking its budget (kube's canIgnorePDB).
_NO_BUDGET_PHASES = ("Succeeded", "Failed", "Pending")


class Subresources:
    """Binds and evicts pods as kube-apiserver's pod subresources do."""

    def __init__(self, store: Store, registry: Registry, deletion: Deletion) -> None:
        self.store = store
        self.registry = registry
        self.deletion = deletion

    def bind(self, namespace: str, name: str, body: Any) -> None:
        """pods/binding: set spec.nodeName and PodScheduled=True; 409 if already bound."""
        if not isinstance(body, dict):
            raise bad_request("Binding body must be a JSON object")
        target = body.get("target") or {}
        node = target.get("name")
        if not node:
            raise invalid(
                "",
                "Binding",
                name,
                [FieldError("target.name", "Required value", "FieldValueRequired")],
            )
        pod = self.store.get(PODS, namespace, name)
        if pod is None:
            raise not_found("", PODS, name)
        uid = (body.get("metadata") or {}).get("uid")
        if uid and uid != pod["metadata"]["uid"]:
            raise conflict(
                "",
                "pods/binding",
                name,
                f"Precondition failed: UID in precondition: {uid}, UID in object "
                f"meta: {pod['metadata']['uid']}",
            )
        spec = pod["spec"]
        if pod["metadata"].get("deletionTimestamp"):
            raise conflict(
                "",
                "pods/binding",
                name,
                f"pod {name} is being deleted, cannot be assigned to a host",
            )
        if spec.get("nodeName"):
            raise conflict(
                "",
                "pods/binding",
                name,
                f'pod {name} is already assigned to node "{spec["nodeName"]}"',
            )
        # shallow copies of the parts that change: the old object stays intact for history
        new = dict(pod)
        new["metadata"] = dict(pod["metadata"])
        annotations = (body.get("metadata") or {}).get("annotations")
        if annotations:
            new["metadata"]["annotations"] = {
                **(pod["metadata"].get("annotations") or {}),
                **annotations,
            }
        new["spec"] = dict(spec, nodeName=node)
        status = dict(pod.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": now_rfc3339(),
            }
        )
        status["conditions"] = conditions
        new["status"] = status
        self.store.put(PODS, new, "MODIFIED")

    def evict(self, namespace: str, name: str, body: Any, *, dry_run: bool = False) -> None:
        """pods/eviction as kube-apiserver serves it: a pod that is Pending, finished or
        being deleted goes at once; else its PodDisruptionBudget (at most one) must allow
        it (budgets.py), the pod gets the DisruptionTarget condition and is deleted
        gracefully. `dry_run` (the query's or deleteOptions' dryRun=All) checks only."""
        pod = self.store.get(PODS, namespace, name)
        if pod is None:
            raise not_found("", PODS, name)
        body = body if isinstance(body, dict) else {}
        raw_options = body.get("deleteOptions") or {}
        dry_run = dry_run or raw_options.get("dryRun") == ["All"]
        options = DeleteOptions.from_body(raw_options, {})
        phase = (pod.get("status") or {}).get("phase")
        if not (pod["metadata"].get("deletionTimestamp") or phase in _NO_BUDGET_PHASES):
            for pdb in budgets_of(self.store, pod):
                check_eviction(self.store, pod, pdb, dry_run=dry_run)
            if not dry_run:
                self._mark_disruption_target(pod)
        if dry_run:
            if options.uid is not None and options.uid != pod["metadata"]["uid"]:
                # what the delete would answer: its precondition fails
                raise conflict(
                    "",
                    PODS,
                    name,
                    f"Precondition failed: UID in precondition: {options.uid}, UID in object "
                    f"meta: {pod['metadata']['uid']}",
                )
            return
        self.deletion.delete(self.registry.kind("", "v1", PODS), namespace, name, options)

    def _mark_disruption_target(self, pod: Obj) -> None:
        # As kube-apiserver since PodDisruptionConditions: the owner learns why it goes.
        new = clone(pod)
        status = new.setdefault("status", {})
        conditions = [
            c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"
        ]
        conditions.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting",
                "lastProbeTime": None,
                "lastTransitionTime": now_rfc3339(),
            }
        )
        status["conditions"] = conditions
        self.store.put(PODS, new, "MODIFIED")
