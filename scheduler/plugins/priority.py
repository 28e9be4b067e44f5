"""priority: higher-priority jobs and tasks first; only lower priority may be preempted."""

from __future__ import annotations

from scheduler.api.job import JobInfo
from scheduler.api.task import TaskInfo
from scheduler.framework.plugin import Plugin


class PriorityPlugin(Plugin):
    """Orders by PodGroup priority (its PriorityClass) and pod priority (spec.priority)."""

    name = "priority"

    def job_order(self, a: JobInfo, b: JobInfo) -> int:
        return b.priority - a.priority

    def task_order(self, a: TaskInfo, b: TaskInfo) -> int:
        return b.priority - a.priority

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return [task for task in candidates if task.priority < preemptor.priority]
