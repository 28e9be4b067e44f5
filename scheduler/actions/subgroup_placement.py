"""Placing a gang with spec.subGroupPolicy one subgroup at a time: the subgroups still
needed for minSubGroups first, then the default group, then the others; each subgroup
whole or not at all and, with its own networkTopology, inside one domain of its tier
within the gang's own domain. The gang is kept when minMember, minTaskMember and every
policy's minSubGroups are placed, else all of it is discarded and the gang says which
subgroups wait and why (actions/allocate.py)."""

from __future__ import annotations

from scheduler.actions.placement import keep_placements, place_tasks
from scheduler.api.gang_state import PLACED_STATUSES, gang_shortfall
from scheduler.api.job import JobInfo
from scheduler.api.node import NodeInfo
from scheduler.api.queue import QueueInfo
from scheduler.api.reasons import (
    NO_TOPOLOGY_DOMAIN_FITS,
    NOT_ENOUGH_RESOURCES,
    QUEUE_SHARE_EXCEEDED,
)
from scheduler.api.session_topology import (
    SessionTopology,
    gang_request,
    no_room_message,
    ordered_candidates,
    placed_nodes,
)
from scheduler.api.subgroups import SubGroup, SubGroupKey, split, whole_count
from scheduler.api.task import TERMINAL_STATUSES, TaskInfo, TaskStatus
from scheduler.api.topology import Domain
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.node_picker import NodePicker
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


def allocate_by_subgroup(
    session: Session, state: CycleState, picker: NodePicker, queue: QueueInfo, job: JobInfo
) -> None:
    """Place a gang with subgroups: inside one domain of its own networkTopology when it
    has one (tried in order, as a plain topology gang's), else over every node."""
    view = state.topology
    spec = job.network_topology
    if view is not None and spec is not None and (spec.hard or view.prefer):
        limit = view.limit(spec) if spec.hard else view.topology.highest_tier
        for domain in _gang_domains(view, job, limit):
            if _place_subgroups(session, state, picker, queue, job, view, domain):
                return
            if job.wait_reason == QUEUE_SHARE_EXCEEDED:
                session.record_attempt(job, placed=False)
                return
        if spec.hard:
            session.record_attempt(job, placed=False)
            what = view.topology.describe_tiers(limit)
            job.wait(
                NO_TOPOLOGY_DOMAIN_FITS,
                f"no {what} holds the gang with its subgroups whole; {_subgroup_waits(job)}",
            )
            return
    if _place_subgroups(session, state, picker, queue, job, view, None):
        return
    session.record_attempt(job, placed=False)


def _gang_domains(view: SessionTopology, job: JobInfo, limit: int) -> list[Domain]:
    """The domains a gang with subgroups may go in: those holding its placed members, or
    those whose free room holds what it needs first (its default group and the subgroups
    still needed for minSubGroups)."""
    placed = placed_nodes(job)
    if placed:
        return view.topology.containing(placed, limit)
    groups, default = split(job.subgroup_policies, job.pending_tasks())
    needed = list(default)
    for policy in job.subgroup_policies:
        count = policy.min_subgroups
        for group in groups:
            if count <= 0:
                break
            if group.policy is policy:
                needed.extend(group.members[: policy.size])
                count -= 1
    return ordered_candidates(view.topology.domains(limit), view, gang_request(needed))


def _place_subgroups(
    session: Session,
    state: CycleState,
    picker: NodePicker,
    queue: QueueInfo,
    job: JobInfo,
    view: SessionTopology | None,
    bound: Domain | None,
) -> bool:
    """Place the gang's subgroups one at a time (those still needed for minSubGroups
    first), then its default group, then the other subgroups; keep it all when the gang
    is ready or pipelined, else discard it all and say what is short. `bound` is the
    gang's own domain, which every placement stays inside."""
    groups, default = split(job.subgroup_policies, job.tasks.values())
    base = (
        picker
        if bound is None or view is None
        else picker.within(bound.name, view.node_list(bound))
    )
    statements: list[Statement] = []
    tried: set[SubGroupKey] = set()
    for policy in job.subgroup_policies:
        needed = policy.min_subgroups - whole_count(policy, groups, PLACED_STATUSES)
        # A subgroup with members already placed is completed before a fresh one.
        candidates = sorted(
            (g for g in groups if g.policy is policy and g.pending() and g.could_be_whole()),
            key=lambda g: g.placed(PLACED_STATUSES) == 0,
        )
        for group in candidates:
            if needed <= 0 or job.wait_reason == QUEUE_SHARE_EXCEEDED:
                break
            tried.add(group.key)
            statement = _place_subgroup(
                session, state, picker, base, queue, job, group, view, bound
            )
            if statement is not None:
                statements.append(statement)
                needed -= 1
    pending_default = [t for t in default if t.status is TaskStatus.PENDING and not t.gated]
    if pending_default and job.wait_reason != QUEUE_SHARE_EXCEEDED:
        statement = Statement(session)
        tasks = session.sorted_tasks(pending_default)
        place_tasks(session, state, base, queue, job, tasks, statement, explain=bound is None)
        statements.append(statement)
    for group in groups:
        if group.key in tried or not group.pending():
            continue
        if not group.could_be_whole():
            job.subgroup_waits[group.name] = (
                f"it has {len(group.members)} of its {group.policy.size} pods; it waits for "
                f"the rest"
            )
            continue
        if job.wait_reason == QUEUE_SHARE_EXCEEDED:
            break
        statement = _place_subgroup(session, state, picker, base, queue, job, group, view, bound)
        if statement is not None:
            statements.append(statement)
    if keep_placements(session, state, job, statements):
        return True
    short = gang_shortfall(job)
    picker.release(statements)
    if bound is None:
        job.wait(NOT_ENOUGH_RESOURCES, f"{short}; {_subgroup_waits(job)}")
    return False


def _place_subgroup(
    session: Session,
    state: CycleState,
    root: NodePicker,
    base: NodePicker,
    queue: QueueInfo,
    job: JobInfo,
    group: SubGroup,
    view: SessionTopology | None,
    bound: Domain | None,
) -> Statement | None:
    """Place one subgroup whole, or nothing of it: inside one domain of its policy's
    networkTopology (within `bound`) when it has one, else on `base`'s nodes. Returns the
    statement of its placements, or None after noting why it waits."""
    tasks = session.sorted_tasks(group.pending())
    spec = group.policy.network_topology
    if view is not None and spec is not None and (spec.hard or view.prefer):
        limit = view.limit(spec) if spec.hard else view.topology.highest_tier
        for domain in _subgroup_domains(view, group, tasks, limit, bound):
            inner = root.within(domain.name, view.node_list(domain))
            statement = Statement(session)
            place_tasks(session, state, inner, queue, job, tasks, statement, explain=False)
            if group.whole(PLACED_STATUSES):
                return statement
            root.release([statement])
            if job.wait_reason == QUEUE_SHARE_EXCEEDED:
                return None
        if spec.hard:
            _subgroup_waits_for(
                job, group, tasks, _why_no_subgroup_domain(session, view, group, tasks, limit)
            )
            return None
    statement = Statement(session)
    place_tasks(session, state, base, queue, job, tasks, statement, explain=False)
    if group.whole(PLACED_STATUSES):
        return statement
    unplaced = next((t for t in tasks if t.status is TaskStatus.PENDING), tasks[0])
    why = job.wait_message if job.wait_reason == QUEUE_SHARE_EXCEEDED else base.failure(unplaced)
    root.release([statement])
    _subgroup_waits_for(job, group, tasks, why)
    return None


def _subgroup_domains(
    view: SessionTopology,
    group: SubGroup,
    tasks: list[TaskInfo],
    limit: int,
    bound: Domain | None,
) -> list[Domain]:
    """The domains a subgroup may go in: those holding its placed members, or those whose
    free room holds the members it still needs; only inside `bound`."""
    placed = {
        t.node_name
        for t in group.members
        if t.node_name and t.status is not TaskStatus.PENDING and t.status not in TERMINAL_STATUSES
    }
    if placed:
        domains = view.topology.containing(placed, limit)
    else:
        need = gang_request(tasks[: group.policy.size])
        domains = ordered_candidates(view.topology.domains(limit), view, need)
    if bound is None:
        return domains
    return [domain for domain in domains if domain.nodes <= bound.nodes]


def _why_no_subgroup_domain(
    session: Session, view: SessionTopology, group: SubGroup, tasks: list[TaskInfo], limit: int
) -> str:
    def admits(task: TaskInfo, node: NodeInfo) -> bool:
        return session.admits(task, node).ok

    needed = tasks[: max(group.policy.size - group.placed(PLACED_STATUSES), 1)]
    return no_room_message(view.topology, limit, needed, session.nodes, admits)


def _subgroup_waits_for(job: JobInfo, group: SubGroup, tasks: list[TaskInfo], why: str) -> None:
    """Note why a subgroup waits, on the job and on its pending pods."""
    job.subgroup_waits[group.name] = why
    message = f"subgroup {group.name} ({group.policy.size} pods, placed whole) waits: {why}"
    for task in tasks:
        job.fit_errors[task.uid] = message


def _subgroup_waits(job: JobInfo) -> str:
    """The first waiting subgroups and why, for the gang's message."""
    if not job.subgroup_waits:
        return "no subgroup could be placed whole"
    shown = list(job.subgroup_waits.items())[:3]
    text = "; ".join(f"subgroup {name} waits: {why}" for name, why in shown)
    more = len(job.subgroup_waits) - len(shown)
    return text + (f"; and {more} more subgroups wait" if more > 0 else "")
