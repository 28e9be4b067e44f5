"""Kubeflow training jobs (kubeflow.org/v1): TFJob, XGBoostJob, JAXJob, PaddleJob.

The Training Operator creates every replica's pod at once and the job runs only when all
are up, so a job is one gang: minMember is `spec.runPolicy.schedulingPolicy.minAvailable`
when set, else the sum of `replicas` over the replica specs (1 when unset, as the operator
defaults it). This is the operator's own rule for the PodGroup it writes when its gang
scheduling is on; then its pods name that PodGroup and muster makes none.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.controller.groupers.base import (
    GrouperBase,
    Grouping,
    Obj,
    Probe,
    Role,
    count_field,
    describe,
    nested,
    pod_template,
)

MIN_AVAILABLE = ("spec", "runPolicy", "schedulingPolicy", "minAvailable")
# Replica types that coordinate the others, counted first for minResources (the operator
# orders replicas so too when it sums minResources).
LEADING_TYPES = ("Launcher", "Master", "Chief", "Scheduler", "PS")


@dataclass(frozen=True)
class ReplicaSpecsGrouper(GrouperBase):
    """A Kubeflow job whose replica specs live in `spec.<field>`."""

    kind: str
    replica_field: str
    api_group: str = "kubeflow.org"

    def grouping(
        self, owner: Obj, key: str, pod: Obj | None, present: frozenset[Probe]
    ) -> Grouping:
        """minAvailable when set, else every replica."""
        roles = replica_roles(owner, self.replica_field)
        total = sum(role.count for role in roles)
        name = describe(owner)[1]
        minimum = nested(owner, MIN_AVAILABLE)
        if minimum is not None:
            value = count_field(owner, MIN_AVAILABLE, total)
            rule = f"{self.kind} {name}: spec.runPolicy.schedulingPolicy.minAvailable = {value}"
            return Grouping(value, roles, rule)
        rule = f"{self.kind} {name}: {replica_sum(roles, self.replica_field)}"
        return Grouping(total, roles, rule)


def replica_roles(owner: Obj, replica_field: str) -> tuple[Role, ...]:
    """One role per replica type, the coordinating types first."""
    specs = nested(owner, ("spec", replica_field)) or {}
    names = sorted(
        (name for name in specs if isinstance(specs[name], dict)),
        key=lambda name: (name not in LEADING_TYPES, name),
    )
    return tuple(
        Role(
            name,
            count_field(owner, ("spec", replica_field, name, "replicas"), 1),
            pod_template(nested(specs[name], ("template",))),
        )
        for name in names
    )


def replica_sum(roles: tuple[Role, ...], replica_field: str) -> str:
    """The sum of replicas over the replica specs, in words."""
    terms = " + ".join(f"{role.name} {role.count}" for role in roles) or "none"
    return f"the sum of spec.{replica_field}[*].replicas: {terms} = {sum(r.count for r in roles)}"


TFJOB = ReplicaSpecsGrouper("TFJob", "tfReplicaSpecs")
XGBOOSTJOB = ReplicaSpecsGrouper("XGBoostJob", "xgbReplicaSpecs")
JAXJOB = ReplicaSpecsGrouper("JAXJob", "jaxReplicaSpecs")
PADDLEJOB = ReplicaSpecsGrouper("PaddleJob", "paddleReplicaSpecs")
