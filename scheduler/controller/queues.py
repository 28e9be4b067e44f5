"""Queue lifecycle: Open, Closing (no new PodGroups while the admitted ones finish), Closed.

What a queue should be is an annotation on the Queue itself,
`muster.dev/queue-state: Open | Closed`, which `muster queue open|close`
sets (as does `kubectl annotate`). The controller owns `status.state` and
moves it: a queue asked to close is Closing while PodGroups it admitted
still hold resources (phase Inqueue, Running or Unknown), then Closed.
The scheduler admits PodGroups only from an Open queue, so Closing and
Closed both stop admission at once.

The per-phase PodGroup counts and `status.allocated` are the scheduler's:
it computes them every session from the snapshot it decides on.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from scheduler.api.names import DEFAULT_QUEUE
from scheduler.controller.objects import Obj

# On a Queue: the state its owner asks for (Open or Closed).
STATE_ANNOTATION = "muster.dev/queue-state"
# PodGroup phases that hold (or are about to hold) a queue's resources.
ADMITTED_PHASES = frozenset({"Inqueue", "Running", "Unknown"})


class State(enum.Enum):
    """Queue status.state values (Volcano's)."""

    OPEN = "Open"
    CLOSING = "Closing"
    CLOSED = "Closed"


@dataclass(frozen=True, slots=True)
class QueueView:
    """What the controller keeps of a Queue (kopf index value)."""

    name: str
    state: str  # status.state as written; "" counts as Open
    requested: str  # the annotation; "" means Open
    parent: str

    @property
    def admits(self) -> bool:
        """Whether new PodGroups and pods may name this queue."""
        return (self.state or State.OPEN.value) == State.OPEN.value


@dataclass(frozen=True, slots=True)
class PodGroupView:
    """What the controller keeps of a PodGroup (kopf index value)."""

    namespace: str
    name: str
    queue: str
    phase: str


def queue_view(queue: Obj) -> QueueView:
    """The index value of a Queue document."""
    meta = queue.get("metadata") or {}
    return QueueView(
        name=str(meta.get("name", "")),
        state=str((queue.get("status") or {}).get("state") or ""),
        requested=str((meta.get("annotations") or {}).get(STATE_ANNOTATION) or ""),
        parent=str((queue.get("spec") or {}).get("parent") or ""),
    )


def podgroup_view(podgroup: Obj, default_queue: str = DEFAULT_QUEUE) -> PodGroupView:
    """The index value of a PodGroup document (no queue means the default queue)."""
    meta = podgroup.get("metadata") or {}
    return PodGroupView(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        queue=str((podgroup.get("spec") or {}).get("queue") or default_queue),
        phase=str((podgroup.get("status") or {}).get("phase") or ""),
    )


def requested_state(view: QueueView) -> State:
    """Closed when the annotation says so (any case); Open otherwise."""
    return State.CLOSED if view.requested.lower() == "closed" else State.OPEN


def next_state(view: QueueView, podgroups: Iterable[PodGroupView]) -> State:
    """Where the queue should be, given the PodGroups that name it."""
    if requested_state(view) is State.OPEN:
        return State.OPEN
    admitted = any(pg.phase in ADMITTED_PHASES for pg in podgroups)
    return State.CLOSING if admitted else State.CLOSED


def state_change(view: QueueView, podgroups: Iterable[PodGroupView]) -> State | None:
    """The state to write, or None when status.state is already right."""
    target = next_state(view, podgroups)
    return None if view.state == target.value else target
