"""Why a task does not fit a node: Status values and their aggregation into messages."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field


class Code(enum.Enum):
    """How final a verdict is (kube-scheduler's status codes)."""

    SUCCESS = "Success"
    # The node might fit after something changes (resources freed).
    UNSCHEDULABLE = "Unschedulable"
    # Nothing the scheduler does will make this node fit (selector, taint).
    UNRESOLVABLE = "UnschedulableAndUnresolvable"
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class Status:
    """A verdict of one plugin on one task and node: a code and the reasons users read."""

    code: Code
    reasons: tuple[str, ...] = ()
    # True when the task may go on the node. A field set once, not a property: the node
    # picker reads it for every node it tries, and a property is a call each time.
    ok: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ok", self.code is Code.SUCCESS)


OK = Status(Code.SUCCESS)


def unschedulable(*reasons: str) -> Status:
    """A failure that freeing resources could cure."""
    return Status(Code.UNSCHEDULABLE, reasons)


def unresolvable(*reasons: str) -> Status:
    """A failure no amount of freed resources cures."""
    return Status(Code.UNRESOLVABLE, reasons)


class FitErrors:
    """Per reason, how many nodes refused a task; prints kube-scheduler's message."""

    __slots__ = ("_refusals", "node_count")

    def __init__(self, node_count: int) -> None:
        self.node_count = node_count
        # Nodes per refusal's reasons: most nodes share a handful of Status values, so a
        # node costs one dict update, and the reasons are counted once per kind.
        self._refusals: dict[tuple[str, ...], int] = {}

    def add(self, status: Status) -> None:
        """Count one node's refusal."""
        refusals = self._refusals
        refusals[status.reasons] = refusals.get(status.reasons, 0) + 1

    def add_all(self, statuses: Iterable[Status]) -> None:
        """Count many nodes' refusals."""
        for status in statuses:
            self.add(status)

    def _by_reason(self) -> Counter[str]:
        counted: Counter[str] = Counter()
        for reasons, nodes in self._refusals.items():
            for reason in reasons:
                counted[reason] += nodes
        return counted

    def message(self) -> str:
        """ "0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint ..."."""
        if self.node_count == 0:
            return "0/0 nodes are available: no nodes available to schedule pods."
        # kube-scheduler sorts the "count reason" strings as strings.
        parts = sorted(f"{count} {reason}" for reason, count in self._by_reason().items())
        return f"0/{self.node_count} nodes are available: {', '.join(parts)}."
