"""overcommit: Volcano's plugin for the enqueue action's overcommit factor.

muster's enqueue always checks that the cluster can hold an admitted gang's
minResources, up to `overcommit-factor` times its allocatable; listing this plugin
(as Volcano's stock config does) sets that factor, which it hands to enqueue through the
cycle's state when the session opens. It has no extension points.
"""

from __future__ import annotations

from pydantic import Field

from scheduler.framework.arguments import Arguments, Factor
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session

# Volcano's default: admit up to 1.2x the cluster's allocatable.
DEFAULT_FACTOR = 1.2


class OvercommitArguments(Arguments):
    """overcommit's argument, in Volcano's spelling; below 1 is refused (Volcano warns
    and uses 1.2; muster says so at load instead)."""

    overcommit_factor: Factor = Field(DEFAULT_FACTOR, alias="overcommit-factor")


class OvercommitPlugin(Plugin[OvercommitArguments]):
    """Carries the overcommit factor to the enqueue action."""

    name = "overcommit"

    def on_session_open(self, session: Session, state: CycleState) -> None:
        state.overcommit_factor = self.arguments.overcommit_factor
