"""Figures beside a session's placement reasons, for explain: per reason the node count the
session wrote, and for a resource reason what the pod needs and the most any node that
lacks it has free ("2 nodes: Insufficient cpu (need 1500m, largest free 1)").

Presentation only: the reasons and counts are read from the message the session wrote
(kube-scheduler's "0/N nodes are available: ..."), never decided again here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from scheduler.api.node import NodeInfo
from scheduler.api.resources import CPU, MEMORY, Resource
from scheduler.api.task import TaskInfo

# kube-scheduler's words (scheduler/framework/status.py FitErrors.message).
_AVAILABLE = re.compile(r"(\d+)/(\d+) nodes are available: (.*?)\.?$")
# "3 Insufficient cpu, 2 node(s) had untolerated taint {a: b}": a count, then the reason
# up to the next ", <count> " (reasons carry no such sequence themselves).
_PART = re.compile(r"(\d+) (.+?)(?=, \d+ |$)")
INSUFFICIENT = "Insufficient "


@dataclass(frozen=True)
class ReasonFigure:
    """One reason of a placement message: how many nodes gave it, and for a resource the
    pod's need and the largest amount free on a node that cannot hold it."""

    nodes: int
    reason: str
    resource: str = ""
    need: str = ""
    largest_free: str = ""

    def line(self) -> str:
        """ "12 nodes: Insufficient nvidia.com/gpu (need 8, largest free 4)"."""
        noun = "node" if self.nodes == 1 else "nodes"
        figures = f" (need {self.need}, largest free {self.largest_free})" if self.resource else ""
        return f"{self.nodes} {noun}: {self.reason}{figures}"


def reason_counts(message: str) -> list[tuple[int, str]]:
    """(node count, reason) of each part of the session's "0/N nodes are available: ..."
    message, in its order; [] when the message gives no per-node reasons."""
    # a search: the gang's message prefixes the pod's ("4/4 tasks in gang unschedulable: ")
    found = _AVAILABLE.search(message)
    if found is None:
        return []
    return [(int(count), reason) for count, reason in _PART.findall(found.group(3))]


def amount(resource: str, value: int) -> str:
    """One dimension written as a quantity ("1500m", "4Gi", "8")."""
    if value <= 0:
        return "0"
    if resource == CPU:
        vector = Resource(cpu=value)
    elif resource == MEMORY:
        vector = Resource(memory=value)
    else:
        vector = Resource(scalars={resource: value})
    return vector.to_list()[resource]


def largest_free(resource: str, need: int, nodes: Iterable[NodeInfo]) -> int:
    """The most of `resource` free on any of the nodes that has less than `need` of it."""
    short = [node.idle.get(resource) for node in nodes if node.idle.get(resource) < need]
    return max(short, default=0)


def figures(message: str, task: TaskInfo, nodes: Iterable[NodeInfo]) -> list[ReasonFigure]:
    """The reasons of the task's message with their node counts, and for each resource it
    lacks, its request and the largest free amount among `nodes` (the nodes the task's
    static filters admit)."""
    candidates = list(nodes)
    result = []
    for count, reason in reason_counts(message):
        if not reason.startswith(INSUFFICIENT):
            result.append(ReasonFigure(count, reason))
            continue
        resource = reason[len(INSUFFICIENT) :]
        need = task.request.get(resource)
        free = largest_free(resource, need, candidates)
        result.append(
            ReasonFigure(count, reason, resource, amount(resource, need), amount(resource, free))
        )
    return result
