"""priority: higher-priority jobs and tasks first; only lower priority may be preempted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api.job import JobInfo
from scheduler.api.task import TaskInfo
from scheduler.framework.answers import SortKey
from scheduler.framework.arguments import NoArguments
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session


class PriorityPlugin(Plugin[NoArguments]):
    """Orders by PodGroup priority (its PriorityClass) and pod priority (spec.priority).

    A victim of another job must belong to a job of lower priority than the preemptor's
    job (the PodGroup's priorityClassName, as in Volcano); inside one job, pod priorities
    decide."""

    name = "priority"

    def __init__(self, arguments: NoArguments | Mapping[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.jobs: dict[str, JobInfo] = {}

    def on_session_open(self, session: Session, state: CycleState) -> None:
        self.jobs = session.jobs

    def job_order(self, job: JobInfo) -> SortKey:
        return -job.priority  # higher first

    def task_order(self, task: TaskInfo) -> SortKey:
        return -task.priority

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        jobs = self.jobs
        mine = jobs.get(preemptor.job)
        allowed = []
        for task in candidates:
            theirs = jobs.get(task.job)
            if mine is None or theirs is None or theirs is mine:
                if task.priority < preemptor.priority:
                    allowed.append(task)
            elif theirs.priority < mine.priority:
                allowed.append(task)
        return allowed
