"""MPIJob (kubeflow.org/v2beta1, mpi-operator; v1 from the Training Operator): launcher and workers.

As the other Kubeflow jobs (groupers/kubeflow.py): minAvailable when set, else every
replica of `spec.mpiReplicaSpecs` (Launcher and Worker). mpi-operator runs the launcher as
the Job `<name>-launcher`; with `spec.launcherCreationPolicy: WaitForWorkersReady` it
creates that Job only once the workers are ready, so until the Job exists the launcher is
not counted (a gang waiting for it would never start the workers it waits on).
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.controller.groupers.base import Grouping, Obj, Probe, describe, nested
from scheduler.controller.groupers.kubeflow import MIN_AVAILABLE, ReplicaSpecsGrouper

WAIT_FOR_WORKERS = "WaitForWorkersReady"
LAUNCHER = "Launcher"


@dataclass(frozen=True)
class MPIJobGrouper(ReplicaSpecsGrouper):
    """The Kubeflow rule; the launcher counted once its Job exists under WaitForWorkersReady."""

    def probes(self, owner: Obj) -> tuple[Probe, ...]:
        """The launcher's Job, when the launcher waits for the workers."""
        if not _waits_for_workers(owner):
            return ()
        meta = owner.get("metadata") or {}
        namespace = str(meta.get("namespace", ""))
        return (Probe("batch/v1", "Job", namespace, f"{meta.get('name', '')}-launcher"),)

    def grouping(
        self, owner: Obj, key: str, pod: Obj | None, present: frozenset[Probe]
    ) -> Grouping:
        """Every replica, less the launcher while its Job is not created yet."""
        whole = super().grouping(owner, key, pod, present)
        if nested(owner, MIN_AVAILABLE) is not None or not _waits_for_workers(owner):
            return whole
        if all(probe in present for probe in self.probes(owner)):
            return Grouping(
                whole.min_member,
                whole.roles,
                f"{whole.rule}; launcherCreationPolicy {WAIT_FOR_WORKERS}: the launcher's "
                "Job exists, so the launcher counts",
            )
        launchers = sum(role.count for role in whole.roles if role.name == LAUNCHER)
        roles = tuple(role for role in whole.roles if role.name != LAUNCHER)
        total = whole.min_member - launchers
        rule = (
            f"MPIJob {describe(owner)[1]}: spec.launcherCreationPolicy {WAIT_FOR_WORKERS} and "
            f"no launcher Job yet, so the workers alone: "
            + " + ".join(f"{role.name} {role.count}" for role in roles)
            + f" = {total}"
        )
        return Grouping(total, roles, rule)


def _waits_for_workers(owner: Obj) -> bool:
    return bool(nested(owner, ("spec", "launcherCreationPolicy")) == WAIT_FOR_WORKERS)


MPIJOB = MPIJobGrouper("MPIJob", "mpiReplicaSpecs")
