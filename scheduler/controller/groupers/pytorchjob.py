"""PyTorchJob (kubeflow.org/v1): a Kubeflow job whose workers may be elastic.

As the other Kubeflow jobs (groupers/kubeflow.py), minMember is
`spec.runPolicy.schedulingPolicy.minAvailable` when set. Otherwise an elastic job
(`spec.elasticPolicy.minReplicas`) starts with that many workers, plus its other replicas
(a Master, when it has one); a job that is not elastic needs every replica.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.controller.groupers.base import Grouping, Obj, Probe, count_field, describe, nested
from scheduler.controller.groupers.kubeflow import MIN_AVAILABLE, ReplicaSpecsGrouper

MIN_REPLICAS = ("spec", "elasticPolicy", "minReplicas")
WORKER = "Worker"


@dataclass(frozen=True)
class PyTorchJobGrouper(ReplicaSpecsGrouper):
    """minAvailable, else elasticPolicy.minReplicas workers and the other replicas."""

    def grouping(
        self, owner: Obj, key: str, pod: Obj | None, present: frozenset[Probe]
    ) -> Grouping:
        """The Kubeflow rule, with elastic workers counted at their minimum."""
        whole = super().grouping(owner, key, pod, present)
        if nested(owner, MIN_AVAILABLE) is not None or nested(owner, MIN_REPLICAS) is None:
            return whole
        workers = count_field(owner, MIN_REPLICAS, 0)
        others = [role for role in whole.roles if role.name != WORKER]
        total = workers + sum(role.count for role in others)
        terms = " + ".join(f"{role.name} {role.count}" for role in others)
        rule = (
            f"PyTorchJob {describe(owner)[1]}: spec.elasticPolicy.minReplicas {workers} "
            f"workers{' + ' + terms if terms else ''} = {total}"
        )
        return Grouping(total, whole.roles, rule)


PYTORCHJOB = PyTorchJobGrouper("PyTorchJob", "pytorchReplicaSpecs")
