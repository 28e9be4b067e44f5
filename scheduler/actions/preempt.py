"""preempt: inside a queue, a starving gang of higher priority evicts lower-priority pods."""

from __future__ import annotations

import functools

from pydantic import Field

from scheduler.actions.eviction import EvictionArguments, evict_for, may_preempt, starving_gangs
from scheduler.api.job import JobInfo
from scheduler.api.task import TaskInfo
from scheduler.framework.action import Action
from scheduler.framework.arguments import Count
from scheduler.framework.session import Session


class PreemptArguments(EvictionArguments):
    """preempt's arguments: evictWholeGangs (muster's), predicateErrorCacheEnable, and
    Volcano's topology-aware preemption settings, which change nothing in muster: its
    preemption examines every admissible node, in the session, and checks the
    preemptor's pod affinity, spread and volumes on a node once its victims are gone."""

    topology_aware: bool | None = Field(None, alias="enableTopologyAwarePreemption")
    topology_aware_workers: Count | None = Field(None, alias="topologyAwarePreemptWorkerNum", ge=1)
    min_candidate_percentage: Count | None = Field(
        None, alias="minCandidateNodesPercentage", ge=0, le=100
    )
    min_candidate_nodes: Count | None = Field(None, alias="minCandidateNodesAbsolute", ge=0)
    max_candidate_nodes: Count | None = Field(None, alias="maxCandidateNodesAbsolute", ge=0)

    def load_notes(self) -> list[str]:
        """Each of Volcano's topology-aware preemption settings changes nothing."""
        notes = super().load_notes()
        why = {
            "enableTopologyAwarePreemption": "muster's preemption always checks the "
            "preemptor's pod affinity, spread and volumes on a node once its victims are gone",
            "topologyAwarePreemptWorkerNum": "muster's preemption runs within the session",
            "minCandidateNodesPercentage": "muster's preemption examines every admissible node",
            "minCandidateNodesAbsolute": "muster's preemption examines every admissible node",
            "maxCandidateNodesAbsolute": "muster's preemption examines every admissible node",
        }
        for name, field in type(self).model_fields.items():
            if field.alias in why and getattr(self, name) is not None:
                notes.append(f"{field.alias} changes nothing: {why[field.alias]}")
        return notes


class Preempt(Action[PreemptArguments]):
    """For each starving gang, highest priority first: pipeline it onto room released by
    evicting lower-priority pods of its own queue (whole victim gangs or spare members),
    and commit the evictions only if the whole gang is then placed."""

    name = "preempt"

    def execute(self, session: Session) -> None:
        args = self.arguments
        for job in preemptors(session):
            evict_for(
                session,
                job,
                in_scope=functools.partial(_same_queue, job),
                allowed=session.preemptable,
                reason=functools.partial(_reason, job),
                whole_gangs=args.evict_whole_gangs,
            )


def preemptors(session: Session) -> list[JobInfo]:
    """Starving gangs that may preempt, in job order."""
    found = [job for job in starving_gangs(session) if may_preempt(session.snapshot, job)]
    return sorted(found, key=session.job_key)


def _same_queue(job: JobInfo, victim: JobInfo) -> bool:
    return victim.queue == job.queue


def _reason(job: JobInfo, task: TaskInfo) -> str:
    return f"preempted by {job.key} (priority {task.priority}) to place {task.key}"
