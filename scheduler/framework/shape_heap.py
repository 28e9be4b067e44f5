"""The node picker's state per pod shape: a heap of scored nodes, read a window at a time,
and the nodes the shape was refused on, kept by node (no room) or by topology domain (a
DoNotSchedule spread skew), to be offered again when a placement or a removal may turn
them. framework/node_picker.py reads and keeps it; this module only says what it holds."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.api.node import NodeInfo
from scheduler.api.task import TaskInfo
from scheduler.framework.status import Status


@dataclass(slots=True)
class Admissible:
    """Nodes whose static filters admit a placement spec, and why the others refuse."""

    nodes: list[NodeInfo]
    names: frozenset[str]
    refusals: list[Status]


# A node's score for a shape, as a min-heap orders it: (negated score, sequence, the node's
# version when scored, the node). Best score first, then the entry pushed first, so nodes
# themselves are never compared; version -1 for an entry to be scored when it reaches the
# top. A plain tuple: a NamedTuple is built through a Python-level __new__ even when
# compiled, and entries are made for every placement.
HeapEntry = tuple[float, int, int, NodeInfo]


@dataclass(slots=True)
class ShapeHeap:
    """One shape's nodes as the picker reads them: scored ones on a heap, and those the
    shape was refused on, by node or by topology domain."""

    admissible: Admissible
    heap: list[HeapEntry] = field(default_factory=list)
    # Index into admissible.nodes of the next window to load.
    cursor: int = 0
    loaded: int = 0
    # Nodes taken off the heap because the shape did not fit there, with the entry they
    # were refused on: a reopen offers that entry again while the node is unchanged, so a
    # refusal that a placement elsewhere did not turn costs no second score.
    full: dict[str, HeapEntry] = field(default_factory=dict)
    # Nodes set aside because their topology domain's spread skew refused the shape, by
    # domain, with their entries; and each such node's domain. A placement or removal only
    # asks again, per domain, whether it still refuses (the picker's `_recheck_parked`), so
    # a refused domain's nodes are not weighed again one by one after every placement.
    # `checked` is the picker's count of moves (placements and removals) when they were
    # last asked.
    parked: dict[tuple[str, str], dict[str, HeapEntry]] = field(default_factory=dict)
    parked_at: dict[str, tuple[str, str]] = field(default_factory=dict)
    checked: int = 0
    # The topology keys of the shape's DoNotSchedule spread constraints (its refusals may
    # be a domain's).
    spread_keys: tuple[str, ...] = ()
    # The node version of each node's newest entry, so stale duplicates are dropped.
    newest: dict[str, int] = field(default_factory=dict)
    failure: str | None = None
    # The task's verdicts depend on pods elsewhere in a topology domain: refused nodes are
    # offered again when a placement may turn them (`reopens`) or any pod leaves (`topology`).
    topology: bool = False
    reopens: bool = False
    # A task of the shape whose score reads pods elsewhere in its domains (preferred pod
    # affinity, ScheduleAnyway spread): its heap is rescored after each placement.
    rescored_for: TaskInfo | None = None
    # Windows of kube-scheduler's minimum sample rather than the picker's window: shapes
    # of one gang each (pod terms, images) whose best nodes are few and known.
    sampled: bool = False


def parked_domain(
    shape: ShapeHeap, keys: tuple[str, ...], node: NodeInfo
) -> tuple[str, str] | None:
    """The node's domain if the shape has set it aside. Asked within one pick, where no
    count moves: such a domain (asked again when the pick began) still refuses the task."""
    labels = node.labels
    for key in keys:
        value = labels.get(key)
        if value is not None and (key, value) in shape.parked:
            return key, value
    return None


def park(shape: ShapeHeap, domain: tuple[str, str], entry: HeapEntry) -> None:
    """Set a node aside with its domain, to be offered again when the domain turns."""
    shape.parked.setdefault(domain, {})[entry[3].name] = entry
    shape.parked_at[entry[3].name] = domain
