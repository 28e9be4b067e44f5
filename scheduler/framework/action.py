"""The Action interface: one step of a scheduling cycle (enqueue, allocate, backfill, ...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from scheduler.framework.arguments import Arguments, NoArguments, parse_arguments
from scheduler.framework.session import Session


class Action:
    """Base of every action; `execute` changes the session through Statements."""

    name: ClassVar[str] = ""
    # The action's arguments model (parsed once, when the config loads).
    arguments_model: ClassVar[type[Arguments]] = NoArguments

    def __init__(self, arguments: Arguments | Mapping[str, Any] | None = None) -> None:
        # The engine passes the parsed model; a mapping (tests, tools) is parsed here.
        if isinstance(arguments, Arguments):
            self.arguments: Arguments = arguments
        else:
            self.arguments = parse_arguments("action", self.name, self.arguments_model, arguments)

    def execute(self, session: Session) -> None:
        """Run the action over the session."""
        raise NotImplementedError
