"""Which running pods preempt and reclaim may take now, and why the others are spared.

A pod is spared when:
- its gang is partly bound (api/gang_state.py): allocate completes or undoes such a gang
  before any other is placed, and no other gang is given its room;
- it, or its PodGroup, says `volcano.sh/preemptable: "false"`;
- it started less than its minimum runtime ago: the action's own minimum
  (preempt's `preemptMinRuntime`, reclaim's `reclaimMinRuntime`) or the pod's
  `volcano.sh/cooldown-time`, whichever is longer;
- it runs and a PodDisruptionBudget covering it would go below zero: the Eviction API
  refuses (429) what the budget's `status.disruptionsAllowed` does not allow, counting
  the victims this session already chose; a budget the disruption controller has not
  processed allows none; a pod two budgets cover cannot be evicted at all. A pod bound
  but not started (phase Pending) is evicted whatever its budget says, as the Eviction
  API does.

The plugins' votes (priority, conformance, queue shares) come on top of these rules:
they apply whatever the config lists, as kube-scheduler's preemption honours budgets
without a plugin.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from scheduler.api.budgets import DisruptionBudget
from scheduler.api.gang_state import partly_bound
from scheduler.api.job import JobInfo
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.api.timestamps import parse_rfc3339
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.session import Session


@dataclass(slots=True)
class VictimGuard:
    """The protection rules for one eviction decision, with the budget figures it uses."""

    session: Session
    state: CycleState
    min_runtime: float = 0.0
    # Per budget key, the victims this decision chose so far (not yet committed).
    chosen: Counter[str] = field(default_factory=Counter)
    # Per reason a pod was spared, how many pods (for the preemptor's condition).
    spared: Counter[str] = field(default_factory=Counter)

    def spares(self, victim: TaskInfo, owner: JobInfo) -> str:
        """Why the pod may not be a victim at all now, or "" (budgets aside: see
        `budget_allows`)."""
        if partly_bound(owner):
            return f"PodGroup {owner.key} is partly bound: it is completed or undone first"
        if owner.settings.preemptable is False:
            return f"PodGroup {owner.key} says volcano.sh/preemptable: false"
        protection = victim.protection
        if not protection.preemptable:
            return "volcano.sh/preemptable is false on the pod"
        minimum = max(self.min_runtime, protection.cooldown)
        if minimum > 0:
            started = parse_rfc3339(victim.started)
            ran = self.session.snapshot.now - started if started is not None else 0.0
            if ran < minimum:
                return f"started {ran:.0f}s ago, under its minimum runtime of {minimum:g}s"
        if len(self._budgets(victim)) > 1:
            names = ", ".join(b.key for b in self._budgets(victim))
            return (
                f"more than one PodDisruptionBudget covers it ({names}), and the Eviction "
                "API evicts no such pod"
            )
        return ""

    def budget_allows(self, victims: Iterable[TaskInfo], also: Iterable[TaskInfo] = ()) -> str:
        """ "" when the budgets covering `victims` allow them on top of `also` (victims
        already picked for the same pod) and of this session's choices; else why not."""
        wanted: Counter[str] = Counter()
        budgets: dict[str, DisruptionBudget] = {}
        for victim in (*also, *victims):
            for budget in self._budgets(victim):
                wanted[budget.key] += 1
                budgets[budget.key] = budget
        ledger = self.state.disruptions
        for key, count in wanted.items():
            budget = budgets[key]
            refusal = budget.why_not()
            if refusal:
                return refusal
            if ledger.get(key, 0) + self.chosen[key] + count > budget.allowed:
                return f"PodDisruptionBudget {key} allows {budget.allowed} disruption(s) now"
        return ""

    def choose(self, victims: Iterable[TaskInfo]) -> None:
        """Count victims against their budgets (the decision takes them)."""
        for victim in victims:
            for budget in self._budgets(victim):
                self.chosen[budget.key] += 1

    def commit(self) -> None:
        """The decision was committed: its victims count for the rest of the session."""
        for key, count in self.chosen.items():
            self.state.disruptions[key] = self.state.disruptions.get(key, 0) + count
        self.chosen.clear()

    def spare(self, why: str) -> None:
        """Count a pod spared, by reason."""
        self.spared[why] += 1

    def summary(self) -> str:
        """Why pods were spared, for the preemptor's condition ("" when none were)."""
        parts = [f"{count} pod(s): {why}" for why, count in sorted(self.spared.items())]
        return "; ".join(parts)

    def _budgets(self, victim: TaskInfo) -> list[DisruptionBudget]:
        if victim.status is not TaskStatus.RUNNING:
            return []  # the Eviction API asks no budget of a pod that has not started
        return [
            budget
            for budget in self.session.snapshot.budgets.get(victim.namespace, ())
            if budget.covers(victim.namespace, victim.labels)
        ]
