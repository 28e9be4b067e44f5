"""gangreclaim: Volcano 1.15's gang-aware reclaim, on muster's reclaim.

As gangpreempt is to preempt (see actions/gangpreempt.py): reclaim with Volcano's
arguments `maxDomains` (default 8) and `allowWholeBundle` (default true). Queues
give back only while they keep their deserved share, and the reclaiming queue takes
only what keeps it within its own, as reclaim does.
"""

from __future__ import annotations

from scheduler.actions.eviction import GangReclaimArguments
from scheduler.actions.reclaim import reclaim_all
from scheduler.framework.action import Action
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.session import Session


class GangReclaim(Action[GangReclaimArguments]):
    """reclaim with Volcano 1.15's gangreclaim arguments."""

    name = "gangreclaim"

    def execute(self, session: Session, state: CycleState) -> None:
        reclaim_all(session, state, self.arguments)
