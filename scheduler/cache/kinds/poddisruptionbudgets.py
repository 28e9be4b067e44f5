"""PodDisruptionBudgets, which preempt and reclaim plan their victims against.

The disruption controller writes a budget's status as pods come and go: a budget read again
with the same figures changes nothing; any other change unsettles every gang.
"""

from __future__ import annotations

from scheduler.api import wire
from scheduler.api.budgets import budget_from_wire
from scheduler.cache.kinds.base import Handler, namespaced
from scheduler.cache.world import World


def upsert(world: World, pdb: wire.PodDisruptionBudget) -> None:
    """A PodDisruptionBudget was added or changed (its status, mostly)."""
    key = namespaced(pdb)
    budget = budget_from_wire(pdb)
    if world.budgets.get(key) == budget:
        return
    world.cluster_changed()
    world.budgets.put(key, budget)


def delete(world: World, key: str) -> None:
    """A PodDisruptionBudget ("namespace/name") is gone."""
    if not world.budgets.remove(key):
        return
    world.cluster_changed()


HANDLER = Handler(
    "poddisruptionbudget",
    "/apis/policy/v1/poddisruptionbudgets",
    wire.PodDisruptionBudget,
    namespaced,
    upsert,
    delete,
)
