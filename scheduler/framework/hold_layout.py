"""Where the members a held gang still needs would go (framework/holds.py, step 1): the
members it needs (those of the roles short of their minTaskMember first, then the next
ones up to minMember), each on the first node, ranked by how many of its first member the
node has free now and then by name, that admits it (static filters), whose allocatable,
less what older holds and this layout already took, has room for it, and, for a member
with ResourceClaims, whose devices could hold its claims were they all free.

A gang that needs its room now (`free_first`: a partly bound gang, whose bound members
wait for the rest; provisioned capacity) is laid out on the room free now first, node by
node, and only what fits in none of it on nodes emptied of their pods: laid out on
emptied nodes alone, its members could all go to the few nodes ranked first, and the
room free on the others, which it needs too, would be left to other gangs."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator

from scheduler.api.gang_state import members_placed, placed_by_role
from scheduler.api.job import JobInfo
from scheduler.api.node import NodeInfo
from scheduler.api.resources import Resource, is_device_count
from scheduler.api.task import TaskInfo
from scheduler.framework.session import Session


def needed_members(job: JobInfo, pending: list[TaskInfo]) -> list[TaskInfo]:
    """The pending members (in placement order) the gang still needs to run: those of the
    roles short of their minTaskMember first, then the next ones up to minMember."""
    short = max(job.min_member - members_placed(job), 0)
    role_short: dict[str, int] = {}
    if job.min_task_member:
        placed = placed_by_role(job)
        for role, need in job.min_task_member.items():
            if need > placed.get(role, 0):
                role_short[role] = need - placed.get(role, 0)
    chosen: list[TaskInfo] = []
    taken: set[str] = set()
    for task in pending:
        if role_short.get(task.role, 0) > 0:
            role_short[task.role] -= 1
            chosen.append(task)
            taken.add(task.uid)
    for task in pending:
        if len(chosen) >= short:
            break
        if task.uid not in taken:
            chosen.append(task)
    return chosen


def lay_out_members(
    session: Session,
    members: list[TaskInfo],
    taken: dict[str, Resource],
    slots_taken: dict[str, int],
    could_fit: Callable[[TaskInfo, NodeInfo], bool] | None,
    *,
    partial: bool,
    with_devices: dict[str, list[TaskInfo]] | None = None,
    free_first: bool = False,
) -> dict[NodeInfo, tuple[Resource, int]] | None:
    """Where the members would go on nodes emptied of all but what older holds took
    (`taken`, `slots_taken`, by node), preferring the nodes with the most free room now (a
    member with claims only where `could_fit` says its devices could; those members, by
    node, into `with_devices`); with `free_first`, on the room free now first (the module
    docstring). When some member fits nowhere, None, or (`partial`) the layout of the
    others."""
    first = members[0].request
    # Ranked lazily: a heap of every node, popped as far as the members need (a gang
    # of 8 on 5,000 nodes looks at a handful), rather than a sort per holder.
    heap = [(-_how_many(first, n.idle), n.name, n) for n in session.node_list]
    heapq.heapify(heap)
    ranked: list[NodeInfo] = []
    layout: dict[NodeInfo, tuple[Resource, int]] = {}

    def free_now(node: NodeInfo) -> tuple[Resource, int]:
        # Older holds are out of the node's idle room and pod count already.
        return positive(node.idle), node.max_pods - node.pod_count

    def emptied(node: NodeInfo) -> tuple[Resource, int]:
        room = node.allocatable.clone().sub(taken.get(node.name, Resource()))
        slots = node.max_pods - slots_taken.get(node.name, 0)
        laid, pods = layout.get(node, (None, 0))
        return (room if laid is None else room.sub(laid)), slots - pods

    left = members
    for room_of in (free_now, emptied) if free_first else (emptied,):
        room: dict[str, Resource] = {}
        slots: dict[str, int] = {}
        unplaced: list[TaskInfo] = []
        for task in left:
            chosen: NodeInfo | None = None
            for node in _ranked(ranked, heap):
                if node.name not in room:
                    room[node.name], slots[node.name] = room_of(node)
                if slots[node.name] < 1 or not task.node_request.fits_in(room[node.name]):
                    continue
                if not session.admits(task, node).ok:
                    continue
                if task.devices is not None and could_fit is not None and not could_fit(task, node):
                    continue
                chosen = node
                break
            if chosen is None:
                unplaced.append(task)
                continue
            room[chosen.name].sub(task.node_request)
            slots[chosen.name] -= 1
            if task.devices is not None and with_devices is not None:
                with_devices.setdefault(chosen.name, []).append(task)
            amount, pods = layout.get(chosen, (Resource(), 0))
            layout[chosen] = (amount.add(task.node_request), pods + 1)
        left = unplaced
    if left and not partial:
        return None
    return layout


def positive(resource: Resource) -> Resource:
    """The vector with negative dimensions (a node over-committed by another scheduler's
    pods) read as zero."""
    return Resource(
        max(resource.cpu, 0),
        max(resource.memory, 0),
        {name: max(value, 0) for name, value in resource.scalars.items()}
        if resource.scalars
        else None,
    )


def _ranked(seen: list[NodeInfo], heap: list[tuple[float, str, NodeInfo]]) -> Iterator[NodeInfo]:
    """The nodes in rank order: those already taken off the heap, then the rest, popped
    (and kept in `seen`) only as far as the caller reads."""
    yield from list(seen)
    while heap:
        node = heapq.heappop(heap)[2]
        seen.append(node)
        yield node


def _how_many(request: Resource, free: Resource) -> float:
    """How many copies of `request` fit in `free` (fractions count: a ranking key)."""
    best = float("inf")
    for value, available in ((request.cpu, free.cpu), (request.memory, free.memory)):
        if value > 0:
            best = min(best, max(available, 0) / value)
    for name, value in request.scalars.items():
        if value > 0 and not is_device_count(name):
            best = min(best, max(free.scalars.get(name, 0), 0) / value)
    return best if best != float("inf") else 0.0
