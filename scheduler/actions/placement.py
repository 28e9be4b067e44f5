"""Placing a gang's tasks into one statement on a node picker's best nodes, and keeping
those placements when the gang can run: the steps allocate takes for every gang, and its
topology and subgroup placements take again domain by domain (actions/topology_placement.py,
actions/subgroup_placement.py)."""

from __future__ import annotations

import enum

from scheduler.api.gang_state import partly_bound
from scheduler.api.job import JobInfo
from scheduler.api.queue import QueueInfo
from scheduler.api.reasons import (
    NOT_ENOUGH_RESOURCES,
    QUEUE_SHARE_EXCEEDED,
    queue_share_would_exceed,
)
from scheduler.api.task import TaskInfo
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.node_picker import NodePicker
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


class Outcome(enum.Enum):
    """How placing a list of tasks ended."""

    PLACED = "placed"
    NO_NODE = "no node"
    QUEUE_FULL = "queue full"


def place_tasks(
    session: Session,
    state: CycleState,
    picker: NodePicker,
    queue: QueueInfo,
    job: JobInfo,
    tasks: list[TaskInfo],
    statement: Statement,
    *,
    explain: bool = True,
) -> Outcome:
    """Place the tasks in order on the picker's best nodes until one finds none or the
    queue refuses it; `explain` records why on the job (a domain attempt does not: the
    next domain may hold the gang)."""
    # Asked once for the lot when the queue's answer adds up; else once per task. Capacity
    # an autoscaler provisioned for the gang exists for it alone: its queue's share of the
    # cluster, which that capacity swelled, does not hold it back.
    # A partly bound gang holds room already: completing it comes first, whatever its share.
    queue_takes_all = (
        job.key in state.scale_up.provisioned()
        or partly_bound(job)
        or session.allocatable_all(queue, tasks)
    )
    for task in tasks:
        node = picker.pick(task)
        if node is None:
            if explain:
                message = picker.failure(task)
                job.fit_errors[task.uid] = message
                job.wait(NOT_ENOUGH_RESOURCES, message)
            return Outcome.NO_NODE
        # Checked after the pick so that a full cluster is reported as such,
        # not as the queue's share (which is capped by the cluster's size).
        if not queue_takes_all and not session.allocatable(queue, task):
            picker.reconsider(task, node)
            job.wait(QUEUE_SHARE_EXCEEDED, queue_share_would_exceed(queue.name))
            return Outcome.QUEUE_FULL
        if picker.picked_now:
            statement.allocate(task, node)
        else:
            statement.pipeline(task, node)
        picker.reconsider(task, node)
    return Outcome.PLACED


def keep_placements(
    session: Session, state: CycleState, job: JobInfo, statements: list[Statement]
) -> bool:
    """Commit the job's placements when its gang is ready, or keep them pipelined when it
    can start once releasing pods go; False when neither (the caller discards)."""
    if session.job_ready(job):
        session.record_attempt(job, placed=any(len(statement) for statement in statements))
        for statement in statements:
            statement.commit()
        return True
    if session.job_pipelined(job):
        # Room is promised on releasing resources: keep it, bind nothing yet. The
        # members placed on idle room hold it for this session and are pipelined when
        # it closes, so that none counts as running.
        state.pipelined.extend(statements)
        session.record_attempt(job, placed=True)
        return True
    return False
