"""Which jobs a session leaves settled: those that only a change can move.

A gang that a session placed whole, or failed to place for want of room, gets the same
answer from the next session unless something it depends on changes: its PodGroup or its
pods, the cluster's room (a pod leaves a node, a node comes or changes), a queue or a
policy, or the clock (it starts to starve, its admission times out). The cache
(cache/world.py) keeps such jobs settled until one of those changes, and shares them,
uncopied, with the next sessions (ClusterSnapshot.clone_for_session), which neither try
nor report them and read their queues' figures from the sums the cache keeps per queue
(SettledTotals): a session over a backlog that
cannot move, plus one new gang, costs about what the new gang costs.

The cache makes a session whole (nothing settled) at least every WHOLE_SESSION_SECONDS, so
the clock's rules are never later than that; a job whose clock rule falls due sooner is
not settled. Nor is a job:
- under a config with an action that evicts, or a plugin outside SETTLING_PLUGINS (they
  may change jobs a session does not place): every such session is whole;
- that holds room for starving gangs or is nominated for released room, or is partly bound
  (api/gang_state.py: it is completed, held for or undone every session);
- of a fifo queue (its head holds back the jobs behind it), with pod-to-pod terms (a pod
  placed anywhere may let it in), subgroup policies or a network topology (a native
  PodGroup's topology constraint included);
- that waits for a reason other gangs' placements can lift (its queue's share, say), or
  that was not tried this session (it waits out its backoff).

A settled gang that starves is not a candidate to hold room while settled: when the gang
holding room is placed, the cache makes the next session whole; when a placement pushes
the holder's queue over its share, the next holder is chosen at the next whole session.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.api.gang_state import gang_placed, partly_bound
from scheduler.api.job import JobInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.reasons import (
    CLUSTER_FULL,
    INVALID_PODGROUP,
    NOT_ENOUGH_RESOURCES,
    NOT_ENOUGH_TASKS,
    QUEUE_NOT_FOUND,
    QUEUE_NOT_LEAF,
    QUEUE_NOT_OPEN,
    QUEUE_PARENT_INVALID,
)
from scheduler.api.snapshot import SettledJob
from scheduler.api.task import TaskStatus
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.job_status import phase_after
from scheduler.framework.session import Session

# The longest a settled job goes unreconsidered: the cache's whole-session period.
WHOLE_SESSION_SECONDS = 10.0
# Actions that place pods and evict none: the only ones a session with settled jobs runs.
SETTLING_ACTIONS = frozenset({"enqueue", "allocate", "backfill"})
# Plugins that change no job a session does not place (their session-open reads jobs).
SETTLING_PLUGINS = frozenset(
    {
        "priority",
        "gang",
        "conformance",
        "drf",
        "predicates",
        "proportion",
        "nodeorder",
        "binpack",
        "overcommit",
        "sla",
    }
)
# Why a gang waits, when only its own change or more room lifts it (not another gang's
# placement: those only take room).
_ROOM_OR_OWN_CHANGE = frozenset(
    {
        NOT_ENOUGH_RESOURCES,
        CLUSTER_FULL,
        NOT_ENOUGH_TASKS,
        INVALID_PODGROUP,
        QUEUE_NOT_FOUND,
        QUEUE_NOT_OPEN,
        QUEUE_NOT_LEAF,
        QUEUE_PARENT_INVALID,
    }
)


def settles(config: SchedulerConfig) -> bool:
    """Whether sessions under `config` may leave jobs settled (and run over settled ones)."""
    plugins = {option.name for tier in config.tiers for option in tier.plugins}
    return set(config.actions) <= SETTLING_ACTIONS and plugins <= SETTLING_PLUGINS


def settled_jobs(session: Session, state: CycleState) -> dict[str, SettledJob]:
    """The jobs of the session's snapshot to keep settled after it (those it found
    settled, and those it settles now), with what the session found of them."""
    snapshot = session.snapshot
    if not settles(session.config):
        return {}
    found = {key: known for key, known in snapshot.settled.items() if key in snapshot.jobs}
    # From the result: the cycle has released its holds by now (framework/cycle.py).
    held = {hold.job for hold in session.result.holds}
    clock = _Clock(
        horizon=snapshot.now + WHOLE_SESSION_SECONDS,
        timeout=state.inqueue_timeout,
        admitted=frozenset(session.result.admitted),
        dequeued=frozenset(session.result.dequeued),
    )
    for key, job in session.active_jobs.items():
        if key in held or key in snapshot.nominated:
            continue
        if _may_settle(session, state, job, clock):
            starving = job.starving is not None and not gang_placed(job)
            found[key] = SettledJob(phase_after(job), starving)
    return found


@dataclass(frozen=True, slots=True)
class _Clock:
    """What the clock's rules read, once per session: the horizon a settled job goes
    unreconsidered to, the Inqueue timeout, and the jobs admitted or sent back now (sets:
    the result's lists hold every gang of a backlog)."""

    horizon: float
    timeout: float
    admitted: frozenset[str]
    dequeued: frozenset[str]


def _may_settle(session: Session, state: CycleState, job: JobInfo, clock: _Clock) -> bool:
    if job.completion is not None or partly_bound(job):
        return False  # completed, held for or undone this session: the next one looks again
    queue = session.queues.get(job.queue)
    if (
        (queue is not None and queue.fifo)
        or job.subgroup_policies
        or job.network_topology
        or job.topology_key
    ):
        return False
    if any(task.topology is not None for task in job.tasks.values()):
        return False
    if job.pending_tasks():
        if job.wait_reason not in _ROOM_OR_OWN_CHANGE:
            return False  # not tried (backoff), or waits on what other gangs do
    elif job.wait_reason and job.wait_reason not in _ROOM_OR_OWN_CHANGE:
        return False
    return not _clock_due(session, state, job, clock)


def _clock_due(session: Session, state: CycleState, job: JobInfo, clock: _Clock) -> bool:
    """Whether a rule of the clock changes the job's answer before the horizon."""
    horizon, timeout = clock.horizon, clock.timeout
    if job.pending_tasks():
        starts = state.holds.starts_starving(job)
        if starts is not None and session.snapshot.now < starts <= horizon:
            return True
    if timeout <= 0 or job.count(*_STARTED) > 0:
        return False
    snapshot = session.snapshot
    since: float | None
    if job.phase is PodGroupPhase.INQUEUE:
        # Admitted now, or when the cache (else the PodGroup's condition) says.
        admitted_now = job.key in clock.admitted
        since = snapshot.now if admitted_now else snapshot.admitted_at.get(job.key)
        since = job.admitted_since if since is None else since
        return since is None or since + timeout <= horizon
    if job.phase is PodGroupPhase.PENDING:
        timed_out_now = job.key in clock.dequeued
        since = snapshot.now if timed_out_now else snapshot.timed_out_at.get(job.key)
        since = job.timed_out_since if since is None else since
        return since is not None and snapshot.now < since + timeout <= horizon
    return False


_STARTED = (
    TaskStatus.ALLOCATED,
    TaskStatus.BINDING,
    TaskStatus.BOUND,
    TaskStatus.RUNNING,
    TaskStatus.SUCCEEDED,
    TaskStatus.FAILED,
    TaskStatus.RELEASING,
)
