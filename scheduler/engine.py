"""The scheduling engine: one session over a snapshot, from actions and plugins to decisions.

No I/O, and no wall clock: time reaches the core only as the snapshot's `now`. The
monotonic `time.perf_counter` is read here and in the cycle builder only to time actions
and plugins for metrics (`SessionResult.timings`); no decision depends on it. The scheduler
process calls `schedule` every period with a snapshot from its cache and hands the
result to the effects layer.
"""

from __future__ import annotations

import time

from scheduler.actions import ACTIONS
from scheduler.api.gang_state import partly_bound
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.framework.config import DEFAULT_CONFIG_YAML, SchedulerConfig, parse_config
from scheduler.framework.cycle import close_cycle, open_cycle
from scheduler.framework.decisions import SessionResult
from scheduler.framework.job_status import close_result
from scheduler.framework.settled import settled_jobs, settles
from scheduler.plugins import PLUGINS


def _undoes(snapshot: ClusterSnapshot) -> bool:
    """Whether a session over the snapshot may evict, whatever its config: allocate undoes
    a partly bound gang once its time is up (never a settled one)."""
    settled = snapshot.settled
    return any(partly_bound(job) for key, job in snapshot.jobs.items() if key not in settled)


def load_config(text: str) -> SchedulerConfig:
    """A config from YAML, checked against the actions and plugins muster has."""
    return parse_config(text, known_actions=ACTIONS, known_plugins=PLUGINS)


def default_config() -> SchedulerConfig:
    """The config muster runs with when none is given."""
    return load_config(DEFAULT_CONFIG_YAML)


def schedule(
    snapshot: ClusterSnapshot, config: SchedulerConfig | None = None, *, copy: bool = True
) -> SessionResult:
    """Run one session; with copy=False the snapshot itself is changed (the caller's own)."""
    config = config or default_config()
    if snapshot.settled and (not settles(config) or _undoes(snapshot)):
        # A session that may change any job (an eviction, a plugin that changes jobs)
        # works on a full copy: a settled job, and every member on a node, is the cache's
        # own record.
        copy = True
    world = snapshot.clone() if copy else snapshot
    cycle = open_cycle(world, config, PLUGINS)
    session, state = cycle.session, cycle.state
    timings: dict[str, float] = {}
    for name in config.actions:
        start = time.perf_counter()
        parsed = config.action_settings(name)
        ACTIONS[name](parsed if parsed is not None else config.action_arguments(name)).execute(
            session, state
        )
        timings[name] = time.perf_counter() - start
    result = close_result(world, close_cycle(cycle), session.queue_figures)
    result.settled = settled_jobs(session, state)
    timings.update({f"plugin:{name}": s for name, s in cycle.plugin_seconds.items()})
    result.timings = timings
    return result
