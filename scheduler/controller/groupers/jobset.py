"""JobSet (jobset.x-k8s.io/v1alpha2): the whole JobSet is one gang, or one per replicatedJob.

With `spec.startupPolicy.startupPolicyOrder: AnyOrder` (what JobSet's webhook fills in when
it is unset) every replicatedJob starts at once, so the JobSet is one group whose minMember
is the sum, over its replicatedJobs, of replicas x min(parallelism, completions) of the Job
template (parallelism 1 and completions = parallelism when unset, as batch/v1 defaults
them). With InOrder a replicatedJob starts only once the one before it is ready, so one
group for all would wait for pods that are not created yet: each replicatedJob is a group
of its own, keyed by its pods' `jobset.sigs.k8s.io/replicatedjob-name` label.
"""

from __future__ import annotations

from scheduler.api.errors import InvalidObject
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
    required_label,
)

REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
ANY_ORDER = "AnyOrder"
IN_ORDER = "InOrder"


class JobSetGrouper(GrouperBase):
    """One group per JobSet (AnyOrder) or per replicatedJob (InOrder)."""

    api_group = "jobset.x-k8s.io"
    kind = "JobSet"

    def key_of(self, owner: Obj, pod: Obj) -> str:
        """The pod's replicatedJob under InOrder; the JobSet's one group otherwise."""
        if _order(owner) != IN_ORDER:
            return ""
        return required_label(
            pod, REPLICATED_JOB_LABEL, "JobSet's controller labels every pod of a replicatedJob"
        )

    def keys(self, owner: Obj) -> tuple[str, ...]:
        """Every replicatedJob under InOrder; the JobSet's one group otherwise."""
        if _order(owner) != IN_ORDER:
            return ("",)
        return tuple(str(job.get("name", "")) for job in _replicated_jobs(owner))

    def grouping(
        self, owner: Obj, key: str, pod: Obj | None, present: frozenset[Probe]
    ) -> Grouping:
        """replicas x min(parallelism, completions), summed over the group's replicatedJobs."""
        jobs = [
            (index, job)
            for index, job in enumerate(_replicated_jobs(owner))
            if not key or job.get("name") == key
        ]
        if not jobs:
            kind, name = describe(owner)
            raise InvalidObject(
                kind, name, "spec.replicatedJobs", key, "names no replicatedJob of this JobSet"
            )
        roles: list[Role] = []
        terms: list[str] = []
        for index, job in jobs:
            at = ("spec", "replicatedJobs", index)
            replicas = count_field(owner, (*at, "replicas"), 1)
            parallelism = count_field(owner, (*at, "template", "spec", "parallelism"), 1)
            completions = count_field(owner, (*at, "template", "spec", "completions"), parallelism)
            template = pod_template(nested(job, ("template", "spec", "template")))
            name = str(job.get("name", ""))
            roles.append(Role(name, replicas * min(parallelism, completions), template))
            terms.append(
                f"{name} {replicas} x min(parallelism {parallelism}, completions {completions})"
            )
        total = sum(role.count for role in roles)
        scope = f"replicatedJob {key}" if key else "the whole JobSet"
        rule = (
            f"JobSet {describe(owner)[1]} (startupPolicyOrder {_order(owner)}): one group for "
            f"{scope}; spec.replicatedJobs: {' + '.join(terms)} = {total}"
        )
        return Grouping(min_member=total, roles=tuple(roles), rule=rule)


def _order(owner: Obj) -> str:
    return str(nested(owner, ("spec", "startupPolicy", "startupPolicyOrder")) or ANY_ORDER)


def _replicated_jobs(owner: Obj) -> list[Obj]:
    jobs = nested(owner, ("spec", "replicatedJobs")) or []
    return [job for job in jobs if isinstance(job, dict)]
