"""The Action interface: one step of a scheduling cycle (enqueue, allocate, backfill, ...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from scheduler.framework.session import Session


class Action:
    """Base of every action; `execute` changes the session through Statements."""

    name: ClassVar[str] = ""

    def __init__(self, arguments: Mapping[str, Any] | None = None) -> None:
        self.arguments: Mapping[str, Any] = arguments or {}

    def execute(self, session: Session) -> None:
        """Run the action over the session."""
        raise NotImplementedError
