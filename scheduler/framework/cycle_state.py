"""CycleState: what one cycle's plugins and actions share, as typed fields with one writer each.

kube-scheduler passes a CycleState through a scheduling cycle's calls; muster's is made
with the session by the cycle builder (framework/cycle.py), handed to every plugin when the
session opens and closes and to every action that runs, and dropped with the session. A
field is written by one module, named in the comment above it with its readers (the
modules that read it through the state; tests/unit/framework/test_cycle_state.py holds the
code to both), so what one plugin tells an action is a declared, typed channel rather than
an attribute set on the session. A plugin that reads a field at every node or task keeps
the reference it read when the session opened; the node picker reads its fields once, when
it is made."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple, Protocol

from scheduler.api.job import JobInfo
from scheduler.api.network_topology import NetworkTopology
from scheduler.api.node import NodeInfo
from scheduler.api.session_topology import SessionTopology
from scheduler.api.task import TaskInfo
from scheduler.api.topology import label_topology
from scheduler.framework.holds import Holds
from scheduler.framework.scaleup import ScaleUp
from scheduler.framework.statement import Statement


class SpreadDomains(Protocol):
    """Topology spread verdicts by domain (nodefit/podtopologyspread.py answers them)."""

    def refusing_domain(self, task: TaskInfo, node: NodeInfo) -> tuple[str, str] | None:
        """The (topology key, value) whose skew refuses the task on the node, or None."""

    def domain_refuses(self, task: TaskInfo, domain: tuple[str, str]) -> bool:
        """Whether that domain still refuses the task."""


class SessionDevices(Protocol):
    """The session's devices for pods with ResourceClaims (nodefit/dynamicresources.py
    answers it)."""

    def pod_problem(self, task: TaskInfo, nodes: int) -> str | None:
        """Why the pod's claims keep it off every node now (its condition's words), or None."""

    def later(self, task: TaskInfo, node: NodeInfo) -> bool:
        """Whether the pod fits the node's devices only once pods leaving it let theirs go."""

    def fits_without(self, task: TaskInfo, node: NodeInfo, leaving: Iterable[TaskInfo]) -> bool:
        """Whether the pod's claims could be allocated on the node were `leaving` evicted."""


class Placement(NamedTuple):
    """The domains a topology gang is placed inside, and how far it may spread."""

    view: SessionTopology
    spec: NetworkTopology


# A native PodGroup's topology constraint: all of it inside one domain of its label.
_ONE_DOMAIN = NetworkTopology("hard", highest_tier=1)


class CycleState:
    """The state one cycle's plugins and actions share: each field typed, written by one
    module and read by those its comment names."""

    __slots__ = (
        "devices",
        "disruptions",
        "holds",
        "image_holders",
        "inqueue_timeout",
        "overcommit_factor",
        "pipelined",
        "scale_up",
        "spread_domains",
        "topology",
    )

    def __init__(self, holds: Holds, scale_up: ScaleUp) -> None:
        # Room held for starving gangs and provisioned capacity, a session policy: made by
        # the cycle builder, its starvation policy set by the sla plugin (Holds.policy), its
        # devices by predicates (Holds.devices).
        # Writer: framework/cycle.py. Readers: actions/allocate.py, actions/partly_bound.py,
        # actions/enqueue.py, actions/eviction.py, plugins/sla.py, plugins/proportion.py,
        # plugins/capacity.py, plugins/predicates.py, framework/settled.py,
        # framework/cycle.py.
        self.holds: Holds = holds
        # Asking an autoscaler for gangs' nodes, a session policy: made by the cycle builder,
        # its policy set by the scaleup plugin (ScaleUp.policy; none without it).
        # Writer: framework/cycle.py. Readers: actions/allocate.py, actions/placement.py,
        # plugins/scaleup.py, framework/cycle.py.
        self.scale_up: ScaleUp = scale_up
        # How long an admitted gang may wait to start (0: for ever), from enqueue's
        # inqueue-timeout; the clock rules of settled gangs read it.
        # Writer: actions/enqueue.py. Readers: framework/settled.py.
        self.inqueue_timeout: float = 0.0
        # The factor of Volcano's overcommit plugin when the config lists it (enqueue admits
        # up to that many times the cluster's allocatable); None without it.
        # Writer: plugins/overcommit.py. Readers: actions/enqueue.py.
        self.overcommit_factor: float | None = None
        # The session's network-topology domains and their free room, opened by the
        # network-topology-aware plugin; None without it: topology gangs are placed as any.
        # Allocate, preempt and reclaim ask for a gang's through topology_for; a gang with
        # subgroups is placed over it as it is.
        # Writer: plugins/networktopology.py. Readers: actions/subgroup_placement.py.
        self.topology: SessionTopology | None = None
        # The nodes holding one of a pod's images, the only nodes its images score above its
        # image-free twin; set by nodeorder when ImageLocality scores this session.
        # Writer: plugins/nodeorder.py. Readers: framework/node_picker.py.
        self.image_holders: Callable[[tuple[str, ...]], frozenset[str]] | None = None
        # Which topology domain refuses a pod, set by predicates when some pod of the session
        # has DoNotSchedule spread: the node picker sets a domain's nodes aside together
        # instead of weighing each again after every placement.
        # Writer: plugins/predicates.py. Readers: framework/node_picker.py.
        self.spread_domains: SpreadDomains | None = None
        # The session's devices, set by predicates when some pod of the session has
        # ResourceClaims: the node picker asks it what keeps such a pod off every node and
        # whether a yes only pipelines it; preemption, what evicting victims would free.
        # Writer: plugins/predicates.py. Readers: framework/node_picker.py,
        # actions/eviction.py.
        self.devices: SessionDevices | None = None
        # Per PodDisruptionBudget ("namespace/name"), the victims of the evictions this
        # session committed: what preempt and reclaim leave of its disruptionsAllowed.
        # Writer: actions/protection.py. Readers: actions/protection.py.
        self.disruptions: dict[str, int] = {}
        # Statements of gangs whose placements are kept pipelined to the end of the session
        # (they bind nothing until all of the gang can); the cycle's close pipelines them.
        # Writer: actions/placement.py. Readers: framework/cycle.py.
        self.pipelined: list[Statement] = []

    def topology_for(self, job: JobInfo, nodes: Mapping[str, NodeInfo]) -> Placement | None:
        """Where a topology gang goes: a native PodGroup's topology key puts every pod in
        one domain of that node label, whatever plugins the config lists (kube-scheduler
        honours it without a plugin in the config too); spec.networkTopology is placed
        over the network-topology-aware plugin's domains (`topology`). None for a gang with
        neither, or with a networkTopology and no plugin (it is then placed as any)."""
        if job.topology_key:
            # Its own view, its room summed afresh: the plugin keeps only `topology`'s
            # domains in step with the session's placements.
            return Placement(
                SessionTopology(label_topology(nodes, job.topology_key), nodes), _ONE_DOMAIN
            )
        spec = job.network_topology
        if self.topology is None or spec is None:
            return None
        return Placement(self.topology, spec)
