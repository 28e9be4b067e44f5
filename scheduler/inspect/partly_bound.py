"""What `muster explain` says of a partly bound gang (api/gang_state.py; allocate decides,
actions/partly_bound.py): since when it is partly bound, what the session does about it
(completes it, holds for it, undoes it), and when it is undone if it cannot be completed
by then, from the session's own verdict (JobInfo.completion)."""

from __future__ import annotations

from typing import Any

from scheduler.api.reasons import (
    PARTLY_BOUND_COMPLETED,
    PARTLY_BOUND_HOLDING,
    PARTLY_BOUND_UNDO_REFUSED,
    PARTLY_BOUND_UNDOING,
    PARTLY_BOUND_UNDONE,
)
from scheduler.api.timestamps import format_rfc3339
from scheduler.api.verdicts import Completion
from scheduler.inspect.cluster import Session

# What each PartlyBound reason means for what happens next.
_COMPLETION_OUTCOMES = {
    PARTLY_BOUND_COMPLETED: "completed now, on the room that is left",
    PARTLY_BOUND_HOLDING: "held for: the room its missing members need is kept from every "
    "other gang",
    PARTLY_BOUND_UNDOING: "undone now: its bound members are evicted",
    PARTLY_BOUND_UNDO_REFUSED: "its undo was refused; held for, and tried again after a backoff",
    PARTLY_BOUND_UNDONE: "past its time with nothing to undo (its placed members finished): "
    "no longer held for, still placed first",
}


def completion_of(session: Session, key: str) -> Completion | None:
    """What the session did about the gang if it is partly bound (api/gang_state.py)."""
    job = session.snapshot.jobs.get(key)
    return job.completion if job is not None else None


def completion_lines(session: Session, key: str) -> list[str]:
    """A partly bound gang: since when, what the session does about it, and when it is
    undone if it cannot be completed by then (its PartlyBound condition, under Placement,
    says why)."""
    verdict = completion_of(session, key)
    if verdict is None:
        return []
    since = format_rfc3339(verdict.since) if verdict.since is not None else "a time unknown"
    lines = ["", f"Partly bound (some members bound since {since}, the gang not yet whole):"]
    lines.append(f"  {_COMPLETION_OUTCOMES.get(verdict.reason, verdict.reason)}")
    if verdict.reason in (PARTLY_BOUND_HOLDING, PARTLY_BOUND_UNDO_REFUSED):
        lines.append(f"  undone at {format_rfc3339(verdict.deadline)} unless complete by then")
    return lines


def completion_document(session: Session, key: str) -> dict[str, Any] | None:
    """The partly bound section as a document's part (-o json|yaml); None for a gang not
    partly bound."""
    verdict = completion_of(session, key)
    if verdict is None:
        return None
    return {
        "since": format_rfc3339(verdict.since) if verdict.since is not None else None,
        "undoneAt": format_rfc3339(verdict.deadline),
        "reason": verdict.reason,
        "message": verdict.message,
    }
