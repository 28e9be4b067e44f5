"""The cycle builder: opening a scheduling cycle over a snapshot, and closing it.

Opening makes the plugins the config lists (one object per plugin per cycle), registers
the extension points each implements (and the config enables) on a new Session, tier by
tier, makes the cycle's state (framework/cycle_state.py) with its session policies, holds
and scale-up, and calls every plugin's `on_session_open` with the session and the state.
The engine then runs the actions. Closing puts the holds into the result, makes scale-up's
decisions while the holds are still in place, gives the held room back, turns the kept
gangs' placements into pipelined ones, names the nominated gangs, and calls every plugin's
`on_session_close`. Time spent opening and closing is read from the monotonic clock for
the metrics only (`SessionResult.timings`, per plugin)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api.gang_state import gang_placed
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.framework.answers import Tiered
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.decisions import HeldRoom, SessionResult
from scheduler.framework.holds import Holds
from scheduler.framework.plugin import EXTENSION_POINTS, Plugin, implements
from scheduler.framework.scaleup import ScaleUp
from scheduler.framework.session import Session


@dataclass(slots=True)
class Cycle:
    """One scheduling cycle: its session, its state, the plugins that judge it, and the
    seconds each plugin spent opening and closing it (for metrics)."""

    session: Session
    state: CycleState
    plugins: list[Plugin[Any]]
    plugin_seconds: dict[str, float]


def open_cycle(
    snapshot: ClusterSnapshot,
    config: SchedulerConfig,
    plugin_types: Mapping[str, type[Plugin[Any]]],
) -> Cycle:
    """A cycle over the snapshot, its plugins made from the config and opened."""
    plugins: list[Plugin[Any]] = []
    points: dict[str, Tiered] = {point: [] for point in EXTENSION_POINTS}
    for tier in config.tiers:
        for point in EXTENSION_POINTS:
            points[point].append([])
        for option in tier.plugins:
            parsed = option.parsed_arguments
            plugin = plugin_types[option.name](parsed if parsed is not None else option.arguments)
            plugins.append(plugin)
            unused = plugin.unused_points()
            for point, flag in EXTENSION_POINTS.items():
                if implements(plugin, point) and option.enabled(flag) and point not in unused:
                    points[point][-1].append(getattr(plugin, point))
    # Whether every plugin asked `allocatable` adds up (Plugin.allocatable_adds_up).
    adds_up = all(
        plugin.allocatable_adds_up
        for plugin in plugins
        if any(plugin.allocatable in tier for tier in points["allocatable"])
    )
    session = Session(snapshot, config, points, allocatable_adds_up=adds_up)
    state = CycleState(Holds(session), ScaleUp(session))
    plugin_seconds: dict[str, float] = {}
    for plugin in plugins:
        # A monotonic clock, for metrics only: no decision reads it.
        start = time.perf_counter()
        plugin.on_session_open(session, state)
        plugin_seconds[plugin.name] = time.perf_counter() - start
    return Cycle(session, state, plugins, plugin_seconds)


def close_cycle(cycle: Cycle) -> SessionResult:
    """Close the cycle and return its result (the caller reads job statuses from the
    snapshot). The session's own record_* methods filled the result while the cycle ran;
    what only the close knows is written here, before the plugins close."""
    session, state = cycle.session, cycle.state
    result = session.result
    holds = state.holds
    result.holds = [
        HeldRoom(
            hold.job.key,
            hold.since,
            {name: amount for name, amount in hold.amounts.items() if not amount.is_empty()},
            hold.kind.value,
        )
        for hold in holds.holds
    ]
    result.starving = sum(
        1
        for job in session.active_jobs.values()
        if job.starving is not None and not gang_placed(job)
    ) + sum(total.starving for total in session.snapshot.settled_totals.values())
    state.scale_up.decide(result, holds.held_for)
    holds.release_all()
    for statement in state.pipelined:
        statement.keep_pipelined()
    # The cache keeps these nominated, so the next session serves them first.
    result.nominated = [key for key, job in session.jobs.items() if job.pipelined]
    for plugin in cycle.plugins:
        start = time.perf_counter()
        plugin.on_session_close(session, state)
        cycle.plugin_seconds[plugin.name] += time.perf_counter() - start
    return result
