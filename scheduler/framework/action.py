"""The Action interface: one step of a scheduling cycle (enqueue, allocate, backfill, ...)."""

from __future__ import annotations

from typing import ClassVar

from scheduler.framework.arguments import A, Configurable
from scheduler.framework.session import Session


class Action(Configurable[A]):
    """Base of every action; `execute` changes the session through Statements.

    An action declares its arguments model as the type parameter:
    `class Allocate(Action[AllocateArguments])`."""

    kind: ClassVar[str] = "action"

    def execute(self, session: Session) -> None:
        """Run the action over the session."""
        raise NotImplementedError
