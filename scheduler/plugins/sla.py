"""sla: Volcano's service-level plugin: how long a gang may wait before it starves.

Volcano's sla reorders jobs and admits a starving one; it holds nothing, so under a
stream of small gangs a big one still never finds enough free at once. muster holds
room for a starving gang until it fits (framework/holds.py), with or without this
plugin: listing it sets the waiting time (`sla-waiting-time`, a Go duration; default
60s) and can turn holding off (`holdResources: false`). A PodGroup's own
`volcano.sh/sla-waiting-time` (or `sla-waiting-time`) annotation comes first.
As Volcano's, the plugin orders jobs by when they starve (earliest first) and lets a
starving gang be admitted (enqueue) whatever the cluster's free room.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from scheduler.api.job import JobInfo
from scheduler.api.timestamps import parse_rfc3339
from scheduler.framework.answers import SortKey, Vote
from scheduler.framework.arguments import Arguments, Duration
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.holds import (
    DEFAULT_HOLDING_GANGS,
    DEFAULT_WAITING_TIME,
    Holds,
    StarvationPolicy,
)
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session


class SlaArguments(Arguments):
    """sla's arguments: Volcano's `sla-waiting-time`, and muster's `holdResources` and
    `holdingGangs` (how many starving gangs hold room at once, the longest starving)."""

    waiting_time: Duration = Field(DEFAULT_WAITING_TIME, alias="sla-waiting-time", gt=0)
    hold_resources: bool = Field(True, alias="holdResources", strict=True)
    holding_gangs: int = Field(DEFAULT_HOLDING_GANGS, alias="holdingGangs", ge=1, strict=True)


class SlaPlugin(Plugin[SlaArguments]):
    """Sets the session's starvation policy; orders and admits starving gangs first."""

    name = "sla"

    def __init__(self, arguments: SlaArguments | Mapping[str, Any] | None = None) -> None:
        super().__init__(arguments)
        # The session's holds, whose starvation policy this plugin sets when it opens.
        self._holds: Holds | None = None

    def on_session_open(self, session: Session, state: CycleState) -> None:
        self._holds = state.holds
        args = self.arguments
        state.holds.policy = StarvationPolicy(
            waiting_time=args.waiting_time,
            hold=args.hold_resources,
            holding_gangs=args.holding_gangs,
        )

    def job_order(self, job: JobInfo) -> SortKey:
        # When the job starves: earlier first (a job with no creation time last).
        created = parse_rfc3339(job.creation_timestamp)
        if created is None:
            return float("inf")
        wait = job.settings.waiting_time
        return created + (wait if wait is not None else self.arguments.waiting_time)

    def job_enqueueable(self, job: JobInfo) -> Vote:
        holds = self._holds
        if holds is None or holds.starving_since(job) is None:
            return Vote.ABSTAIN
        return Vote.PERMIT
