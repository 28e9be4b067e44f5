"""sim's disruption controller: kube-controller-manager's, which computes each
PodDisruptionBudget's status from the pods it selects (the Eviction API's check that reads
it is apiserver/budgets.py).

The controller (on by default; `--no-disruption-controller` turns it off, as on a
cluster whose kube-controller-manager does not run) sets `expectedPods`,
`currentHealthy` (Ready pods not being deleted nor just evicted), `desiredHealthy` (from
`minAvailable`, or `expectedPods - maxUnavailable`, integers or percentages rounded up),
`disruptionsAllowed` (none while it expects no pod: with `maxUnavailable` or a percentage
it expects only pods that have a controller), `observedGeneration` and the
DisruptionAllowed condition, anew on every event of a pod in the budget's namespace and
on every change of its spec.
"""

from __future__ import annotations

import math
from typing import Any

from muster_sim.apiserver.budgets import disruption_allowed, pod_ready
from muster_sim.apiserver.resources import PDBS, PODS
from muster_sim.apiserver.store import Event, Store, name_of, namespace_of
from muster_sim.selectors import label_selector_matches

Obj = dict[str, Any]


class DisruptionController:
    """Keeps every PodDisruptionBudget's status as the disruption controller would."""

    def __init__(self, store: Store) -> None:
        self.store = store
        store.listen(PODS, self._on_pod)
        store.listen(PDBS, self._on_budget)

    def _on_pod(self, event: Event) -> None:
        # PDBs are rare and pods are not: each pod event recounts its namespace's budgets.
        for pdb in self.store.items(PDBS, event.namespace):
            self.refresh(pdb)

    def _on_budget(self, event: Event) -> None:
        if event.type != "DELETED":
            self.refresh(event.obj)

    def refresh(self, pdb: Obj) -> None:
        """Write the budget's status if it changed."""
        healthy, desired, expected, disrupted = counts(self.store, pdb)
        # kube's controller allows nothing while it expects no pod at all.
        allowed = max(0, healthy - desired) if expected > 0 else 0
        generation = pdb["metadata"].get("generation", 1)
        old = dict(pdb.get("status") or {})
        condition = disruption_allowed(allowed, generation, old)
        status: Obj = {
            "observedGeneration": generation,
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "conditions": [condition],
        }
        if disrupted:
            status["disruptedPods"] = disrupted
        if old == status:
            return
        new = dict(pdb)
        new["metadata"] = dict(pdb["metadata"])
        new["status"] = status
        self.store.put(PDBS, new, "MODIFIED")


def _selected(store: Store, pdb: Obj) -> list[Obj]:
    selector = (pdb.get("spec") or {}).get("selector")
    if selector is None:
        return []
    return [
        p
        for p in store.items(PODS, namespace_of(pdb))
        if label_selector_matches(selector, p["metadata"].get("labels") or {})
    ]


def counts(store: Store, pdb: Obj) -> tuple[int, int, int, dict[str, str]]:
    """(currentHealthy, desiredHealthy, expectedPods, disruptedPods) of a budget now."""
    spec = pdb.get("spec") or {}
    pods = _selected(store, pdb)
    # Pods evicted whose deletion has not shown yet stay out of the healthy count.
    recorded = (pdb.get("status") or {}).get("disruptedPods") or {}
    disrupted = {
        name_of(p): recorded[name_of(p)]
        for p in pods
        if name_of(p) in recorded and not p["metadata"].get("deletionTimestamp")
    }
    minimum = spec.get("minAvailable")
    if "maxUnavailable" in spec or (isinstance(minimum, str) and minimum.endswith("%")):
        # The controller reads these pods' expected count from their controllers' scale:
        # a pod with no controller is not expected (sim counts each controller's pods).
        expected = sum(
            1
            for p in pods
            if any(ref.get("controller") for ref in p["metadata"].get("ownerReferences") or [])
        )
    else:
        expected = len(pods)
    healthy = sum(
        1
        for p in pods
        if pod_ready(p)
        and not p["metadata"].get("deletionTimestamp")
        and name_of(p) not in disrupted
    )
    if minimum is not None:
        desired = scaled(minimum, expected)
    elif "maxUnavailable" in spec:
        desired = max(0, expected - scaled(spec["maxUnavailable"], expected))
    else:
        desired = 0
    return healthy, desired, expected, disrupted


def scaled(value: Any, total: int) -> int:
    """An IntOrString budget figure: an integer, or a percentage of `total` rounded up."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(total * int(value[:-1]) / 100)
    return int(value)
