"""Statement: a small transaction log of allocate / pipeline / evict on a session."""

from __future__ import annotations

import enum

from scheduler.api.node import NodeInfo
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.framework.decisions import Bind, Evict
from scheduler.framework.session import Session


class _Kind(enum.Enum):
    ALLOCATE = "allocate"
    PIPELINE = "pipeline"
    EVICT = "evict"


class _Operation:
    # A plain class, not a dataclass: compiled, a dataclass still runs a generated Python
    # __init__, and one is made for every placement.
    __slots__ = ("kind", "node", "previous", "reason", "task")

    def __init__(
        self,
        kind: _Kind,
        task: TaskInfo,
        node: str,
        reason: str = "",
        previous: TaskStatus = TaskStatus.PENDING,
    ) -> None:
        self.kind = kind
        self.task = task
        self.node = node
        self.reason = reason
        self.previous = previous


class Statement:
    """Operations applied to the session at once; commit turns them into decisions,
    discard undoes them in reverse so the session is exactly as before.

    Gang semantics fall out of it: an action allocates a gang's tasks in one
    statement and commits only if the gang is ready.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self._operations: list[_Operation] = []

    def __len__(self) -> int:
        """How many operations wait for commit or discard."""
        return len(self._operations)

    def touched_nodes(self) -> list[str]:
        """The nodes the operations put tasks on or take them off, in the order first
        touched (discard gives their room back)."""
        return list(dict.fromkeys(operation.node for operation in self._operations))

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Give the task room on the node now."""
        self.session.place(task, node, TaskStatus.ALLOCATED)
        self._operations.append(_Operation(_Kind.ALLOCATE, task, node.name))

    def pipeline(self, task: TaskInfo, node: NodeInfo) -> None:
        """Promise the task room on the node once releasing pods are gone."""
        self.session.place(task, node, TaskStatus.PIPELINED)
        self._operations.append(_Operation(_Kind.PIPELINE, task, node.name))

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Release a placed task's room (preemption, reclaim)."""
        previous = self.session.mark_releasing(task)
        self._operations.append(_Operation(_Kind.EVICT, task, task.node_name, reason, previous))

    def keep_pipelined(self) -> None:
        """Turn this statement's allocations into pipelined placements: the gang keeps
        its room but binds nothing until all of it can, so no member counts as placed."""
        for operation in self._operations:
            if operation.kind is _Kind.ALLOCATE:
                self.session.unplace(operation.task)
                self.session.place(
                    operation.task, self.session.nodes[operation.node], TaskStatus.PIPELINED
                )
                operation.kind = _Kind.PIPELINE

    def discard(self) -> None:
        """Undo every operation, newest first."""
        for operation in reversed(self._operations):
            if operation.kind is _Kind.EVICT:
                self.session.unmark_releasing(operation.task, operation.previous)
            else:
                self.session.unplace(operation.task)
        self._operations.clear()

    def commit(self, *, undoing: str = "") -> None:
        """Turn the operations into decisions; pipelined tasks stay promised, not bound.
        `undoing` names the gang ("namespace/name") whose own members the statement evicts
        to undo it (actions/partly_bound.py): its evictions are sent as that gang's group."""
        binds = [
            Bind(op.task.namespace, op.task.name, op.task.uid, op.node, op.task.job)
            for op in self._operations
            if op.kind is _Kind.ALLOCATE
        ]
        # A statement that evicts places one gang on the room it frees: its preemptor.
        preemptor = undoing or next(
            (op.task.job for op in self._operations if op.kind is not _Kind.EVICT), ""
        )
        evictions = [
            Evict(
                op.task.namespace,
                op.task.name,
                op.task.uid,
                op.node,
                op.task.job,
                op.reason,
                preemptor,
            )
            for op in self._operations
            if op.kind is _Kind.EVICT
        ]
        self.session.record_decisions(binds, evictions)
        placed = [op.task for op in self._operations if op.kind is not _Kind.EVICT]
        self._operations.clear()
        if placed:
            self.session.committed(placed)
