"""allocate: place gangs, queue by queue and job by job; a gang commits whole or not at all.

Partly bound gangs come first (api/gang_state.py: some members bound, the gang never ready
since it was last Pending; a scheduler stopped between the binds of a gang, or a bind was
refused for good): each is completed on the room that is left, its bound members staying
where they are, whatever its queue's share; else the room its missing members need is held
against every other gang (framework/holds.py, PARTLY_BOUND); and once it has been partly
bound for `partly-bound-timeout` (since its first member was bound, as the API server says)
its bound members are evicted through the Eviction API, so that it goes back to pending
whole. An undo a PodDisruptionBudget refuses is tried again after a backoff, its
room still held. The PodGroup's PartlyBound condition says which, why and when.

A gang with spec.subGroupPolicy is placed one subgroup at a time (the subgroups still
needed for minSubGroups first, then the default group, then the others), each subgroup
whole or not at all and, with its own networkTopology, inside one domain of its tier
within the gang's own domain; the gang commits when minMember, minTaskMember and every
policy's minSubGroups are placed."""

from __future__ import annotations

import enum
from collections.abc import Collection

from scheduler.actions.allocate_arguments import AllocateArguments
from scheduler.actions.backoff import retry_due
from scheduler.api.gang_state import (
    PLACED_STATUSES,
    WERE_BOUND_STATUSES,
    gang_placed,
    gang_ready,
    gang_shortfall,
    holds_room,
    may_place,
    partly_bound,
    partly_bound_since,
    started_short,
)
from scheduler.api.job import JobInfo, NetworkTopology
from scheduler.api.node import NodeInfo
from scheduler.api.queue import QueueInfo
from scheduler.api.reasons import (
    BEHIND_QUEUE_HEAD,
    NO_TOPOLOGY_DOMAIN_FITS,
    NOT_ENOUGH_RESOURCES,
    PARTLY_BOUND_COMPLETED,
    PARTLY_BOUND_HOLDING,
    PARTLY_BOUND_UNDO_REFUSED,
    PARTLY_BOUND_UNDOING,
    PARTLY_BOUND_UNDONE,
    QUEUE_SHARE_EXCEEDED,
    behind_queue_head,
    queue_share_held,
    queue_share_would_exceed,
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
from scheduler.api.timestamps import format_rfc3339
from scheduler.api.topology import Domain
from scheduler.api.verdicts import Completion
from scheduler.framework.action import Action
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.holds import HoldKind
from scheduler.framework.node_picker import NodePicker
from scheduler.framework.ordering import KeyHeap, OrderedHeap
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


class Allocate(Action[AllocateArguments]):
    """For the queue with the smallest share, its first job: place its pending tasks on the
    best nodes; commit when the gang is ready, keep pipelined placements when the gang can
    start once releasing pods go, else discard everything of the job.

    Partly bound gangs go first (completed, held for, or undone: see the module's
    docstring), then gangs an autoscaler provisioned nodes for. Jobs nominated by the
    previous session (preempt or reclaim released room for them) go next, before any
    queue order, so nobody else takes that room while it is freed.
    A job that failed before waits out its backoff (actions/backoff.py); a failed job
    never stops the jobs behind it, which are popped in turn."""

    name = "allocate"

    def execute(self, session: Session, state: CycleState) -> None:
        args = self.arguments
        picker = NodePicker(
            session,
            state,
            percentage=args.percentage_of_nodes_to_score,
            minimum=args.min_feasible_nodes_to_find,
        )
        holds = state.holds
        holds.on_freed.append(picker.freed)
        served = self._complete_partly_bound(session, state, picker)
        # Gangs an autoscaler provisioned nodes for go next, the oldest first: placed whole
        # if they fit (once admitted), else the room they would take is held against every
        # other gang.
        provisioned = state.scale_up.provisioned()
        actions = session.config.actions
        for key, request in provisioned.items():
            job = session.jobs[key]
            if key in served or job.queue not in session.queues or not job.pending_tasks():
                continue
            if session.job_valid(job) is not None:
                continue
            if may_place(job, actions):
                self._allocate_job(session, state, picker, session.queues[job.queue], job)
            if not gang_placed(job):
                holds.hold_provisioned(job, request.since)
        served |= provisioned.keys()
        starving = holds.holders(served)
        by_queue, nominated, starved = self._jobs_by_queue(session, starving, served)
        for job in sorted(nominated, key=session.job_key):
            self._allocate_job(session, state, picker, session.queues[job.queue], job)
        # Starving gangs next, the longest starving first: each is placed whole if it
        # fits, else holds room (framework/holds.py) that the gangs after it cannot take.
        for job in sorted(starved, key=lambda j: (starving[j.key], j.key)):
            self._allocate_job(session, state, picker, session.queues[job.queue], job)
            if not gang_placed(job):
                holds.hold_for(job, starving[job.key])
        queues: OrderedHeap[QueueInfo] = OrderedHeap(
            session.compare_queues, (session.queues[name] for name in by_queue)
        )
        while queues:
            queue = queues.pop()
            jobs = by_queue[queue.name]
            if session.overused(queue):
                self._hold_back(jobs, queue)
                continue
            job = jobs.pop()
            self._allocate_job(session, state, picker, queue, job)
            if queue.fifo and session.result.attempts.get(job.key) is False:
                # Nothing of the head of a fifo queue could be placed: the rest wait.
                while jobs:
                    jobs.pop().wait(BEHIND_QUEUE_HEAD, behind_queue_head(queue.name, job.key))
            if jobs:
                queues.push(queue)

    def _complete_partly_bound(
        self, session: Session, state: CycleState, picker: NodePicker
    ) -> set[str]:
        """Serve the partly bound gangs, the longest partly bound first: each is completed,
        held for, or undone (`_complete`). Returns their keys."""
        now = session.snapshot.now
        found: list[tuple[float, str, float | None, JobInfo]] = []
        for job in session.active_jobs.values():
            if job.shadow or job.invalid is not None or not partly_bound(job):
                continue
            since = partly_bound_since(job)
            found.append((now if since is None else since, job.key, since, job))
        found.sort(key=lambda item: (item[0], item[1]))
        timeout = self.arguments.partly_bound_timeout
        for _, _, since, job in found:
            self._complete(session, state, picker, job, since, timeout)
        return {key for _, key, _, _ in found}

    def _complete(
        self,
        session: Session,
        state: CycleState,
        picker: NodePicker,
        job: JobInfo,
        since: float | None,
        timeout: float,
    ) -> None:
        """Complete a partly bound gang on the room that is left (its bound members stay
        where they are), whatever its phase or its queue's share: it holds room already.
        Else hold the room its missing members need against every other gang until it has
        been partly bound for `timeout`, then undo it (evict its bound members); an undo
        the Eviction API refused is tried again after a backoff, the room held meanwhile."""
        now = session.snapshot.now
        deadline = (now if since is None else since) + timeout
        bound = job.count(*WERE_BOUND_STATUSES)
        queue = session.queues.get(job.queue)
        if queue is not None and job.pending_tasks() and session.job_valid(job) is None:
            self._allocate_job(session, state, picker, queue, job)
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

    @staticmethod
    def _hold_back(jobs: KeyHeap[JobInfo], queue: QueueInfo) -> None:
        # The queue has its deserved share: say so on every job it leaves waiting.
        while jobs:
            jobs.pop().wait(QUEUE_SHARE_EXCEEDED, queue_share_held(queue.name))

    @staticmethod
    def _jobs_by_queue(
        session: Session, starving: dict[str, float], served: Collection[str]
    ) -> tuple[dict[str, KeyHeap[JobInfo]], list[JobInfo], list[JobInfo]]:
        """The jobs to try, by queue; the nominated ones; the starving ones (those in
        `served` were tried already)."""
        actions = session.config.actions
        by_queue: dict[str, list[JobInfo]] = {}
        nominated: list[JobInfo] = []
        starved: list[JobInfo] = []
        has_failures = bool(session.snapshot.failures)
        for job in session.active_jobs.values():
            if not may_place(job, actions) or job.key in served:
                continue
            if not job.pending_tasks():
                if len(job.tasks) < job.min_member:
                    # Its pods are not all there yet (none, before KubeRay or Kubeflow
                    # create them): say so, as Volcano's session open does for every job.
                    session.job_valid(job)
                continue
            if session.job_valid(job) is not None:
                continue
            if job.queue not in session.queues:
                continue
            if job.key in session.snapshot.nominated or started_short(job):
                # Room made for it, or part of it placed but not partly bound (it ran whole
                # and lost a member, or its minMember was raised): served before any queue
                # order, so nobody takes what it needs.
                nominated.append(job)
                continue
            if job.key in starving:
                # Tried every session, whatever its backoff: it holds room meanwhile.
                starved.append(job)
                continue
            if has_failures and not retry_due(session, job):
                continue
            by_queue.setdefault(job.queue, []).append(job)
        ordered = {name: KeyHeap(session.job_key, jobs) for name, jobs in by_queue.items()}
        return ordered, nominated, starved

    @staticmethod
    def _allocate_job(
        session: Session, state: CycleState, picker: NodePicker, queue: QueueInfo, job: JobInfo
    ) -> None:
        holds = state.holds
        if not holds.holds:
            _allocate(session, state, picker, queue, job)
            return
        with holds.lifted_for(job):
            _allocate(session, state, picker, queue, job)
        if job.wait_reason == NOT_ENOUGH_RESOURCES and job.starving is None:
            # "Insufficient cpu" on nodes that show free cpu would puzzle: say who holds it.
            holders = holds.holders_named(job)
            if holders:
                job.wait_message += f" ({holders})"


def _allocate(
    session: Session, state: CycleState, picker: NodePicker, queue: QueueInfo, job: JobInfo
) -> None:
    """Place the job whole (or pipelined onto room being released), or nothing of it."""
    if job.subgroup_policies:
        _allocate_by_subgroup(session, state, picker, queue, job)
        return
    placement = state.topology_for(job, session.nodes)
    # A soft gang whose domains all refuse it falls through to the plain placement.
    if (
        placement is not None
        and (placement.spec.hard or placement.view.prefer)
        and _allocate_in_domain(session, state, picker, queue, job, *placement)
    ):
        return
    statement = Statement(session)
    tasks = session.sorted_tasks(job.pending_tasks())
    _place(session, state, picker, queue, job, tasks, statement)
    if _keep(session, state, job, [statement]):
        return
    session.record_attempt(job, placed=False)
    # Said before the discard: what of the gang (minMember, which task) is short.
    short = gang_shortfall(job)
    placed = picker.discard(statement)
    if not job.wait_reason:
        job.wait(
            NOT_ENOUGH_RESOURCES,
            short or f"only {placed} of the {job.min_member} pods the gang needs could be placed",
        )


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


class _Outcome(enum.Enum):
    """How placing a list of tasks ended."""

    PLACED = "placed"
    NO_NODE = "no node"
    QUEUE_FULL = "queue full"


def _place(
    session: Session,
    state: CycleState,
    picker: NodePicker,
    queue: QueueInfo,
    job: JobInfo,
    tasks: list[TaskInfo],
    statement: Statement,
    *,
    explain: bool = True,
) -> _Outcome:
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
            return _Outcome.NO_NODE
        # Checked after the pick so that a full cluster is reported as such,
        # not as the queue's share (which is capped by the cluster's size).
        if not queue_takes_all and not session.allocatable(queue, task):
            picker.reconsider(task, node)
            job.wait(QUEUE_SHARE_EXCEEDED, queue_share_would_exceed(queue.name))
            return _Outcome.QUEUE_FULL
        if picker.picked_now:
            statement.allocate(task, node)
        else:
            statement.pipeline(task, node)
        picker.reconsider(task, node)
    return _Outcome.PLACED


def _keep(session: Session, state: CycleState, job: JobInfo, statements: list[Statement]) -> bool:
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


def _allocate_in_domain(
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
        outcome = _place(session, state, inner, queue, job, tasks, statement, explain=False)
        whole = outcome is _Outcome.PLACED or (joining and len(statement) > 0)
        if whole and _keep(session, state, job, [statement]):
            return True
        inner.discard(statement)
        if outcome is _Outcome.QUEUE_FULL:
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


# Gangs with spec.subGroupPolicy ----------------------------------------------------------


def _allocate_by_subgroup(
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
        _place(session, state, base, queue, job, tasks, statement, explain=bound is None)
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
    if _keep(session, state, job, statements):
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
            _place(session, state, inner, queue, job, tasks, statement, explain=False)
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
    _place(session, state, base, queue, job, tasks, statement, explain=False)
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
