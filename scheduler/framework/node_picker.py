"""NodePicker: the best node for a task without scoring every node for every pod.

Tasks with the same placement spec and request (the members of a gang,
usually) are one *shape*. Per shape the picker keeps a max-heap of node
scores over a window of admissible nodes. A heap entry remembers the node's
version; when it reaches the top with an old version it is rescored and
pushed back (scores only fall as a node fills under least-allocated, so a
stale entry over-promises and is caught at the top). A node that has no room
leaves the shape's heap until something frees room on it.

So a placement costs O(log window) instead of O(nodes), and a session over
P pods and N nodes costs about P log N plus, per shape, the window scored
once: the cost grows with pods x sampled nodes, never pods x all nodes.
Windows follow kube-scheduler's percentageOfNodesToScore: the picker scores
a sample, and looks further only when the sample is exhausted; so a task is
declared unschedulable only after every node was examined, and its message
counts all of them.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import NamedTuple

from scheduler.api.node import NodeInfo
from scheduler.api.task import PodPlacementSpec, TaskInfo
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.framework.status import FitErrors, Status

Shape = tuple[PodPlacementSpec, int, int, frozenset[tuple[str, int]]]


def shape_of(task: TaskInfo) -> Shape:
    """Tasks with equal shapes get the same filter and score answers from every node."""
    request = task.request
    scalars = frozenset(request.scalars.items()) if request.scalars else frozenset()
    return (task.placement, request.cpu, request.memory, scalars)


def nodes_to_score(total: int, percentage: int, minimum: int) -> int:
    """How many feasible nodes to score before choosing (kube-scheduler's adaptive rule)."""
    if total <= minimum:
        return total
    if percentage <= 0:
        # 50% at 100 nodes, falling by 1% every 125 nodes, never below 5%.
        percentage = max(5, 50 - total // 125)
    return max(minimum, total * percentage // 100)


@dataclass(slots=True)
class _Admissible:
    """Nodes whose static filters admit a placement spec, and why the others refuse."""

    nodes: list[NodeInfo]
    names: frozenset[str]
    refusals: list[Status]


class _HeapEntry(NamedTuple):
    """A node's score for a shape, as a min-heap orders it: best score first, then the
    entry pushed first (so nodes themselves are never compared)."""

    negated_score: float
    sequence: int
    # The node's version when scored; -1 for an entry to be scored when it reaches the top.
    version: int
    node: NodeInfo


@dataclass(slots=True)
class _ShapeHeap:
    admissible: _Admissible
    heap: list[_HeapEntry] = field(default_factory=list)
    # Index into admissible.nodes of the next window to load.
    cursor: int = 0
    loaded: int = 0
    # Nodes taken off the heap because the shape did not fit there.
    full: dict[str, NodeInfo] = field(default_factory=dict)
    # The node version of each node's newest entry, so stale duplicates are dropped.
    newest: dict[str, int] = field(default_factory=dict)
    failure: str | None = None


class NodePicker:
    """Best-node selection for the allocate-style actions of one session."""

    def __init__(self, session: Session, *, percentage: int = 0, minimum: int = 100) -> None:
        self.session = session
        self.window = nodes_to_score(len(session.node_list), percentage, minimum)
        self._admissible: dict[PodPlacementSpec, _Admissible] = {}
        self._shapes: dict[Shape, _ShapeHeap] = {}
        self._sequence = itertools.count()
        # Where the next shape starts reading nodes, so shapes spread over the cluster.
        self._start = 0

    def pick(self, task: TaskInfo) -> NodeInfo | None:
        """The best node with room for the task now (or once releasing pods go), else None."""
        shape = self._shape(task)
        if shape.failure is not None:
            return None
        session = self.session
        stash: list[_HeapEntry] = []
        chosen: NodeInfo | None = None
        while chosen is None:
            if not shape.heap and not self._load_window(task, shape):
                break
            entry = heapq.heappop(shape.heap)
            node = entry.node
            if node.name in shape.full:
                continue
            if entry.version != node.version:
                if shape.newest.get(node.name) != node.version:
                    self._push(task, shape, node)
                continue
            if not session.fits(task, node).ok:
                shape.full[node.name] = node
                continue
            if task.request.fits_in(node.idle):
                chosen = node
            else:
                # Fits only once releasing pods go: prefer any node with room now.
                stash.append(entry)
        if chosen is None and stash:
            chosen = stash.pop(0).node
        for entry in stash:
            heapq.heappush(shape.heap, entry)
        if chosen is None:
            shape.failure = self._failure_message(task, shape)
        return chosen

    def reconsider(self, task: TaskInfo, node: NodeInfo) -> None:
        """Score a picked node again for the task's shape: call after placing the task there
        (its room changed) or after deciding not to use it (it must not be lost)."""
        shape = self._shapes.get(shape_of(task))
        if shape is not None:
            self._push(task, shape, node)

    def freed(self, node: NodeInfo) -> None:
        """Room came back on a node (a discarded statement): every shape may use it again."""
        for shape in self._shapes.values():
            if node.name not in shape.admissible.names:
                continue
            if shape.full.pop(node.name, None) is not None or shape.failure is not None:
                shape.failure = None
                self._push_any(shape, node)

    def discard(self, statement: Statement) -> int:
        """Discard a statement and offer the room it held back to every shape.

        Returns how many placements were undone."""
        touched = statement.touched_nodes()
        undone = len(statement)
        statement.discard()
        for name in touched:
            self.freed(self.session.nodes[name])
        return undone

    def failure(self, task: TaskInfo) -> str:
        """Why the last pick for the task's shape found nothing, in kube-scheduler's words."""
        shape = self._shape(task)
        return shape.failure or self._failure_message(task, shape)

    # Internals -------------------------------------------------------------
    def _shape(self, task: TaskInfo) -> _ShapeHeap:
        key = shape_of(task)
        shape = self._shapes.get(key)
        if shape is None:
            shape = _ShapeHeap(self._admissible_for(task))
            if shape.admissible.nodes:
                shape.cursor = self._start % len(shape.admissible.nodes)
                self._start += self.window
            self._shapes[key] = shape
        return shape

    def _admissible_for(self, task: TaskInfo) -> _Admissible:
        cached = self._admissible.get(task.placement)
        if cached is None:
            nodes: list[NodeInfo] = []
            refusals: list[Status] = []
            for node in self.session.node_list:
                status = self.session.admits(task, node)
                if status.ok:
                    nodes.append(node)
                else:
                    refusals.append(status)
            names = frozenset(node.name for node in nodes)
            cached = self._admissible[task.placement] = _Admissible(nodes, names, refusals)
        return cached

    def _load_window(self, task: TaskInfo, shape: _ShapeHeap) -> bool:
        nodes = shape.admissible.nodes
        remaining = len(nodes) - shape.loaded
        if remaining <= 0:
            return False
        count = min(self.window, remaining)
        for offset in range(count):
            node = nodes[(shape.cursor + offset) % len(nodes)]
            if node.name not in shape.full:
                self._push(task, shape, node)
        shape.cursor = (shape.cursor + count) % len(nodes)
        shape.loaded += count
        return True

    def _push(self, task: TaskInfo, shape: _ShapeHeap, node: NodeInfo) -> None:
        score = self.session.score(task, node)
        shape.newest[node.name] = node.version
        heapq.heappush(shape.heap, _HeapEntry(-score, next(self._sequence), node.version, node))

    def _push_any(self, shape: _ShapeHeap, node: NodeInfo) -> None:
        # Scored lazily: version -1 never matches, so the first pop rescores it.
        shape.newest.pop(node.name, None)
        heapq.heappush(shape.heap, _HeapEntry(float("-inf"), next(self._sequence), -1, node))

    def _failure_message(self, task: TaskInfo, shape: _ShapeHeap) -> str:
        errors = FitErrors(len(self.session.node_list))
        errors.add_all(shape.admissible.refusals)
        for node in shape.admissible.nodes:
            status = self.session.fits(task, node)
            if not status.ok:
                errors.add(status)
        return errors.message()
