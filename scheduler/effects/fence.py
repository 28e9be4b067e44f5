"""LeaderFence: whether this replica may send a write of its leader role now.

Every write the scheduler makes as the leader carries it as its gate: binds and their
PreBind patches, evictions and their DisruptionTarget conditions, PodGroup, Queue and
HyperNode status, pods' PodScheduled conditions and annotations, ProvisioningRequests and
their PodTemplates, and events. The client asks the gate once the request has its
connection, just before its first byte is written (kube/client.py), so a write queued while
this replica led is not sent once it no longer does: a process stopped past its lease (a
SIGSTOP, a node frozen) and resumed, or one whose renewals failed, sends nothing after its
term, whatever waited in its queues. On shutdown the fence is closed once the writes had
their time, and the writes already on the wire get their answers before the lease is
released (server.py; unanswered, it is left to expire): nothing of this leader's lands
after a successor may lead.
"""

from __future__ import annotations

from collections.abc import Callable


class LeaderFence:
    """Open while this replica leads (`leading()`), until shutdown closes it for good."""

    def __init__(self, leading: Callable[[], bool]) -> None:
        self._leading = leading
        self._closed = False

    def __call__(self) -> bool:
        """Whether a write of the leader's may be sent now."""
        return not self._closed and self._leading()

    def close(self) -> None:
        """Send no more writes of the leader's (shutdown, before the lease is released)."""
        self._closed = True

    @property
    def closed(self) -> bool:
        """Whether shutdown closed the fence."""
        return self._closed
