"""What preemption weighs besides pods: PriorityClasses (a pod's and a gang's priority)
and PodDisruptionBudgets (how many of a budget's pods may go now)."""

from __future__ import annotations

import msgspec

from scheduler.api.wire.common import LabelSelector, ObjectMeta, Wire


class PriorityClass(Wire):
    """A PriorityClass (scheduling.k8s.io/v1)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"


class PodDisruptionBudgetSpec(Wire):
    """policy/v1 PodDisruptionBudget spec, as eviction planning reads it (the figures come
    from the status, which the disruption controller computes)."""

    selector: LabelSelector | None = None


class PodDisruptionBudgetStatus(Wire):
    """policy/v1 PodDisruptionBudget status."""

    disruptions_allowed: int = 0
    observed_generation: int = 0


class PodDisruptionBudget(Wire):
    """A PodDisruptionBudget."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)
