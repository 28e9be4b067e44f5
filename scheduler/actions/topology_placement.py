"""Placing a topology gang (spec.networkTopology, or a native PodGroup's topology key)
inside one domain: the admissible domains tried in order, lowest tier then tightest fit,
each with a node picker narrowed to its nodes; hard mode waits when none holds the gang,
soft mode falls back to placing it anywhere (actions/allocate.py)."""

from __future__ import annotations

from scheduler.actions.placement import Outcome, keep_placements, place_tasks
from scheduler.api.job import JobInfo, NetworkTopology
from scheduler.api.node import NodeInfo
from scheduler.api.queue import QueueInfo
from scheduler.api.reasons import NO_TOPOLOGY_DOMAIN_FITS
from scheduler.api.session_topology import (
    SessionTopology,
    gang_request,
    no_room_message,
    ordered_candidates,
    placed_nodes,
)
from scheduler.api.task import TaskInfo
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.node_picker import NodePicker
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


def allocate_in_domain(
    session: Session,
    state: CycleState,
    picker: NodePicker,
    queue: QueueInfo,
    job: JobInfo,
    view: SessionTopology,
    spec: NetworkTopology,
) -> bool:
    """Place a topology gang inside one domain, trying the admissible domains in order
    (lowest tier, then tightest fit); True when it is settled (placed, or waits as hard
    mode says), False when a soft gang falls back to being placed anywhere.

    A gang with members already placed (a later member, a scale-up) tries only the
    domains that hold all of them; a fresh gang tries those whose free room holds all its
    pending pods, so the search is linear in domains and never tries a hopeless one."""
    tasks = session.sorted_tasks(job.pending_tasks())
    if not tasks:
        return True
    limit = view.limit(spec) if spec.hard else view.topology.highest_tier
    placed = placed_nodes(job)
    if placed:
        joining = True
        first = tasks[0].request
        candidates = [
            domain
            for domain in view.topology.containing(placed, limit)
            if first.fits_in(view.idle(domain)[1])
        ]
    else:
        joining = False
        candidates = ordered_candidates(view.topology.domains(limit), view, gang_request(tasks))
    for domain in candidates:
        statement = Statement(session)
        inner = picker.within(domain.name, view.node_list(domain))
        outcome = place_tasks(session, state, inner, queue, job, tasks, statement, explain=False)
        whole = outcome is Outcome.PLACED or (joining and len(statement) > 0)
        if whole and keep_placements(session, state, job, [statement]):
            return True
        inner.discard(statement)
        if outcome is Outcome.QUEUE_FULL:
            # The queue's share refuses the gang wherever it goes: it waits, as any gang.
            session.record_attempt(job, placed=False)
            return True
    if not spec.hard:
        return False
    session.record_attempt(job, placed=False)
    job.wait(NO_TOPOLOGY_DOMAIN_FITS, _why_no_domain(session, view, limit, tasks, placed))
    return True


def _why_no_domain(
    session: Session,
    view: SessionTopology,
    limit: int,
    tasks: list[TaskInfo],
    placed: set[str],
) -> str:
    def admits(task: TaskInfo, node: NodeInfo) -> bool:
        return session.admits(task, node).ok

    topology = view.topology
    if not placed:
        return no_room_message(topology, limit, tasks, session.nodes, admits)
    holding = topology.containing(placed, limit)
    what = topology.describe_tiers(limit)
    if not holding:
        return (
            f"the gang's placed pods are not all inside one {what}, so its {len(tasks)} "
            f"other pods cannot join them (hard mode); they wait"
        )
    names = ", ".join(domain.name for domain in holding)
    return (
        f"no {what} holding the gang's placed pods ({names}) has room for its "
        f"{len(tasks)} other pods"
    )
