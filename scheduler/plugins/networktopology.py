"""The network-topology-aware plugin: honours PodGroup spec.networkTopology (and each
subGroupPolicy's), and packs HyperNodes.

It resolves the session's topology (HyperNodes, or the node-label tiers of its
arguments when the cluster has none) and hands it to the actions through the cycle
state's `topology`; allocate, preempt and reclaim then place a topology gang (or
subgroup) domain by domain (actions/topology_placement.py, actions/subgroup_placement.py,
actions/eviction.py). Arguments, as in Volcano plus muster's label tiers:

    - name: network-topology-aware
      arguments:
        weight: 1
        hypernode.binpack.cpu: 1
        hypernode.binpack.memory: 1
        hypernode.binpack.resources: nvidia.com/gpu
        hypernode.binpack.resources.nvidia.com/gpu: 2
        hypernode.binpack.normal-pod.enable: true
        hypernode.binpack.normal-pod.fading: 0.8
        hypernode.gradient.evict.max-hypernodes: 8
        tiers:
        - {tier: 1, nodeLabel: example.com/rack}
        - {tier: 2, nodeLabel: topology.kubernetes.io/zone, tierName: zone}

- `weight`: muster does not score nodes for a topology gang, it tries whole domains in
  order; so the weight acts as a switch for soft gangs, as a zero weight does in Volcano:
  0 gives them no preference at all (they are placed as any gang), any other value places
  them domain by domain. Hard gangs are held to their domain whatever the weight. It
  also scales the node score below.
- `hypernode.binpack.*`: the order domains are tried in, within a tier: the one the gang
  leaves fullest first, fullness being the weighted mean over the resources it asks
  for of (used + gang) / allocatable (Volcano's HyperNode binpacking score).
- `hypernode.binpack.normal-pod.*`: the node score of a pod whose gang has no
  networkTopology (of its own or of a subgroup) adds, per tier t of the topology,
  fading^(t-1) times how full the pod leaves the node's domain of that tier (1 for a
  node in no domain of that tier), normalised by the sum of those weights and scaled
  by 100 x weight: such pods fill the fullest racks first and leave whole racks free
  for topology gangs (which are placed domain by domain instead). A domain's fill is
  read when a node is scored; the node picker scores a node again when its own room
  changes, so a placement reaches its domain's other nodes when they are next scored,
  and a soft gang that falls back to any node may share a pod shape's scores with pods
  scored this way.
- `hypernode.gradient.evict.max-hypernodes`: preempt and reclaim try at most this many
  domains for a topology gang's evictions (Volcano's cap on its eviction gradient).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from scheduler.api.job import JobInfo
from scheduler.api.network_topology import NETWORK_TOPOLOGY_FIELD
from scheduler.api.node import NodeInfo
from scheduler.api.podgroup import SUBGROUP_TOPOLOGY_FIELD
from scheduler.api.reasons import INVALID_NETWORK_TOPOLOGY
from scheduler.api.resources import Resource
from scheduler.api.session_topology import DomainWeights, SessionTopology, allocated_domain
from scheduler.api.subgroups import SUB_GROUP_POLICY_FIELD
from scheduler.api.task import TaskInfo
from scheduler.api.topology import LabelTier, Topology, resolve_cached
from scheduler.framework.answers import Waiting
from scheduler.framework.arguments import Arguments, Count, Names, Weight, gather_prefixed
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session

MAX_NODE_SCORE = 100.0
BINPACK_RESOURCES = "hypernode.binpack.resources"


class LabelTierArgument(BaseModel):
    """One tier derived from a node label: nodes with equal values share a domain."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    tier: Count = Field(ge=1)
    node_label: str = Field(alias="nodeLabel")
    tier_name: str = Field("", alias="tierName")

    @field_validator("node_label")
    @classmethod
    def _label_named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is empty; name a node label, e.g. topology.kubernetes.io/zone")
        return value.strip()


class NetworkTopologyArguments(Arguments):
    """network-topology-aware's arguments: Volcano's, and muster's label tiers."""

    weight: Count = Field(1, ge=0)
    binpack_cpu: Count = Field(1, ge=0, alias="hypernode.binpack.cpu")
    binpack_memory: Count = Field(1, ge=0, alias="hypernode.binpack.memory")
    binpack_resources: Names = Field(default_factory=list, alias="hypernode.binpack.resources")
    binpack_resource_weights: dict[str, Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict, alias="hypernode.binpack.resources.*"
    )
    normal_pod_enable: bool = Field(True, alias="hypernode.binpack.normal-pod.enable")
    normal_pod_fading: Weight = Field(0.8, alias="hypernode.binpack.normal-pod.fading")
    evict_max_hypernodes: Count = Field(8, ge=1, alias="hypernode.gradient.evict.max-hypernodes")
    tiers: list[LabelTierArgument] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _gather_resource_weights(cls, values: Any) -> Any:
        return gather_prefixed(values, f"{BINPACK_RESOURCES}.", f"{BINPACK_RESOURCES}.*")

    @model_validator(mode="after")
    def _weights_name_listed_resources(self) -> NetworkTopologyArguments:
        unlisted = sorted(set(self.binpack_resource_weights) - set(self.binpack_resources))
        if unlisted:
            raise ValueError(
                f"weights {', '.join(f'{BINPACK_RESOURCES}.{n}' for n in unlisted)} name "
                f"resources not in {BINPACK_RESOURCES}; add them there"
            )
        return self

    @field_validator("tiers")
    @classmethod
    def _tiers_distinct(cls, tiers: list[LabelTierArgument]) -> list[LabelTierArgument]:
        for attribute, what in (("tier", "tier"), ("node_label", "nodeLabel")):
            seen: set[object] = set()
            for entry in tiers:
                value = getattr(entry, attribute)
                if value in seen:
                    raise ValueError(
                        f"is invalid: it lists {what} {value!r} twice; give each tier one "
                        f"entry with its own node label"
                    )
                seen.add(value)
        names = [entry.tier_name for entry in tiers if entry.tier_name]
        if len(names) != len(set(names)):
            raise ValueError("is invalid: two tiers have the same tierName; name each once")
        return tiers

    def label_tiers(self) -> tuple[LabelTier, ...]:
        """The tiers as the topology resolver reads them."""
        return tuple(LabelTier(t.tier, t.node_label, t.tier_name) for t in self.tiers)

    def domain_weights(self) -> DomainWeights:
        """hypernode.binpack.*: cpu and memory, and each listed resource (1 unless given);
        as in Volcano, hypernode.binpack.cpu and .memory win over a listed cpu or memory."""
        scalars = {
            name: float(self.binpack_resource_weights.get(name, 1))
            for name in self.binpack_resources
            if name not in ("cpu", "memory")
        }
        return DomainWeights(float(self.binpack_cpu), float(self.binpack_memory), scalars)


class NetworkTopologyPlugin(Plugin[NetworkTopologyArguments]):
    """Resolves the topology for the session's actions, checks each gang's spec, and
    scores nodes by how full their domains are."""

    name = "network-topology-aware"

    def __init__(
        self, arguments: NetworkTopologyArguments | Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(arguments)
        self._view: SessionTopology | None = None
        self._weights = self.arguments.domain_weights()
        # Where each task this session placed went: unplace clears a task's node before
        # telling plugins, and the domain sums of that node must still go stale.
        self._placed_on: dict[str, str] = {}
        # For the node score: per node, its domain in each tier as (the tier's weight, the
        # domain's allocatable, what its nodes' pods use: kept as tasks move, shared by
        # the domain's nodes); 100 x weight / the tiers' summed weights.
        self._domains_of: dict[str, list[tuple[float, Resource, Resource]]] = {}
        self._tier_weights = 0.0
        self._scale = 0.0
        # Per node, the summed weights of the tiers where it is in no domain (each such
        # tier scores full: Volcano prefers nodes outside HyperNodes); nodes in none at all
        # score every tier full.
        self._missing: dict[str, float] = {}
        # Gangs with a networkTopology of their own or of a subgroup: placed domain by
        # domain, and not scored here (as in Volcano, which scores normal pods only).
        self._aware: set[str] = set()

    def unused_points(self) -> frozenset[str]:
        """No node score without normal-pod packing (or with a weight of 0)."""
        args = self.arguments
        if args.normal_pod_enable and args.weight > 0:
            return frozenset()
        return frozenset({"node_score"})

    def on_session_open(self, session: Session, state: CycleState) -> None:
        """Resolve the topology, name its problems, and mark networkTopology honoured."""
        snapshot = session.snapshot
        args = self.arguments
        topology = resolve_cached(snapshot.hypernodes, snapshot.nodes, args.label_tiers())
        self._view = SessionTopology(
            topology,
            snapshot.nodes,
            prefer=args.weight > 0,
            weights=self._weights,
            evict_domains=args.evict_max_hypernodes,
        )
        state.topology = self._view
        for problem in topology.problems:
            session.warn(problem.kind, problem.name, problem.reason, problem.message)
        honoured = (NETWORK_TOPOLOGY_FIELD, SUBGROUP_TOPOLOGY_FIELD)
        for job in session.jobs.values():
            if job.unhonoured:
                job.unhonoured = tuple(f for f in job.unhonoured if f not in honoured)
        if args.normal_pod_enable and args.weight > 0 and not topology.empty:
            self._aware = {
                key
                for key, job in session.jobs.items()
                if job.network_topology is not None
                or any(p.network_topology is not None for p in job.subgroup_policies)
            }
            self._open_node_scores(topology)

    def _open_node_scores(self, topology: Topology) -> None:
        tiers = [tier for tier, domains in topology.tiers.items() if domains]
        fading = self.arguments.normal_pod_fading
        # Volcano's weights, over every tier from the lowest to the highest there is.
        weights = {tier: fading ** (tier - 1) for tier in range(min(tiers), max(tiers) + 1)}
        self._tier_weights = sum(weights.values())
        if self._tier_weights <= 0:
            return
        self._scale = MAX_NODE_SCORE * self.arguments.weight / self._tier_weights
        view = self._view
        assert view is not None
        tiers_of: dict[str, set[int]] = {}
        for tier in sorted(weights):
            for domain in topology.tiers.get(tier, ()):
                allocatable = view.allocatable(domain)
                used = Resource()
                for node in view.node_list(domain):
                    used.add(node.used)
                for name in domain.nodes:
                    held = tiers_of.setdefault(name, set())
                    # A node in two domains of one tier counts the first (by name), as
                    # Volcano takes the first HyperNode it finds.
                    if tier not in held:
                        held.add(tier)
                        entry = (weights[tier], allocatable, used)
                        self._domains_of.setdefault(name, []).append(entry)
        for name, held in tiers_of.items():
            self._missing[name] = sum(w for t, w in weights.items() if t not in held)

    def on_session_close(self, session: Session, state: CycleState) -> None:
        """Name the HyperNode each topology gang's placed members are in, and drop the
        session's view."""
        view = self._view
        if view is not None and view.topology.source == "HyperNode":
            for job in session.jobs.values():
                if job.network_topology is not None or any(
                    p.network_topology is not None for p in job.subgroup_policies
                ):
                    job.placed_hypernode = allocated_domain(view.topology, job)
        self._view = None
        self._placed_on.clear()

    def job_valid(self, job: JobInfo) -> Waiting | None:
        """A highestTierName no tier has: the gang cannot be placed as asked."""
        if self._view is None:
            return None
        names = self._view.topology.tier_names
        asked = [(NETWORK_TOPOLOGY_FIELD, job.network_topology)]
        asked += [
            (f"{SUB_GROUP_POLICY_FIELD}[{p.index}].networkTopology", p.network_topology)
            for p in job.subgroup_policies
        ]
        for field, spec in asked:
            if spec is None or not spec.highest_tier_name or spec.highest_tier_name in names:
                continue
            known = ", ".join(f"{n} (tier {t})" for n, t in sorted(names.items())) or "none"
            return Waiting(
                INVALID_NETWORK_TOPOLOGY,
                f"{field}.highestTierName={spec.highest_tier_name!r} names no tier (tier "
                f"names: {known}); set spec.tierName on the HyperNodes of that tier, or use "
                f"highestTierAllowed",
            )
        return None

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """hypernode.binpack.normal-pod: how full the pod leaves the node's domains, tier
        by tier weighted fading^(tier-1), times 100 x weight (0 without a topology)."""
        if not self._tier_weights:
            return 0.0
        if task.job in self._aware:
            return 0.0
        held = self._domains_of.get(node.name)
        if held is None:
            return self._scale * self._tier_weights
        total = self._missing[node.name]
        request = task.request
        if request.scalars and self._weights.scalars:
            fill_of = self._weights.fill
            for weight, allocatable, used in held:
                fill = fill_of(allocatable, used, request)
                if fill is not None:
                    total += weight * fill
            return self._scale * total
        # cpu and memory alone (the pods of most sessions): DomainWeights.fill, inlined,
        # as this runs for every node the picker scores.
        cpu = request.cpu
        memory = request.memory
        cpu_weight = self._weights.cpu if cpu > 0 else 0.0
        memory_weight = self._weights.memory if memory > 0 else 0.0
        weights = cpu_weight + memory_weight
        if weights <= 0:
            return self._scale * total
        for weight, allocatable, used in held:
            after_cpu = used.cpu + cpu
            after_memory = used.memory + memory
            if (cpu > 0 and after_cpu > allocatable.cpu) or (
                memory > 0 and after_memory > allocatable.memory
            ):
                continue
            fill = 0.0
            if cpu_weight:
                fill += cpu_weight * after_cpu / allocatable.cpu
            if memory_weight:
                fill += memory_weight * after_memory / allocatable.memory
            total += weight * fill / weights
        return self._scale * total

    def on_allocate(self, task: TaskInfo) -> None:
        """A task took room: its node's domains have less."""
        if self._view is not None and task.node_name:
            self._placed_on[task.uid] = task.node_name
            self._view.touched(task.node_name)
            for _, _, used in self._domains_of.get(task.node_name, ()):
                used.add(task.request)

    def on_deallocate(self, task: TaskInfo) -> None:
        """A task gave room back: its node's domains have more."""
        if self._view is None:
            return
        node = task.node_name or self._placed_on.pop(task.uid, "")
        if node:
            self._view.touched(node)
            for _, _, used in self._domains_of.get(node, ()):
                used.sub(task.request)
