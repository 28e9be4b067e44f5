"""A session's view of the topology's domains (api/topology.py): each domain's free room,
summed over its nodes and kept up to date as pods are placed, and the arithmetic the
placement of a topology gang asks of domains (the order to try them in, how many of a
gang's pods they could take, why none has room), so that allocate, preempt and reclaim
share one definition of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.api.job import JobInfo, NetworkTopology
from scheduler.api.node import NodeInfo
from scheduler.api.resources import Resource
from scheduler.api.task import TERMINAL_STATUSES, TaskInfo, TaskStatus
from scheduler.api.topology import Domain, Topology

# A domain's place in the candidate order: tier, whether it holds the gang only once
# releasing pods go, how full the gang leaves it (negated: fullest first), name.
_Key = tuple[int, bool, float, str]


@dataclass(frozen=True, slots=True)
class DomainWeights:
    """How much each resource counts when domains are compared by how full a placement
    leaves them (the network-topology-aware plugin's hypernode.binpack.* arguments):
    Volcano's HyperNode binpacking score."""

    cpu: float = 1.0
    memory: float = 1.0
    # Extended resources by name (hypernode.binpack.resources); others do not count.
    scalars: Mapping[str, float] = field(default_factory=dict)

    def fill(self, allocatable: Resource, used: Resource, need: Resource) -> float | None:
        """The weighted mean, over the resources `need` asks for that have a weight, of
        (used + need) / allocatable: 1.0 is full. None when `need` does not fit in one of
        them; 0.0 when none of them has a weight. Field by field: the node score asks it
        for every node it scores."""
        total = 0.0
        weights = 0.0
        wanted = need.cpu
        if wanted > 0:
            after = used.cpu + wanted
            if after > allocatable.cpu:
                return None
            total += self.cpu * after / allocatable.cpu
            weights += self.cpu
        wanted = need.memory
        if wanted > 0:
            after = used.memory + wanted
            if after > allocatable.memory:
                return None
            total += self.memory * after / allocatable.memory
            weights += self.memory
        if need.scalars and self.scalars:
            for name, wanted in need.scalars.items():
                weight = self.scalars.get(name)
                if weight is None or wanted <= 0:
                    continue
                capacity = allocatable.scalars.get(name, 0)
                after = used.scalars.get(name, 0) + wanted
                if after > capacity:
                    return None
                total += weight * after / capacity
                weights += weight
        return total / weights if weights > 0 else 0.0

    def weight_of(self, name: str) -> float | None:
        """The weight of a resource, None when it does not count."""
        if name == "cpu":
            return self.cpu
        if name == "memory":
            return self.memory
        return self.scalars.get(name)


class SessionTopology:
    """A session's topology and each domain's free room, summed over its nodes and kept
    up to date cheaply: a placement marks its node's domains stale (`touched`), and a
    stale sum is recomputed when next asked for (one domain costs its size once per
    change, not per question)."""

    def __init__(
        self,
        topology: Topology,
        nodes: Mapping[str, NodeInfo],
        *,
        prefer: bool = True,
        weights: DomainWeights | None = None,
        evict_domains: int = 8,
    ) -> None:
        self.topology = topology
        self.nodes = nodes
        # Whether soft gangs are placed domain by domain (the plugin's weight is not 0).
        self.prefer = prefer
        self.weights = weights if weights is not None else DomainWeights()
        # How many domains preempt and reclaim try for one gang's evictions.
        self.evict_domains = evict_domains
        self._allocatable: dict[str, Resource] = {}
        self._lists: dict[str, list[NodeInfo]] = {}
        self._of_node: dict[str, list[Domain]] = {}
        for domains in topology.tiers.values():
            for domain in domains:
                for name in domain.nodes:
                    self._of_node.setdefault(name, []).append(domain)
        self._idle: dict[str, tuple[Resource, Resource]] = {}
        # Per domain, its place in the candidate order for a request, while its room holds.
        self._keys: dict[str, tuple[Resource, _Key | None]] = {}

    def limit(self, spec: NetworkTopology) -> int:
        """The highest tier the gang may be kept in: highestTierAllowed, the tier that
        highestTierName names (0, none, when no tier has that name), else any tier."""
        if spec.highest_tier is not None:
            return spec.highest_tier
        if spec.highest_tier_name:
            return self.topology.tier_names.get(spec.highest_tier_name, 0)
        return self.topology.highest_tier

    def node_list(self, domain: Domain) -> list[NodeInfo]:
        """The domain's nodes in name order (the order the session lists nodes in)."""
        known = self._lists.get(domain.name)
        if known is None:
            nodes = self.nodes
            known = self._lists[domain.name] = [
                nodes[name] for name in sorted(domain.nodes) if name in nodes
            ]
        return known

    def touched(self, node_name: str) -> None:
        """A node's accounting changed: its domains' sums are stale."""
        for domain in self._of_node.get(node_name, ()):
            self._idle.pop(domain.name, None)
            self._keys.pop(domain.name, None)

    def candidate_key(self, domain: Domain, need: Resource) -> _Key | None:
        """Where the domain goes in the candidate order for `need`, None when its room
        cannot hold it; remembered until the domain's room changes (gangs alike ask alike)."""
        known = self._keys.get(domain.name)
        if known is not None and known[0] == need:
            return known[1]
        now, future = self.idle(domain)
        key: _Key | None = None
        if need.fits_in(now):
            key = (domain.tier, False, -self._fill(domain, now, need), domain.name)
        elif need.fits_in(future):
            key = (domain.tier, True, -self._fill(domain, future, need), domain.name)
        self._keys[domain.name] = (need, key)
        return key

    def allocatable(self, domain: Domain) -> Resource:
        """The domain's allocatable room, summed over its nodes (read-only)."""
        known = self._allocatable.get(domain.name)
        if known is None:
            known = Resource()
            for node in self.node_list(domain):
                known.add(node.allocatable)
            self._allocatable[domain.name] = known
        return known

    def _fill(self, domain: Domain, idle: Resource, need: Resource) -> float:
        """How full `need` leaves the domain whose free room is `idle` (0 when it would
        not fit, which candidate_key has ruled out)."""
        allocatable = self.allocatable(domain)
        fill = self.weights.fill(allocatable, allocatable - idle, need)
        return fill if fill is not None else 0.0

    def idle(self, domain: Domain) -> tuple[Resource, Resource]:
        """The domain's idle room now, and what it has once releasing pods go (less what
        is already promised): both summed over its nodes. Read-only results."""
        known = self._idle.get(domain.name)
        if known is None:
            # Summed field by field: this runs for every stale domain of every topology
            # gang, where a vector per node (future_idle) shows up.
            now = Resource()
            gone = Resource()
            for node in self.node_list(domain):
                now.add(node.idle)
                gone.add(node.releasing).sub(node.pipelined)
            known = self._idle[domain.name] = (now, now.clone().add(gone))
        return known


def placed_nodes(job: JobInfo) -> set[str]:
    """The nodes the job's members hold room on (placed, pipelined, bound or running):
    later members of the gang join a domain that holds all of them."""
    return {
        task.node_name
        for task in job.tasks.values()
        if task.node_name
        and task.status is not TaskStatus.PENDING
        and task.status not in TERMINAL_STATUSES
    }


def allocated_domain(topology: Topology, job: JobInfo) -> str:
    """The lowest-tier domain holding every node the job's members hold room on (Volcano's
    job-allocated HyperNode); "" when none is placed or no domain holds them all."""
    placed = placed_nodes(job)
    if not placed:
        return ""
    holding = topology.containing(placed, topology.highest_tier)
    return holding[0].name if holding else ""


def gang_request(tasks: Iterable[TaskInfo]) -> Resource:
    """The sum of the tasks' requests."""
    total = Resource()
    for task in tasks:
        total.add(task.request)
    return total


def leftover(idle: Resource, need: Resource) -> tuple[float, float]:
    """How much room a domain keeps after the gang, in copies of the gang's request: the
    scarcest resource first, then their sum (smaller is a tighter fit)."""
    names = sorted(need.names())
    if not names:
        return (0.0, 0.0)
    scarcest = float("inf")
    total = 0.0
    for name in names:
        wanted = need.get(name)
        ratio = (idle.get(name) - wanted) / wanted
        total += ratio
        scarcest = min(scarcest, ratio)
    return (scarcest, total)


def ordered_candidates(
    domains: Iterable[Domain], room: SessionTopology, need: Resource
) -> list[Domain]:
    """The domains whose free room (now or once releasing pods go) can hold `need`,
    lowest tier first, then those that hold it on idle room, then the fullest `need`
    leaves them (HyperNode binpacking, weighted as the plugin's arguments say), then by
    name; the others are skipped without trying (their sum already refuses)."""
    keyed: list[tuple[_Key, Domain]] = []
    for domain in domains:
        key = room.candidate_key(domain, need)
        if key is not None:
            keyed.append((key, domain))
    keyed.sort(key=lambda entry: entry[0])
    return [domain for _, domain in keyed]


def pods_room(
    domain: Domain,
    nodes: Mapping[str, NodeInfo],
    tasks: Sequence[TaskInfo],
    admits: Callable[[TaskInfo, NodeInfo], bool],
) -> int:
    """How many of `tasks` (in order) the domain's nodes could take on their idle room,
    filling node after node: an estimate for messages, not a placement."""
    placed = 0
    for name in sorted(domain.nodes):
        node = nodes.get(name)
        if node is None:
            continue
        free = node.idle.clone()
        pods = node.pod_count
        while placed < len(tasks):
            task = tasks[placed]
            if pods >= node.max_pods or not task.node_request.fits_in(free):
                break
            if not admits(task, node):
                break
            free.sub(task.node_request)
            pods += 1
            placed += 1
        if placed == len(tasks):
            break
    return placed


def no_room_message(
    topology: Topology,
    up_to: int,
    tasks: Sequence[TaskInfo],
    nodes: Mapping[str, NodeInfo],
    admits: Callable[[TaskInfo, NodeInfo], bool],
) -> str:
    """Why a topology gang waits: "no tier-1 HyperNode has room for 16 pods (largest
    free: rack-a, 12 pods' room)"."""
    what = topology.describe_tiers(up_to)
    count = len(tasks)
    best: tuple[int, str] | None = None
    for domain in topology.domains(up_to):
        room = pods_room(domain, nodes, tasks, admits)
        if best is None or room > best[0]:
            best = (room, domain.name)
    if best is None:
        return (
            f"no {what} exists for {count} pods; describe the topology with HyperNodes "
            f"or with the network-topology-aware plugin's label tiers"
        )
    return f"no {what} has room for {count} pods (largest free: {best[1]}, {best[0]} pods' room)"
