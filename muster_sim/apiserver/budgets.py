"""The Eviction API's PodDisruptionBudget check, as kube-apiserver makes it, reading the
status the disruption controller (cluster/disruption.py) writes.

A budget whose status is behind its generation refuses with "still being processed"; one
that allows no disruption refuses with its healthy counts; else its `disruptionsAllowed` is
decremented and the pod is recorded in `disruptedPods` (not on a dry run). A pod may be
covered by one budget at most.
"""

from __future__ import annotations

from typing import Any

from muster_sim.apiserver.resources import PDBS
from muster_sim.apiserver.store import Store, name_of, namespace_of
from muster_sim.errors import ApiError, forbidden, internal_error, too_many_requests
from muster_sim.selectors import label_selector_matches
from muster_sim.timestamps import now_rfc3339

Obj = dict[str, Any]

# kube-apiserver's words for a refused eviction (pkg/registry/core/pod/storage/eviction.go).
REFUSED = "Cannot evict pod as it would violate the pod's disruption budget."
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"


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
        charged["conditions"] = [disruption_allowed(0, generation, status)]
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


def refused(cause: str) -> ApiError:
    """The Eviction API's 429 for a budget's refusal, with its cause."""
    return too_many_requests(
        REFUSED,
        retry_after=0,
        details={"causes": [{"reason": DISRUPTION_BUDGET_CAUSE, "message": cause}]},
    )


def disruption_allowed(allowed: int, generation: int, old: Obj) -> Obj:
    """A budget's DisruptionAllowed condition for `allowed` disruptions, its transition time
    kept from `old` (the budget's status) while its status stays."""
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


def _since(old: Obj, status: str) -> str:
    previous = next(
        (c for c in old.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None
    )
    if previous is not None and previous.get("status") == status:
        return str(previous["lastTransitionTime"])
    return now_rfc3339()
