"""Which pending gangs a bounded session leaves to the session after it.

A new leader's first session decides for the whole backlog it inherits: over 100,000 pending
pods on 5,000 nodes that is seconds of work before its first bind, on top of a lease term
already waited out. So the first session of a leader's term is offered at most a number of
pending pods (`--first-session-pods`), in whole gangs, and the next session, which runs at
once, takes the rest (server.py). The bound is a count, not a time: the same cache gives the
same session, whatever the machine.

Which gangs the bounded session takes: every gang with a member on a node (bound, being
bound or running: a gang partly bound is completed first, and its room is its own), every
gang the last session nominated for room it freed, every gang with a ProvisioningRequest
(its provisioned room is held for it), and every gang the cache keeps settled; then the
gangs with all their members pending, by priority (highest first), then age (oldest first,
so the starving come early), then name, until they hold the bound's pending pods (the first
such gang always, however big). The others are left out of the session as the settled are
(ClusterSnapshot.clone_for_session): not tried, not reported, and counted in their queues'
figures, so shares, admission and holds read the whole backlog.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from scheduler.api.job import JobInfo
from scheduler.api.snapshot import SettledJob, SettledPart, SettledTotals
from scheduler.api.task import TaskStatus


def deferred_gangs(
    jobs: Mapping[str, JobInfo],
    pending_pods: int,
    *,
    kept: Collection[str] = (),
) -> dict[str, SettledJob]:
    """The gangs of `jobs` a session offered at most `pending_pods` pending pods leaves to
    the next, as settled jobs (their phase as the cache has it; none counted starving).
    `kept`: gangs it takes whatever the bound (nominated, provisioned, settled already)."""
    waiting = [
        job
        for key, job in jobs.items()
        if key not in kept and job.tasks and job.count(TaskStatus.PENDING) == len(job.tasks)
    ]
    waiting.sort(key=_first_served)
    deferred: dict[str, SettledJob] = {}
    offered = 0
    for job in waiting:
        if offered >= pending_pods and offered:
            deferred[job.key] = SettledJob(job.phase, False)
        else:
            offered += len(job.tasks)
    return deferred


def with_deferred(
    totals: Mapping[str, SettledTotals],
    deferred: Mapping[str, SettledJob],
    jobs: Mapping[str, JobInfo],
) -> dict[str, SettledTotals]:
    """Each queue's settled figures with the deferred gangs added (copies: the cache's own
    totals are not changed)."""
    summed = {queue: total.copy() for queue, total in totals.items()}
    for key, known in deferred.items():
        part = SettledPart.of(jobs[key], known)
        total = summed.get(part.queue)
        if total is None:
            total = summed[part.queue] = SettledTotals()
        total.count(part, 1)
    return summed


def _first_served(job: JobInfo) -> tuple[int, str, str]:
    return (-job.priority, job.creation_timestamp, job.key)
