"""Whose a PodGroup is: muster schedules, writes status for and counts in its queues only
the PodGroups that are its own, and leaves every other one as its writer left it.

The rule, in order:

1. A PodGroup with at least one pod that names one of muster's scheduler names is muster's.
2. A PodGroup whose pods all name other schedulers is theirs (a mixed group is muster's
   by rule 1, and muster counts only its own pods in it).
3. A PodGroup with no pods yet is muster's when its `muster.dev/scheduler-name` annotation
   names one of muster's scheduler names, and theirs when it names another.
4. A PodGroup with no pods and no annotation is muster's unless muster runs with
   `--no-claim-podgroups-without-pods`. Claiming them is Volcano's behaviour and what
   clients that create pods only once their PodGroup is Inqueue (Kubeflow's training
   operator) need; beside another scheduler that admits such PodGroups, turn it off and
   annotate the PodGroups meant for muster.

A pod counts for rule 1 and 2 by the PodGroup it names in `scheduling.k8s.io/group-name`
(muster's own pods also by their owner, as muster's controller names PodGroups). Pods of
any scheduler that sit on a node still count for that node's room.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.api.names import SCHEDULER_NAME_ANNOTATION


@dataclass(frozen=True, slots=True)
class Ownership:
    """The scheduler names muster serves and what it does with PodGroups that have no pods."""

    scheduler_names: frozenset[str]
    claim_without_pods: bool = True

    def owns(self, annotations: Mapping[str, str], our_pods: int, their_pods: int) -> bool:
        """Whether a PodGroup with these annotations and members is muster's."""
        if our_pods:
            return True
        if their_pods:
            return False
        named = annotations.get(SCHEDULER_NAME_ANNOTATION)
        if named:
            return named in self.scheduler_names
        return self.claim_without_pods
