"""The Action interface: one step of a scheduling cycle (enqueue, allocate, backfill, ...)."""

from __future__ import annotations

from typing import ClassVar

from scheduler.framework.arguments import A, Configurable
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.session import Session


class Action(Configurable[A]):
    """Base of every action; `execute` changes the session through Statements, and shares
    with plugins and later actions only through the session's record_* methods and the
    cycle state's fields.

    An action declares its arguments model as the type parameter:
    `class Allocate(Action[AllocateArguments])`."""

    kind: ClassVar[str] = "action"

    def execute(self, session: Session, state: CycleState) -> None:
        """Run the action over the session, with the cycle's state."""
        raise NotImplementedError
