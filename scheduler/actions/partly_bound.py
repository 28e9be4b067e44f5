"""Partly bound gangs (api/gang_state.py: some members bound, the gang never ready since it
was last Pending; a scheduler stopped between the binds of a gang, or a bind was refused
for good): which there are, and what becomes of each once allocate has tried to complete it
on the room that is left, its bound members staying where they are.

A gang allocate completed is said to be so. One it could not complete holds the room its
missing members need against every other gang (framework/holds.py, PARTLY_BOUND) until it
has been partly bound for `partly-bound-timeout` (since its first member was bound, as the
API server says); then its bound members are evicted through the Eviction API, so that it
goes back to pending whole. An undo a PodDisruptionBudget refuses is tried again after a
backoff, its room still held. The PodGroup's PartlyBound condition says which, why and
when (job.completion)."""

from __future__ import annotations

from scheduler.actions.backoff import retry_due
from scheduler.api.gang_state import (
    gang_placed,
    gang_ready,
    holds_room,
    partly_bound,
    partly_bound_since,
)
from scheduler.api.job import JobInfo
from scheduler.api.reasons import (
    PARTLY_BOUND_COMPLETED,
    PARTLY_BOUND_HOLDING,
    PARTLY_BOUND_UNDO_REFUSED,
    PARTLY_BOUND_UNDOING,
    PARTLY_BOUND_UNDONE,
)
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.api.timestamps import format_rfc3339
from scheduler.api.verdicts import Completion
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.holds import HoldKind
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


def partly_bound_gangs(session: Session) -> list[tuple[float | None, JobInfo]]:
    """The session's partly bound gangs, the longest partly bound first, each with since
    when (None: a time no bound member says, counted as now)."""
    now = session.snapshot.now
    found: list[tuple[float, str, float | None, JobInfo]] = []
    for job in session.active_jobs.values():
        if job.shadow or job.invalid is not None or not partly_bound(job):
            continue
        since = partly_bound_since(job)
        found.append((now if since is None else since, job.key, since, job))
    found.sort(key=lambda item: (item[0], item[1]))
    return [(since, job) for _, _, since, job in found]


def decide_completion(
    session: Session,
    state: CycleState,
    job: JobInfo,
    since: float | None,
    timeout: float,
    bound: int,
) -> None:
    """Say what becomes of a partly bound gang that allocate has just tried to complete
    (`bound` of its members were bound before): completed; else its missing members' room
    held against every other gang until it has been partly bound for `timeout`, then undone
    (its bound members evicted); an undo the Eviction API refused is tried again after a
    backoff, the room held meanwhile."""
    now = session.snapshot.now
    deadline = (now if since is None else since) + timeout
    if gang_ready(job):
        job.completion = Completion(
            since, deadline, PARTLY_BOUND_COMPLETED, _completed(job, since, bound)
        )
        return
    refusal = session.snapshot.eviction_refusals.get(job.key, "")
    if gang_placed(job) or now < deadline or job.count(TaskStatus.BINDING):
        reason, why = PARTLY_BOUND_HOLDING, _undone_at(deadline)
    elif refusal and not retry_due(session, job):
        reason, why = PARTLY_BOUND_UNDO_REFUSED, _undo_refused(refusal)
    elif not holds_room(job):
        # Its placed members all finished: there is nothing to evict, and no room of its
        # own to keep. It is no longer held for; it is still tried first.
        job.completion = Completion(
            since, deadline, PARTLY_BOUND_UNDONE, _nothing_to_undo(timeout, bound)
        )
        return
    else:
        _undo(session, job, timeout)
        job.completion = Completion(
            since, deadline, PARTLY_BOUND_UNDOING, _undoing(job, timeout, since)
        )
        return
    held = ""
    if not gang_placed(job):
        held = state.holds.describe(
            state.holds.hold_missing(job, deadline - timeout, HoldKind.PARTLY_BOUND)
        )
    job.completion = Completion(since, deadline, reason, _holding(job, since, bound, held, why))


def _undo(session: Session, job: JobInfo, timeout: float) -> None:
    """Evict the bound members of a partly bound gang, as one group (the evictor sends
    none of it if a PodDisruptionBudget refuses one)."""
    reason = (
        f"gang {job.key} could not be completed within {timeout:g}s of its first bind: its "
        f"bound members are evicted so that it goes back to pending whole"
    )
    statement = Statement(session)
    for task in sorted(job.tasks_in(TaskStatus.RUNNING, TaskStatus.BOUND), key=_by_name):
        statement.evict(task, reason)
    statement.commit(undoing=job.key)


def _by_name(task: TaskInfo) -> str:
    return task.name


def _since(since: float | None) -> str:
    if since is None:
        return "a time no bound member says"
    return format_rfc3339(since)


# How many nodes a message names before it counts the rest.
_NODES_NAMED = 8


def _completed(job: JobInfo, since: float | None, bound: int) -> str:
    nodes = sorted({task.node_name for task in job.tasks_in(TaskStatus.ALLOCATED)})
    named = ", ".join(nodes[:_NODES_NAMED])
    if len(nodes) > _NODES_NAMED:
        named += f" and {len(nodes) - _NODES_NAMED} more nodes"
    return (
        f"{bound} of its members were bound since {_since(since)} but the gang had not run "
        f"whole (a scheduler stopped between its binds, or a bind was refused for good); its "
        f"{job.count(TaskStatus.ALLOCATED)} missing members were placed ahead of every other "
        f"gang, on {named}"
    )


def _holding(job: JobInfo, since: float | None, bound: int, held: str, why: str) -> str:
    if gang_placed(job):
        waits = "its missing members wait for the pods evicted for them to leave"
    else:
        cause = job.wait_message or "its missing members cannot be placed yet"
        room = f"; the room they need is held against every other gang: {held}" if held else ""
        waits = f"its missing members cannot be placed yet ({cause}){room}"
    return (
        f"{bound} of its members are bound since {_since(since)}, fewer than the gang needs; "
        f"{waits}; {why}"
    )


def _undone_at(deadline: float) -> str:
    return (
        f"it is undone (its bound members evicted) at {format_rfc3339(deadline)} if it is not "
        f"complete by then"
    )


def _undo_refused(refusal: str) -> str:
    return (
        f"its undo was refused ({refusal}); it is tried again after a backoff, and its "
        f"missing members' room stays held meanwhile"
    )


def _nothing_to_undo(timeout: float, bound: int) -> str:
    return (
        f"it could not be completed within {timeout:g}s of its first bind, but its {bound} "
        f"placed members finished: there is nothing to evict, and it is no longer held for; "
        f"its missing members are placed when they fit, before other gangs"
    )


def _undoing(job: JobInfo, timeout: float, since: float | None) -> str:
    evicted = sorted(job.tasks_in(TaskStatus.RELEASING), key=_by_name)
    bare = [task.name for task in evicted if not task.owner_uid]
    text = (
        f"it could not be completed within {timeout:g}s of its first bind "
        f"({_since(since)}): its {len(evicted)} bound members are evicted through the "
        f"Eviction API, and the gang goes back to pending whole"
    )
    if bare:
        text += (
            f"; {len(bare)} of them ({', '.join(bare[:5])}{', ...' if len(bare) > 5 else ''}) "
            f"have no controller to recreate them: recreate them to run the gang"
        )
    return text
