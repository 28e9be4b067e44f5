"""PodDisruptionBudgets as eviction planning reads them (policy/v1).

preempt and reclaim evict through the Eviction API, which refuses (429) an eviction that a
budget does not allow; planning reads the same figures first, so that no gang's decision
is refused half-way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.api import wire
from scheduler.api.selectors import LabelSelector, label_selector


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """A PodDisruptionBudget as eviction planning reads it: which pods it covers and how
    many of them may go now (status.disruptionsAllowed, as the disruption controller last
    computed it; 0 until it has processed the budget's spec)."""

    namespace: str
    name: str
    # None: a budget with no selector covers no pod (policy/v1).
    selector: LabelSelector | None
    allowed: int
    # Whether the disruption controller has computed the status for the current spec
    # (status.observedGeneration >= metadata.generation): the Eviction API refuses every
    # eviction a budget covers until it has.
    processed: bool

    @property
    def key(self) -> str:
        """namespace/name."""
        return f"{self.namespace}/{self.name}"

    def covers(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Whether a pod in `namespace` with `labels` is one the budget counts."""
        return (
            namespace == self.namespace
            and self.selector is not None
            and self.selector.matches(labels)
        )

    def why_not(self) -> str:
        """Why the budget lets no pod go now ("" when it lets some)."""
        if not self.processed:
            return (
                f"PodDisruptionBudget {self.key} has not been processed by the disruption "
                "controller (status.observedGeneration is behind metadata.generation: is "
                "kube-controller-manager running?), so the Eviction API refuses its pods"
            )
        if self.allowed <= 0:
            return f"PodDisruptionBudget {self.key} allows no disruption now"
        return ""


def budget_from_wire(pdb: wire.PodDisruptionBudget) -> DisruptionBudget:
    """The record of a PodDisruptionBudget."""
    meta = pdb.metadata
    status = pdb.status
    selector = pdb.spec.selector
    return DisruptionBudget(
        namespace=meta.namespace,
        name=meta.name,
        selector=label_selector(selector) if selector is not None else None,
        allowed=status.disruptions_allowed,
        processed=status.observed_generation >= max(meta.generation, 1),
    )
