"""What `muster explain` says of the room a session holds for a gang (framework/holds.py):
since when and why (it starves, an autoscaler provisioned capacity for it, or it is partly
bound), and what is held, node by node."""

from __future__ import annotations

from typing import Any

from scheduler.api.resources import describe
from scheduler.api.timestamps import format_rfc3339
from scheduler.framework.decisions import HeldRoom, SessionResult


def held_room(result: SessionResult, key: str) -> HeldRoom | None:
    """The room the session held for the gang (it starves, or an autoscaler provisioned
    capacity for it), if any."""
    return next((room for room in result.holds if room.job == key), None)


def holding_lines(result: SessionResult, key: str) -> list[str]:
    """What the session holds for a gang, node by node (framework/holds.py)."""
    room = held_room(result, key)
    if room is None:
        return []
    if room.kind == "provisioned":
        title = f"Holding provisioned capacity (since {format_rfc3339(room.since)}):"
    elif room.kind == "partly-bound":
        title = (
            f"Holding for its missing members (partly bound since {format_rfc3339(room.since)}):"
        )
    else:
        title = f"Holding (starving since {format_rfc3339(room.since)}):"
    lines = ["", title]
    lines += [f"  {node}: {describe(amount)}" for node, amount in sorted(room.nodes.items())]
    if not room.nodes:
        lines.append("  nothing free yet on the nodes it waits for")
    return lines


def holding_document(result: SessionResult, key: str) -> dict[str, Any] | None:
    """The holding section as a document's part (-o json|yaml); None when nothing is held
    for the gang."""
    room = held_room(result, key)
    if room is None:
        return None
    return {
        "kind": room.kind,
        "since": format_rfc3339(room.since),
        "nodes": {node: amount.to_list() for node, amount in sorted(room.nodes.items())},
    }
