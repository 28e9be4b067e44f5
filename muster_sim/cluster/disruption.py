"""sim's disruption controller: kube-controller-manager's, which computes each
PodDisruptionBudget's status from the pods it selects, and the Eviction subresource's
budget check, which reads that status as kube-apiserver does.

The controller (on by default; `--no-disruption-controller` turns it off, as on a
cluster whose kube-controller-manager does not run) sets `expectedPods`,
`currentHealthy` (Ready pods not being deleted nor just evicted), `desiredHealthy` (from
`minAvailable`, or `expectedPods - maxUnavailable`, integers or percentages rounded up),
`disruptionsAllowed` (none while it expects no pod: with `maxUnavailable` or a percentage
it expects only pods that have a controller), `observedGeneration` and the
DisruptionAllowed condition, anew on every event of a pod in the budget's namespace and
on every change of its spec.

The check (`check_eviction`) is kube-apiserver's: a budget whose status is behind its
generation refuses with "still being processed"; one that allows no disruption refuses
with its healthy counts; else its `disruptionsAllowed` is decremented and the pod is
recorded in `disruptedPods` (not on a dry run).
"""

from __future__ import annotations

import math
from typing import Any

from muster_sim.apiserver.store import Event, Store, name_of, namespace_of
from muster_sim.errors import ApiError, forbidden, internal_error, too_many_requests
from muster_sim.selectors import label_selector_matches
from muster_sim.timestamps import now_rfc3339

Obj = dict[str, Any]

PODS = "pods"
PDBS = "poddisruptionbudgets.policy"
# kube-apiserver's words for a refused eviction (pkg/registry/core/pod/storage/eviction.go).
REFUSED = "Cannot evict pod as it would violate the pod's disruption budget."
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"


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
        condition = _condition(allowed, generation, old)
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


def check_eviction(store: Store, pod: Obj, pdb: Obj, *, dry_run: bool) -> None:
    """kube-apiserver's budget check for evicting `pod`: an ApiError when the budget
    refuses; else the budget is charged (unless `dry_run`)."""
    status = pdb.get("status") or {}
    name = name_of(pdb)
    generation = pdb["metadata"].get("generation", 1)
    if status.get("observedGeneration", 0) < generation:
        raise refused(f"The disruption budget {name} is still being processed by the server.")
    allowed = status.get("disruptionsAllowed", 0)
    if allowed < 0:
        raise forbidden(
            "policy", "poddisruptionbudgets", name, "pdb disruptions allowed is negative"
        )
    # kube's IfHealthyBudget: an unhealthy pod may go while the budget is met, and costs
    # it nothing.
    if not pod_ready(pod) and status.get("currentHealthy", 0) >= status.get("desiredHealthy", 0):
        return
    if allowed == 0:
        raise refused(
            f"The disruption budget {name} needs {status.get('desiredHealthy', 0)} healthy "
            f"pods and has {status.get('currentHealthy', 0)} currently"
        )
    if dry_run:
        return
    new = dict(pdb)
    new["metadata"] = dict(pdb["metadata"])
    charged = dict(status)
    charged["disruptionsAllowed"] = allowed - 1
    charged["disruptedPods"] = {**(status.get("disruptedPods") or {}), name_of(pod): now_rfc3339()}
    if allowed - 1 == 0:
        charged["conditions"] = [_condition(0, generation, status)]
    new["status"] = charged
    store.put(PDBS, new, "MODIFIED")


def budgets_of(store: Store, pod: Obj) -> list[Obj]:
    """The budgets in the pod's namespace whose selector matches it; an InternalError when
    more than one does, as the Eviction API answers."""
    labels = pod["metadata"].get("labels") or {}
    found = [
        pdb
        for pdb in store.items(PDBS, namespace_of(pod))
        if (pdb.get("spec") or {}).get("selector") is not None
        and label_selector_matches(pdb["spec"]["selector"], labels)
    ]
    if len(found) > 1:
        raise internal_error(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource "
            "does not support."
        )
    return found


def pod_ready(pod: Obj) -> bool:
    """Whether the pod's Ready condition is True."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def scaled(value: Any, total: int) -> int:
    """An IntOrString budget figure: an integer, or a percentage of `total` rounded up."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(total * int(value[:-1]) / 100)
    return int(value)


def refused(cause: str) -> ApiError:
    """The Eviction API's 429 for a budget's refusal, with its cause."""
    return too_many_requests(
        REFUSED,
        retry_after=0,
        details={"causes": [{"reason": DISRUPTION_BUDGET_CAUSE, "message": cause}]},
    )


def _since(old: Obj, status: str) -> str:
    previous = next(
        (c for c in old.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None
    )
    if previous is not None and previous.get("status") == status:
        return str(previous["lastTransitionTime"])
    return now_rfc3339()


def _condition(allowed: int, generation: int, old: Obj) -> Obj:
    status = "True" if allowed > 0 else "False"
    since = _since(old, status)
    return {
        "type": "DisruptionAllowed",
        "status": status,
        "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
        "message": "",
        "observedGeneration": generation,
        "lastTransitionTime": since,
    }
