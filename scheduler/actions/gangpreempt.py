"""gangpreempt: Volcano 1.15's gang-aware preempt, on muster's preempt.

muster's preempt is gang-aware already: victims come in units that never break a
running gang (a spare member: Volcano's safe bundle) or, when allowed, a whole gang
(its whole bundle); a topology gang's evictions are searched one domain (HyperNode) at
a time; and evictions are committed only if the whole preemptor is then placed. So
gangpreempt is preempt with Volcano's arguments: `maxDomains` (default 8) caps the
domains searched, `allowWholeBundle` (default true) lets whole gangs be victims.
Where they differ: among victims, muster takes the fewest pods first, then the lowest
priority, then the youngest; Volcano ranks safe bundles first, then priority, then how
much of the preemptor's need a bundle frees in the domain per resource it takes.
"""

from __future__ import annotations

from scheduler.actions.eviction import GangPreemptArguments
from scheduler.actions.preempt import preempt_all
from scheduler.framework.action import Action
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.session import Session


class GangPreempt(Action[GangPreemptArguments]):
    """preempt with Volcano 1.15's gangpreempt arguments."""

    name = "gangpreempt"

    def execute(self, session: Session, state: CycleState) -> None:
        preempt_all(session, state, self.arguments)
