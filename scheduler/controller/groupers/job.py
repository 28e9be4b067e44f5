"""Job (batch/v1): an Indexed Job with parallelism equal to its completions is a gang.

That shape (`completionMode: Indexed`, `parallelism == completions`) is a distributed run:
one pod per index, all running at once, each knowing its rank from its index. It is ganged
at parallelism. Any other Job (a work queue, a run of retries, an Indexed Job that runs its
indexes a few at a time) starts its pods one by one: minMember 1, unless an annotation says
otherwise.
"""

from __future__ import annotations

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

INDEXED = "Indexed"


class JobGrouper(GrouperBase):
    """One group per Job: a gang of parallelism when Indexed with parallelism == completions."""

    api_group = "batch"
    kind = "Job"

    def grouping(
        self, owner: Obj, key: str, pod: Obj | None, present: frozenset[Probe]
    ) -> Grouping:
        """parallelism for the distributed shape, else 1."""
        name = describe(owner)[1]
        mode = str(nested(owner, ("spec", "completionMode")) or "NonIndexed")
        parallelism = count_field(owner, ("spec", "parallelism"), 1)
        completions = nested(owner, ("spec", "completions"))
        template = pod_template(nested(owner, ("spec", "template")))
        if mode == INDEXED and completions == parallelism and parallelism > 0:
            rule = (
                f"Job {name}: completionMode Indexed with parallelism = completions = "
                f"{parallelism}, one pod per index running at once: minMember {parallelism}"
            )
            return Grouping(parallelism, (Role("pods", parallelism, template),), rule)
        rule = (
            f"Job {name}: completionMode {mode}, parallelism {parallelism}, completions "
            f"{completions if completions is not None else 'unset'}: not the Indexed "
            "parallelism = completions shape, so its pods start one by one: minMember 1"
        )
        return Grouping(1, (Role("pods", 1, template),), rule)
