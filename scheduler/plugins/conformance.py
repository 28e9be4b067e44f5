"""conformance: pods the cluster cannot do without are never victims."""

from __future__ import annotations

from scheduler.api.names import SYSTEM_NAMESPACE, SYSTEM_PRIORITY
from scheduler.api.task import TaskInfo
from scheduler.framework.arguments import NoArguments
from scheduler.framework.plugin import Plugin


def is_critical(task: TaskInfo) -> bool:
    """kube-system pods and system-critical priorities (system-cluster/node-critical)."""
    return task.namespace == SYSTEM_NAMESPACE or task.priority >= SYSTEM_PRIORITY


class ConformancePlugin(Plugin[NoArguments]):
    """Filters critical pods out of every victim list."""

    name = "conformance"

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return [task for task in candidates if not is_critical(task)]

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return [task for task in candidates if not is_critical(task)]
