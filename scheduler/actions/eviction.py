"""Gang-aware victim selection, shared by preempt and reclaim.

A victim is never a lone pod of a gang that would then fall below minMember:
victims come in *units*, one pod of a job that has members to spare (ready -
minMember > 0; every pod of a job whose minMember is 0 or 1, as in Volcano's gang
plugin). With the action argument `evictWholeGangs: true` a unit may also be a
whole gang (every placed pod of it, on every node); Volcano never does that, so
it is off by default. For each pod of the gang being placed, the node that
needs the least is chosen: fewest pods evicted, then the lowest victim
priority, then the youngest victims. The preemptor is pipelined onto the room
being released; the caller commits the evictions only when the whole gang is
placed, and discards everything otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import Field

from scheduler.actions.backoff import retry_due
from scheduler.actions.predicate_cache import PredicateErrorCache
from scheduler.actions.protection import VictimGuard
from scheduler.api.gang_state import VICTIM_STATUSES, gang_placed, may_place, subgroup_spares
from scheduler.api.job import JobInfo, NetworkTopology
from scheduler.api.node import NodeInfo
from scheduler.api.reasons import WAITING_FOR_EVICTIONS
from scheduler.api.resources import Resource
from scheduler.api.session_topology import SessionTopology, gang_request, leftover, placed_nodes
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.api.topology import Domain
from scheduler.framework.arguments import Count, Duration
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


class EvictionArguments(PredicateErrorCache):
    """What preempt, reclaim, gangpreempt and gangreclaim read of their arguments (each
    accepts Volcano's predicateErrorCacheEnable, which changes nothing)."""

    @property
    def whole_gangs(self) -> bool:
        """Whether a running gang with no member to spare may be evicted whole."""
        return False

    @property
    def min_runtime(self) -> float:
        """Seconds a pod runs before this action may take it."""
        return 0.0

    @property
    def max_domains(self) -> int | None:
        """How many topology domains a gang's evictions are searched in (None: all)."""
        return None


class PreemptArguments(EvictionArguments):
    """preempt's arguments.

    `evictWholeGangs` lets a running gang that has no member to spare be evicted whole
    (every pod of it) to place a gang; off by default, as in Volcano, which never evicts
    a gang below its minMember. `preemptMinRuntime` (a Go duration or seconds) spares
    pods that started less than that ago, as KAI's argument of that name does.
    Volcano's topology-aware preemption settings are accepted and change nothing: muster's
    preemption examines every admissible node, in the session, and checks the preemptor's
    pod affinity, spread and volumes on a node once its victims are gone."""

    evict_whole_gangs: bool = Field(False, alias="evictWholeGangs", strict=True)
    preempt_min_runtime: Duration = Field(0.0, alias="preemptMinRuntime")
    topology_aware: bool | None = Field(None, alias="enableTopologyAwarePreemption")
    topology_aware_workers: Count | None = Field(None, alias="topologyAwarePreemptWorkerNum", ge=1)
    min_candidate_percentage: Count | None = Field(
        None, alias="minCandidateNodesPercentage", ge=0, le=100
    )
    min_candidate_nodes: Count | None = Field(None, alias="minCandidateNodesAbsolute", ge=0)
    max_candidate_nodes: Count | None = Field(None, alias="maxCandidateNodesAbsolute", ge=0)

    @property
    def whole_gangs(self) -> bool:
        """evictWholeGangs."""
        return self.evict_whole_gangs

    @property
    def min_runtime(self) -> float:
        """preemptMinRuntime."""
        return self.preempt_min_runtime

    def load_notes(self) -> list[str]:
        """Each of Volcano's topology-aware preemption settings changes nothing."""
        notes = super().load_notes()
        why = {
            "enableTopologyAwarePreemption": "muster's preemption always checks the "
            "preemptor's pod affinity, spread and volumes on a node once its victims are gone",
            "topologyAwarePreemptWorkerNum": "muster's preemption runs within the session",
            "minCandidateNodesPercentage": "muster's preemption examines every admissible node",
            "minCandidateNodesAbsolute": "muster's preemption examines every admissible node",
            "maxCandidateNodesAbsolute": "muster's preemption examines every admissible node",
        }
        for name, info in type(self).model_fields.items():
            if info.alias in why and getattr(self, name) is not None:
                notes.append(f"{info.alias} changes nothing: {why[info.alias]}")
        return notes


class ReclaimArguments(EvictionArguments):
    """reclaim's arguments: `evictWholeGangs` as preempt's, and `reclaimMinRuntime`."""

    evict_whole_gangs: bool = Field(False, alias="evictWholeGangs", strict=True)
    reclaim_min_runtime: Duration = Field(0.0, alias="reclaimMinRuntime")

    @property
    def whole_gangs(self) -> bool:
        """evictWholeGangs."""
        return self.evict_whole_gangs

    @property
    def min_runtime(self) -> float:
        """reclaimMinRuntime."""
        return self.reclaim_min_runtime


# Volcano 1.15's defaults for gangpreempt and gangreclaim.
DEFAULT_MAX_DOMAINS = 8


class GangEvictionArguments(EvictionArguments):
    """What gangpreempt's and gangreclaim's arguments share, as Volcano 1.15 names them:
    `maxDomains` (HyperNodes a gang's evictions are searched in, default 8) and
    `allowWholeBundle` (whether a running gang may be evicted whole, default true)."""

    domain_limit: int = Field(DEFAULT_MAX_DOMAINS, alias="maxDomains", ge=1, strict=True)
    allow_whole_bundle: bool = Field(True, alias="allowWholeBundle", strict=True)

    @property
    def whole_gangs(self) -> bool:
        """allowWholeBundle."""
        return self.allow_whole_bundle

    @property
    def max_domains(self) -> int | None:
        """maxDomains."""
        return self.domain_limit


class GangPreemptArguments(GangEvictionArguments):
    """gangpreempt's arguments: `maxDomains`, `allowWholeBundle` and `preemptMinRuntime`."""

    preempt_min_runtime: Duration = Field(0.0, alias="preemptMinRuntime")

    @property
    def min_runtime(self) -> float:
        """preemptMinRuntime."""
        return self.preempt_min_runtime


class GangReclaimArguments(GangEvictionArguments):
    """gangreclaim's arguments: `maxDomains`, `allowWholeBundle` and `reclaimMinRuntime`."""

    reclaim_min_runtime: Duration = Field(0.0, alias="reclaimMinRuntime")

    @property
    def min_runtime(self) -> float:
        """reclaimMinRuntime."""
        return self.reclaim_min_runtime


# Which candidates a plugin tier allows (session.preemptable or session.reclaimable).
VictimFilter = Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]


@dataclass(slots=True)
class Unit:
    """Pods that leave together: one spare pod, or a whole gang."""

    job: JobInfo
    tasks: list[TaskInfo]
    whole: bool
    request: Resource = field(default_factory=Resource)

    def __post_init__(self) -> None:
        for task in self.tasks:
            self.request.add(task.request)

    @property
    def priority(self) -> int:
        """The highest priority among its pods (what evicting it costs)."""
        return max(task.priority for task in self.tasks)

    @property
    def newest(self) -> str:
        """The creation time of its youngest pod."""
        return max(task.creation_timestamp for task in self.tasks)


@dataclass(slots=True)
class _Choice:
    node: NodeInfo
    units: list[Unit]

    def cost(self) -> tuple[int, int]:
        return (sum(len(u.tasks) for u in self.units), max(u.priority for u in self.units))


def may_preempt(snapshot: ClusterSnapshot, job: JobInfo) -> bool:
    """preemptionPolicy: Never on the PodGroup (a native one's own field), on its
    PriorityClass or on a pending pod forbids it."""
    if job.preemption_policy == "Never":
        return False
    known = snapshot.priority_classes.get(job.priority_class_name)
    if known is not None and known.preemption_policy == "Never":
        return False
    return all(task.preemption_policy != "Never" for task in job.pending_tasks())


class GangEvictor:
    """Places one gang's pending pods on free or released room, evicting units as needed."""

    def __init__(
        self,
        session: Session,
        state: CycleState,
        statement: Statement,
        *,
        in_scope: Callable[[JobInfo], bool],
        allowed: VictimFilter,
        reason: Callable[[TaskInfo], str],
        unit_allowed: Callable[[TaskInfo, Unit, list[Unit]], bool] | None = None,
        may_evict_for: Callable[[TaskInfo], bool] | None = None,
        whole_gangs: bool = False,
        nodes: list[NodeInfo] | None = None,
        guard: VictimGuard | None = None,
    ) -> None:
        self.session = session
        self.guard = guard if guard is not None else VictimGuard(session, state)
        self.statement = statement
        # The nodes the gang may go on: every node, or one topology domain's.
        self.nodes = nodes if nodes is not None else session.node_list
        self.in_scope = in_scope
        self.allowed = allowed
        self.reason = reason
        self.unit_allowed = unit_allowed
        self.may_evict_for = may_evict_for
        self.whole_gangs = whole_gangs
        self.evicted = 0
        # The session's devices, for pods with ResourceClaims (None when no pod has any).
        self.devices = state.devices

    def place_gang(self, job: JobInfo) -> bool:
        """Pipeline the job's pods until its gang is complete; False when it cannot be."""
        session = self.session
        queue = session.queues[job.queue]
        for task in session.sorted_tasks(job.pending_tasks()):
            if gang_placed(job):
                break
            node = self._free_node(task)
            if node is None:
                if self.may_evict_for is not None and not self.may_evict_for(task):
                    return False
                choice = self._cheapest_eviction(job, task)
                if choice is None:
                    return False
                self.guard.choose(victim for unit in choice.units for victim in unit.tasks)
                for unit in choice.units:
                    for victim in unit.tasks:
                        self.statement.evict(victim, self.reason(task))
                        self.evicted += 1
                node = choice.node
                # The victims are gone from the session's view now: the pod must pass every
                # dynamic filter there too (pod affinity, spread, volumes), as allocate's
                # placements do, or nothing of the gang is evicted.
                if not session.fits(task, node).ok:
                    return False
            if not session.allocatable(queue, task):
                return False
            # Pipelined even where there is idle room: nothing of the gang binds until
            # all of it can, which allocate decides in a later session.
            self.statement.pipeline(task, node)
        return gang_placed(job)

    # Internals -------------------------------------------------------------
    def _admitted_nodes(self, task: TaskInfo) -> list[NodeInfo]:
        session = self.session
        return [node for node in self.nodes if session.admits(task, node).ok]

    def _free_node(self, task: TaskInfo) -> NodeInfo | None:
        best: NodeInfo | None = None
        best_score = 0.0
        for node in self._admitted_nodes(task):
            if not self._fits_after(task, node, []) or not self.session.fits(task, node).ok:
                continue
            score = self.session.score(task, node)
            if best is None or score > best_score:
                best, best_score = node, score
        return best

    def _fits_after(self, task: TaskInfo, node: NodeInfo, units: list[Unit]) -> bool:
        """Whether the task fits the node once releasing pods and the units' pods are gone:
        resources, pod count, host ports and devices (only those of claims no staying pod
        uses come free: the dynamic predicates; the static ones, taints, selectors and
        affinity, are `session.admits`)."""
        leaving = {victim.uid for unit in units for victim in unit.tasks}
        if not task.node_request.fits_in(node.future_idle().add(_freed_on(node, units))):
            return False
        if task.devices is not None and self.devices is not None:
            victims = [victim for unit in units for victim in unit.tasks]
            if not self.devices.fits_without(task, node, victims):
                return False
        staying = [
            other
            for other in node.tasks.values()
            if other.status is not TaskStatus.RELEASING and other.uid not in leaving
        ]
        if len(staying) + 1 > node.max_pods:
            return False
        ports = task.placement.host_ports
        return not ports or not any(
            port.conflicts_with(taken)
            for other in staying
            for taken in other.placement.host_ports
            for port in ports
        )

    def _cheapest_eviction(self, job: JobInfo, task: TaskInfo) -> _Choice | None:
        best: _Choice | None = None
        for node in self._admitted_nodes(task):
            units = self._units_on(job, task, node)
            chosen = self._cover(task, node, units)
            if chosen is None:
                continue
            choice = _Choice(node, chosen)
            if best is None or choice.cost() < best.cost():
                best = choice
        return best

    def _units_on(self, job: JobInfo, task: TaskInfo, node: NodeInfo) -> list[Unit]:
        jobs = self.session.jobs
        by_job: dict[str, list[TaskInfo]] = {}
        for victim in node.tasks.values():
            if victim.status not in VICTIM_STATUSES or victim.job == job.key:
                continue
            owner = jobs.get(victim.job)
            if owner is None or not self.in_scope(owner):
                continue
            by_job.setdefault(owner.key, []).append(victim)
        units: list[Unit] = []
        guard = self.guard
        for key, candidates in by_job.items():
            owner = jobs[key]
            here = []
            for victim in candidates:
                why = guard.spares(victim, owner)
                if why:
                    guard.spare(why)
                else:
                    here.append(victim)
            if owner.whole_disruption:
                # A native PodGroup with disruptionMode PodGroup (all): evicted whole or not
                # at all, whatever the action's arguments.
                units.extend(self._whole(task, owner))
                continue
            # A whole subgroup (spec.subGroupPolicy) keeps its subGroupSize members.
            allowed_here = subgroup_spares(owner, self.allowed(task, here))
            # Never below zero: a gang already short of minMember has nothing to spare
            # (a negative slice would take pods from the end of the list).
            if self.whole_gangs:
                keep = max(owner.min_member, 1)
            else:
                keep = owner.min_member if owner.min_member > 1 else 0
            spare = max(owner.ready_count() - keep, 0)
            units.extend(Unit(owner, [victim], whole=False) for victim in allowed_here[:spare])
            if self.whole_gangs:
                units.extend(self._whole(task, owner))
        # Fewest pods first, then the lowest priority, then the youngest, then by name:
        # the last key makes the choice independent of the order the cache saw its pods
        # in, so `muster whatif` on a fresh read names the victims the scheduler takes.
        units.sort(key=lambda u: u.tasks[0].key)
        units.sort(key=lambda u: u.newest, reverse=True)
        units.sort(key=lambda u: (len(u.tasks), u.priority))
        return units

    def _whole(self, task: TaskInfo, owner: JobInfo) -> list[Unit]:
        """The gang as one unit, every placed pod of it on every node, when none of them is
        spared and every one may be a victim for `task`; else nothing."""
        members = list(owner.tasks_in(*VICTIM_STATUSES))
        if any(self.guard.spares(member, owner) for member in members):
            return []
        if len(self.allowed(task, members)) != len(members):
            return []
        return [Unit(owner, members, whole=True)]

    def _cover(self, task: TaskInfo, node: NodeInfo, units: list[Unit]) -> list[Unit] | None:
        chosen: list[Unit] = []
        gangs_taken: set[str] = set()
        for unit in units:
            if chosen and self._fits_after(task, node, chosen):
                break
            # A whole gang already covers any single pod of it.
            if unit.job.key in gangs_taken:
                continue
            if self.unit_allowed is not None and not self.unit_allowed(task, unit, chosen):
                continue
            refusal = self.guard.budget_allows(
                unit.tasks, [victim for other in chosen for victim in other.tasks]
            )
            if refusal:
                self.guard.spare(refusal)
                continue
            if unit.whole:
                chosen = [u for u in chosen if u.job.key != unit.job.key]
                gangs_taken.add(unit.job.key)
            chosen.append(unit)
        if not chosen or not self._fits_after(task, node, chosen):
            return None
        # Drop what turned out unnecessary, the costliest first.
        for unit in sorted(chosen, key=lambda u: (len(u.tasks), u.priority), reverse=True):
            rest = [u for u in chosen if u is not unit]
            if rest and self._fits_after(task, node, rest):
                chosen = rest
        return chosen


def _freed_on(node: NodeInfo, units: list[Unit]) -> Resource:
    freed = Resource()
    for unit in units:
        for task in unit.tasks:
            if task.node_name == node.name:
                freed.add(task.node_request)
    return freed


def mark_waiting(job: JobInfo, evicted: int) -> None:
    """Say on the PodGroup that its room is being released for it."""
    job.wait_reason = WAITING_FOR_EVICTIONS
    job.wait_message = (
        f"{evicted} pod(s) are being evicted to make room; the gang is placed once they are gone"
    )


def starving_gangs(session: Session) -> list[JobInfo]:
    """Admitted, valid gangs with pending members that want more than they have and whose
    backoff is over: the candidates of preempt and reclaim."""
    return [
        job
        for job in session.jobs.values()
        if job.queue in session.queues
        and may_place(job, session.config.actions)
        and job.pending_tasks()
        and session.job_starving(job)
        and job.invalid is None
        and session.job_valid(job) is None
        and retry_due(session, job)
    ]


def evict_for(
    session: Session,
    state: CycleState,
    job: JobInfo,
    *,
    in_scope: Callable[[JobInfo], bool],
    allowed: VictimFilter,
    reason: Callable[[TaskInfo], str],
    unit_allowed: Callable[[TaskInfo, Unit, list[Unit]], bool] | None = None,
    may_evict_for: Callable[[TaskInfo], bool] | None = None,
    whole_gangs: bool = False,
    min_runtime: float = 0.0,
    max_domains: int | None = None,
) -> None:
    """Place the whole gang on room its evictions free, or evict nothing at all;
    `may_evict_for` says whether room may be released for a task at all. Pods the
    protection rules spare (actions/protection.py: PodDisruptionBudgets, `min_runtime`,
    cooldowns, volcano.sh/preemptable) are never victims; when the gang cannot be placed
    for want of them, its condition says which were spared and why.

    A gang with spec.networkTopology (and the network-topology-aware plugin on) is
    placed inside one admissible domain: the domains are tried in turn (at most
    `max_domains`), and the first where the whole gang fits after its evictions wins; a
    soft gang that fits in none is then placed anywhere, a hard one evicts nothing."""
    spared: list[VictimGuard] = []

    def attempt(nodes: list[NodeInfo] | None) -> bool | None:
        statement = Statement(session)
        guard = VictimGuard(session, state, min_runtime)
        spared.append(guard)
        evictor = GangEvictor(
            session,
            state,
            statement,
            in_scope=in_scope,
            allowed=allowed,
            reason=reason,
            unit_allowed=unit_allowed,
            may_evict_for=may_evict_for,
            whole_gangs=whole_gangs,
            nodes=nodes,
            guard=guard,
        )
        placed = evictor.place_gang(job)
        if placed and evictor.evicted:
            statement.commit()
            guard.commit()
            mark_waiting(job, evictor.evicted)
            session.record_attempt(job, placed=True)
            return True
        statement.discard()
        # Placed without evicting anything: allocate places it, not eviction (None).
        return None if placed else False

    with state.holds.lifted_for(job):
        outcome = _attempt_in_domains(session, state, job, attempt, max_domains)
    if outcome is True:
        return
    summary = "; ".join(g.summary() for g in spared if g.summary())
    if summary and job.wait_reason:
        job.wait_message += f" (not evicted to make room: {summary})"


def _attempt_in_domains(
    session: Session,
    state: CycleState,
    job: JobInfo,
    attempt: Callable[[list[NodeInfo] | None], bool | None],
    max_domains: int | None,
) -> bool | None:
    placement = state.topology_for(job, session.nodes)
    if placement is None or not (placement.spec.hard or placement.view.prefer):
        return attempt(None)
    view, spec = placement
    domains = eviction_domains(view, spec, job)
    if max_domains is not None:
        domains = domains[:max_domains]
    for domain in domains:
        outcome = attempt(view.node_list(domain))
        if outcome is not False:
            return outcome
    if not spec.hard:
        return attempt(None)
    return False


def eviction_domains(view: SessionTopology, spec: NetworkTopology, job: JobInfo) -> list[Domain]:
    """The domains a topology gang's evictions may be made in, in the order to try them:
    those holding its placed members (if it has any), else every domain of an admissible
    tier; lowest tier first, then the most free room (the fewest evictions), then name."""
    limit = view.limit(spec) if spec.hard else view.topology.highest_tier
    placed = placed_nodes(job)
    if placed:
        return view.topology.containing(placed, limit)[: view.evict_domains]
    need = gang_request(job.pending_tasks())

    def order(domain: Domain) -> tuple[int, float, float, str]:
        scarcest, total = leftover(view.idle(domain)[1], need)
        return (domain.tier, -scarcest, -total, domain.name)

    # At most hypernode.gradient.evict.max-hypernodes domains (network-topology-aware).
    return sorted(view.topology.domains(limit), key=order)[: view.evict_domains]
