"""The network-topology-aware plugin: honours PodGroup spec.networkTopology.

It resolves the session's topology (HyperNodes, or the node-label tiers of its
arguments when the cluster has none) and hands it to the actions through
`session.topology`; allocate, preempt and reclaim then place a topology gang domain by
domain (actions/allocate.py, actions/eviction.py). Arguments, as in Volcano plus
muster's label tiers:

    - name: network-topology-aware
      arguments:
        weight: 1
        tiers:
        - {tier: 1, nodeLabel: example.com/rack}
        - {tier: 2, nodeLabel: topology.kubernetes.io/zone, tierName: zone}

`weight` is Volcano's weight of its topology score. muster does not score nodes for a
topology gang; it tries whole domains in order. So the weight acts as a switch, as a
zero weight does in Volcano: 0 gives soft gangs no preference at all (they are placed
as any gang), any other value places them domain by domain. Hard gangs are held to
their domain whatever the weight.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from scheduler.api.job import NETWORK_TOPOLOGY_FIELD, JobInfo
from scheduler.api.reasons import INVALID_NETWORK_TOPOLOGY
from scheduler.api.task import TaskInfo
from scheduler.api.topology import LabelTier, SessionTopology, resolve_cached
from scheduler.framework.arguments import Arguments, Count
from scheduler.framework.plugin import Plugin, Waiting
from scheduler.framework.session import Session


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
    """network-topology-aware's arguments: Volcano's weight, and muster's label tiers."""

    weight: Count = Field(1, ge=0)
    tiers: list[LabelTierArgument] = Field(default_factory=list)

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


class NetworkTopologyPlugin(Plugin[NetworkTopologyArguments]):
    """Resolves the topology for the session's actions and checks each gang's spec."""

    name = "network-topology-aware"

    def __init__(
        self, arguments: NetworkTopologyArguments | Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(arguments)
        self._view: SessionTopology | None = None
        # Where each task this session placed went: unplace clears a task's node before
        # telling plugins, and the domain sums of that node must still go stale.
        self._placed_on: dict[str, str] = {}

    def on_session_open(self, session: Session) -> None:
        """Resolve the topology, name its problems, and mark spec.networkTopology honoured."""
        snapshot = session.snapshot
        topology = resolve_cached(snapshot.hypernodes, snapshot.nodes, self.arguments.label_tiers())
        self._view = SessionTopology(topology, snapshot.nodes, prefer=self.arguments.weight > 0)
        session.topology = self._view
        for problem in topology.problems:
            session.warn(problem.kind, problem.name, problem.reason, problem.message)
        for job in session.jobs.values():
            if NETWORK_TOPOLOGY_FIELD in job.unhonoured:
                job.unhonoured = tuple(f for f in job.unhonoured if f != NETWORK_TOPOLOGY_FIELD)

    def on_session_close(self, session: Session) -> None:
        """Drop the session's view."""
        self._view = None
        self._placed_on.clear()

    def job_valid(self, job: JobInfo) -> Waiting | None:
        """A highestTierName no tier has: the gang cannot be placed as asked."""
        spec = job.network_topology
        if spec is None or not spec.highest_tier_name or self._view is None:
            return None
        names = self._view.topology.tier_names
        if spec.highest_tier_name in names:
            return None
        known = ", ".join(f"{n} (tier {t})" for n, t in sorted(names.items())) or "none"
        return Waiting(
            INVALID_NETWORK_TOPOLOGY,
            f"{NETWORK_TOPOLOGY_FIELD}.highestTierName={spec.highest_tier_name!r} names no "
            f"tier (tier names: {known}); set spec.tierName on the HyperNodes of that tier, "
            f"or use highestTierAllowed",
        )

    def on_allocate(self, task: TaskInfo) -> None:
        """A task took room: its node's domains have less."""
        if self._view is not None and task.node_name:
            self._placed_on[task.uid] = task.node_name
            self._view.touched(task.node_name)

    def on_deallocate(self, task: TaskInfo) -> None:
        """A task gave room back: its node's domains have more."""
        if self._view is None:
            return
        node = task.node_name or self._placed_on.pop(task.uid, "")
        if node:
            self._view.touched(node)
