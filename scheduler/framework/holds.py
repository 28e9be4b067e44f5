"""Holds: room kept on chosen nodes for a starving gang until the whole gang fits.

A gang starves once it has waited longer than its waiting time since its PodGroup was
created (Volcano's `sla-waiting-time`: the PodGroup's `volcano.sh/sla-waiting-time`
annotation, else the `sla` plugin's argument, else DEFAULT_WAITING_TIME). Reordering
alone does not save it: each cpu that frees goes to the next small gang that fits,
and a big gang never sees enough free at once. So allocate serves starving gangs
first, oldest starving first, and one that still does not fit holds room:

1. The members it still needs (up to minMember and each role's minTaskMember) are laid
   out on the nodes where it fits best: nodes ranked by how many of its first member
   they have free now (held room of older holds excluded), then by name; each member
   goes on the first ranked node that admits it (static filters) and whose allocatable,
   less what older holds and this layout already took, has room for it. A gang that
   fits nowhere even on empty nodes, or whose request exceeds its queue's capability,
   can never fit: it holds nothing, and its condition says why (the layout:
   framework/hold_layout.py).
2. On each node of the layout it holds what is free now, up to what its members there
   need. Held room reads as used to every other gang of the session, in every queue,
   except gangs of a higher priority (they may take it; the holder keeps the rest).
3. Room that frees on a held node is free room at the next session, and is held again:
   nobody else could take it, so held nodes keep the most free room and the layout
   keeps choosing them. The held amount only grows until the gang fits, and allocate
   places it whole.

Holds are worked out again in every session from what the API server holds (the
PodGroup's creation time and annotations, the pods on nodes): nothing of them lives
only in memory, so a restarted scheduler holds the same room. A gang holds only while
its queue is within its deserved share; no two gangs hold the same room (each layout
excludes what older holds took).

Backfill: held room is never given to another gang of equal or lower priority; pods
that request nothing (backfill's best-effort pods) take none of it, and may use a held
node's pod slots beyond those held for the gang's members.

Devices: a member with ResourceClaims is laid out only on a node whose devices could
hold its claims were they all free, and holds the devices its claims would take there now
(the session's devices, nodefit/dynamicresources.py, allocate them tentatively for the
gang), against the same gangs held room is held against.

Provisioned capacity is held the same way, and harder. A gang for which a cluster
autoscaler provisioned nodes (its ProvisioningRequest is Provisioned, framework/scaleup.py)
is served by allocate before every other gang; if it does not fit yet (the new nodes are
not Ready), its members are laid out as above, those that fit nowhere yet left out (their
nodes are on the way), and the room is held against every other gang, whatever its
priority, until the gang is placed or the request's booking ends. Such a hold is PROVISIONED
(`Hold.kind`); a starving gang's is STARVING.

A partly bound gang (api/gang_state.py: some members bound, the gang never ready since it
was last Pending) that allocate cannot complete holds the room its missing members would
take the same way, against every other gang (PARTLY_BOUND): completing it comes before
any other gang's placement, until it is completed or undone.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from scheduler.api.gang_state import may_place, members_placed, placed_by_role
from scheduler.api.job import JobInfo
from scheduler.api.node import NodeInfo
from scheduler.api.reasons import (
    STARVING_CANNOT_FIT,
    STARVING_HOLDING,
    STARVING_NOT_HOLDING,
    STARVING_QUEUE_OVER_SHARE,
    STARVING_WAITS_TO_HOLD,
)
from scheduler.api.resources import Resource, describe
from scheduler.api.task import TaskInfo
from scheduler.api.timestamps import format_rfc3339, parse_rfc3339
from scheduler.api.verdicts import Starving
from scheduler.framework.hold_layout import lay_out_members, needed_members, positive
from scheduler.framework.session import Session

# How long a gang may wait before it starves, when neither its PodGroup nor the `sla`
# plugin says: long enough that a busy cluster's normal turnover places it first.
DEFAULT_WAITING_TIME = 60.0
# How many starving gangs hold room at once (the longest starving; the others wait their
# turn in the usual order). Every held cpu is idle until its gang fits, and muster does
# not know how long jobs run, so holders are few: more help only where starving gangs
# want different nodes (bench/starvation_bench.py --holding-gangs weighs the trade;
# docs/performance.md, "Sharing over time", has its figures).
DEFAULT_HOLDING_GANGS = 1


class HoldKind(enum.Enum):
    """Why room is held, which says who may still take it."""

    # For a gang past its waiting time: gangs of higher priority may take it.
    STARVING = "starving"
    # Capacity an autoscaler provisioned for the gang: no other gang may take it.
    PROVISIONED = "provisioned"
    # The missing members of a partly bound gang: no other gang may take it.
    PARTLY_BOUND = "partly-bound"


class DeviceHolder(Protocol):
    """Holding the devices of pods with ResourceClaims (nodefit/dynamicresources.py)."""

    def could_fit(self, task: TaskInfo, node: NodeInfo) -> bool:
        """Whether the node has devices enough for the pod were every device of it free."""

    def hold(self, task: TaskInfo, node: NodeInfo) -> bool:
        """Take the devices the pod's claims would take on the node now, if they fit."""

    def unhold(self, task: TaskInfo) -> None:
        """Give back the devices `hold` took."""


@dataclass(slots=True)
class Hold:
    """Room held for one gang: per node, the amount and the pod slots; the members whose
    devices it holds, and where."""

    job: JobInfo
    since: float
    need: Resource
    members: int
    amounts: dict[str, Resource] = field(default_factory=dict)
    pods: dict[str, int] = field(default_factory=dict)
    kind: HoldKind = HoldKind.STARVING
    # Members the layout found no node for (provisioned capacity not there yet).
    unplaced: int = 0
    # The members laid out with ResourceClaims, by node, and those whose devices it holds.
    with_devices: dict[str, list[TaskInfo]] = field(default_factory=dict)
    devices_held: list[TaskInfo] = field(default_factory=list)

    def yields_to(self, job: JobInfo) -> bool:
        """Whether `job` (another gang, or the holder) may take this room."""
        if self.job is job:
            return True
        return self.kind is HoldKind.STARVING and self.job.priority < job.priority

    def held(self) -> Resource:
        """Everything it holds now."""
        total = Resource()
        for amount in self.amounts.values():
            total.add(amount)
        return total


@dataclass(frozen=True, slots=True)
class StarvationPolicy:
    """How long gangs wait before they starve, and whether starving gangs hold room (the
    `sla` plugin's arguments; these defaults without it)."""

    waiting_time: float = DEFAULT_WAITING_TIME
    hold: bool = True
    holding_gangs: int = DEFAULT_HOLDING_GANGS


class Holds:
    """The holds of one session: made by allocate, read (and lifted for gangs of higher
    priority) by allocate, preempt and reclaim, given back when the session closes.

    A session policy: the cycle builder (framework/cycle.py) makes it, the cycle's state
    carries it, and the sla plugin sets its starvation policy when the session opens."""

    def __init__(self, session: Session, policy: StarvationPolicy | None = None) -> None:
        self.session = session
        # How long gangs wait before they starve, and whether they hold room: these
        # defaults without the sla plugin.
        # Writer: plugins/sla.py. Readers: Holds itself, actions/enqueue.py.
        self.policy: StarvationPolicy = policy if policy is not None else StarvationPolicy()
        self._holds: dict[str, Hold] = {}
        # The Pending gangs starving longest, which enqueue admits if the cluster and their
        # queue could ever hold them, whatever is free or reserved now.
        # Writer: actions/enqueue.py. Readers: Holds itself (jumps_admission, which
        # plugins/proportion.py and plugins/capacity.py ask).
        self.admitting: frozenset[str] = frozenset()
        # Called with every node whose room a lift gave back (node pickers re-offer it).
        self.on_freed: list[Callable[[NodeInfo], None]] = []
        # The session's devices, set by predicates when some pod has ResourceClaims: members
        # with claims are laid out where their devices could fit, and hold them.
        # Writer: plugins/predicates.py. Readers: Holds itself.
        self.devices: DeviceHolder | None = None

    # Who starves --------------------------------------------------------------
    def starving_since(self, job: JobInfo) -> float | None:
        """When the job started to starve (epoch seconds), or None while it does not."""
        since = self.starts_starving(job)
        return since if since is not None and self.session.snapshot.now >= since else None

    def starts_starving(self, job: JobInfo) -> float | None:
        """When the job starves if it still waits then (None: no creation time)."""
        created = parse_rfc3339(job.creation_timestamp)
        if created is None:
            return None
        wait = job.settings.waiting_time
        return created + (wait if wait is not None else self.policy.waiting_time)

    def starving_gangs(self, served: Collection[str]) -> list[tuple[float, JobInfo]]:
        """Admitted, valid gangs short of their gang that starve, oldest starving first;
        not those of `served` (the keys of the gangs allocate served first: partly bound
        gangs, and those whose capacity an autoscaler provisioned, framework/scaleup.py;
        their room is held harder)."""
        found: list[tuple[float, JobInfo]] = []
        # Not the settled ones (framework/settled.py): the next whole session weighs them.
        for job in self.session.active_jobs.values():
            since = self.starves(job, served)
            if since is not None:
                found.append((since, job))
        found.sort(key=lambda item: (item[0], item[1].key))
        return found

    def starves(self, job: JobInfo, served: Collection[str]) -> float | None:
        """Since when the job starves, if it is an admitted, valid gang short of its gang
        that starves and not of `served`; else None."""
        session = self.session
        if job.invalid is not None or job.shadow or job.queue not in session.queues:
            return None
        if job.key in served:
            return None  # its room is held harder (hold_provisioned, hold_missing)
        since = self.starving_since(job)
        if since is None or not may_place(job, session.config.actions) or not job.pending_tasks():
            return None
        if members_placed(job) >= job.min_member and not _roles_short(job):
            return None
        return since

    def holders(self, served: Collection[str]) -> dict[str, float]:
        """The starving gangs allocate serves first and that may hold room (key -> since
        when they starve): the longest starving, up to the policy's number, passing over
        those of queues over their deserved share (they wait their queue's turn) and those
        of `served` (served before them). The other starving gangs are told why they do
        not hold yet."""
        chosen: dict[str, float] = {}
        allocated = self._allocated_by_queue()
        for since, job in self.starving_gangs(served):
            if self._over_share(job.queue, allocated):
                self._say(
                    job,
                    since,
                    STARVING_QUEUE_OVER_SHARE,
                    f"queue {job.queue!r} is over its deserved share, so nothing is held for it",
                )
            elif len(chosen) < self.policy.holding_gangs:
                chosen[job.key] = since
            else:
                self._say(
                    job,
                    since,
                    STARVING_WAITS_TO_HOLD,
                    f"the {len(chosen)} gangs starving longest hold room first; it holds "
                    "room once fewer do",
                )
        return chosen

    def jumps_admission(self, job: JobInfo) -> bool:
        """Whether the job is one of the Pending gangs starving longest: its admission asks
        only whether the cluster and its queue could ever hold it."""
        return job.key in self.admitting

    # Holding ------------------------------------------------------------------
    def hold_for(self, job: JobInfo, since: float) -> None:
        """Hold room for a starving gang that allocate could not place (or say on the
        job why it holds none)."""
        if not self.policy.hold:
            self._say(job, since, STARVING_NOT_HOLDING, "holding is turned off (sla holdResources)")
            return
        session = self.session
        queue = session.queues[job.queue]
        if self._over_share(job.queue, self._allocated_by_queue()):
            self._say(
                job,
                since,
                STARVING_QUEUE_OVER_SHARE,
                f"queue {queue.name!r} is over its deserved share, so nothing is held for it",
            )
            return
        members = needed_members(job, session.sorted_tasks(job.pending_tasks()))
        need = Resource()
        for task in members:
            need.add(task.request)
        capability = queue.capability
        if capability is not None and not need.less_equal(capability, missing_is_infinite=True):
            self._say(
                job,
                since,
                STARVING_CANNOT_FIT,
                f"its members need {describe(need)}, more than queue {queue.name!r}'s "
                f"capability ({describe(capability)}); nothing is held for it",
            )
            return
        with_devices: dict[str, list[TaskInfo]] = {}
        layout = self._layout(members, partial=False, with_devices=with_devices)
        if layout is None:
            self._say(
                job,
                since,
                STARVING_CANNOT_FIT,
                f"its {len(members)} members do not fit the cluster's nodes even if they "
                "were empty; nothing is held for it",
            )
            return
        hold = Hold(job, since, need, len(members), with_devices=with_devices)
        hold = self._take(hold, layout)
        self._say(job, since, STARVING_HOLDING, self._describe(hold, layout))

    def hold_provisioned(self, job: JobInfo, since: float) -> None:
        """Hold, against every other gang, the room of the nodes where the members of a gang
        whose capacity was provisioned (at `since`) would go; members that fit on no node
        yet are left out (their nodes are on the way)."""
        self.hold_missing(job, since, HoldKind.PROVISIONED)

    def hold_missing(self, job: JobInfo, since: float, kind: HoldKind) -> Hold:
        """Hold, against every other gang, the room of the nodes where the gang's missing
        members would go (those it still needs: needed_members); members that fit on no
        node are left out. `kind` is PROVISIONED or PARTLY_BOUND; `since` when it began."""
        members = needed_members(job, self.session.sorted_tasks(job.pending_tasks()))
        need = Resource()
        for task in members:
            need.add(task.request)
        with_devices: dict[str, list[TaskInfo]] = {}
        # It needs its room now (its bound members wait for the rest; the capacity was made
        # for it): the room free now first (framework/hold_layout.py).
        layout = (
            self._layout(members, partial=True, with_devices=with_devices, free_first=True) or {}
        )
        hold = Hold(job, since, need, len(members), kind=kind, with_devices=with_devices)
        hold.unplaced = len(members) - sum(pods for _, pods in layout.values())
        return self._take(hold, layout)

    def held_for(self, job: JobInfo) -> str:
        """What the room held for the job holds now, in a condition's words ("" when no room
        is held for it)."""
        hold = next((hold for hold in self._holds.values() if hold.job is job), None)
        return "" if hold is None else self.describe(hold)

    def describe(self, hold: Hold) -> str:
        """What a hold holds now, node by node, in a condition's words."""
        held = [
            f"{describe(amount)} on {name}"
            for name, amount in sorted(hold.amounts.items())
            if not amount.is_empty()
        ]
        listed = "; ".join(held) if held else "nothing free yet"
        what = f"holds {listed} for its {hold.members} members"
        if hold.unplaced:
            what += f" ({hold.unplaced} of them fit on no node there is yet)"
        return what

    def _take(self, hold: Hold, layout: dict[NodeInfo, tuple[Resource, int]]) -> Hold:
        """Hold on each node of the layout what is free now, up to what it needs there."""
        for node, (amount, pods) in layout.items():
            taken = amount.minimum(positive(node.idle))
            slots = max(min(pods, node.max_pods - node.pod_count), 0)
            if taken.is_empty() and not slots:
                continue
            node.hold(taken, slots)
            hold.amounts[node.name] = taken
            hold.pods[node.name] = slots
        self._hold_devices(hold)
        self._holds[hold.job.key] = hold
        return hold

    def _hold_devices(self, hold: Hold) -> None:
        devices = self.devices
        if devices is None:
            return
        nodes = self.session.nodes
        for name, tasks in hold.with_devices.items():
            for task in tasks:
                if devices.hold(task, nodes[name]):
                    hold.devices_held.append(task)

    def _release_devices(self, hold: Hold) -> None:
        devices = self.devices
        if devices is None:
            return
        for task in reversed(hold.devices_held):
            devices.unhold(task)
        hold.devices_held.clear()

    @contextlib.contextmanager
    def lifted_for(self, job: JobInfo) -> Iterator[None]:
        """Give the job the room held for it, and the room starving gangs of lower priority
        hold, while it is placed (or evicts); hold again afterwards what is still free of
        it. Provisioned capacity is lifted for its own gang only."""
        lifted = [hold for hold in self._holds.values() if hold.yields_to(job)]
        for hold in lifted:
            self._release(hold)
        try:
            yield
        finally:
            for hold in lifted:
                self._retake(hold)

    def release_all(self) -> None:
        """Give every held room back (the session is closing)."""
        for hold in self._holds.values():
            self._release(hold, notify=False)
        self._holds.clear()

    @property
    def holds(self) -> list[Hold]:
        """The holds made this session, in the order they were made (partly bound gangs
        first, then provisioned capacity, then the oldest starving first)."""
        return list(self._holds.values())

    def holders_named(self, job: JobInfo) -> str:
        """Who holds room the job may not take, in a message's words ("" for nobody)."""
        others = [hold for hold in self._holds.values() if hold.job is not job]
        parts = []
        for kind, words in (
            (HoldKind.STARVING, "starving gangs"),
            (HoldKind.PROVISIONED, "gangs an autoscaler added nodes for"),
            (HoldKind.PARTLY_BOUND, "partly bound gangs"),
        ):
            names = ", ".join(hold.job.key for hold in others if hold.kind is kind)
            if names:
                parts.append(f"{words}: {names}")
        return "room on some nodes is held for " + "; for ".join(parts) if parts else ""

    def held_on(self, node: str) -> list[str]:
        """The gangs holding room on a node."""
        return [key for key, hold in self._holds.items() if node in hold.amounts]

    # Internals ----------------------------------------------------------------
    def _say(self, job: JobInfo, since: float, reason: str, what: str) -> None:
        waited = format_rfc3339(since)
        job.starving = Starving(since, reason, f"starving since {waited}: {what}")

    def _allocated_by_queue(self) -> dict[str, Resource]:
        allocated: dict[str, Resource] = {}
        for job in self.session.active_jobs.values():
            total = allocated.get(job.queue)
            if total is None:
                total = allocated[job.queue] = Resource()
            total.add(job.allocated)
        for queue, settled in self.session.snapshot.settled_totals.items():
            total = allocated.get(queue)
            if total is None:
                total = allocated[queue] = Resource()
            total.add(settled.allocated)
        return allocated

    def _over_share(self, queue: str, allocated: dict[str, Resource]) -> bool:
        # Strictly over: a queue that uses exactly what it deserves (one queue filling the
        # cluster with its own small gangs) is within it.
        figures = self.session.queue_figures.get(queue)
        if figures is None:
            return False
        return not allocated.get(queue, Resource()).less_equal(figures.deserved)

    def _layout(
        self,
        members: list[TaskInfo],
        *,
        partial: bool,
        with_devices: dict[str, list[TaskInfo]] | None = None,
        free_first: bool = False,
    ) -> dict[NodeInfo, tuple[Resource, int]] | None:
        """Where the members would go on nodes emptied of all but older holds, with
        `free_first` on the room free now first (framework/hold_layout.py)."""
        if not members:
            return {}
        taken_by_older: dict[str, Resource] = {}
        slots_by_older: dict[str, int] = {}
        for hold in self._holds.values():
            for name, amount in hold.amounts.items():
                taken_by_older.setdefault(name, Resource()).add(amount)
                slots_by_older[name] = slots_by_older.get(name, 0) + hold.pods[name]
        devices = self.devices
        return lay_out_members(
            self.session,
            members,
            taken_by_older,
            slots_by_older,
            devices.could_fit if devices is not None else None,
            partial=partial,
            with_devices=with_devices,
            free_first=free_first,
        )

    def _describe(self, hold: Hold, layout: dict[NodeInfo, tuple[Resource, int]]) -> str:
        held = [
            f"{describe(amount)} on {name}"
            for name, amount in sorted(hold.amounts.items())
            if not amount.is_empty()
        ]
        nodes = ", ".join(sorted(node.name for node in layout))
        what = "; ".join(held) if held else "nothing free yet"
        return (
            f"holds {what} for its {hold.members} members (they need {describe(hold.need)} "
            f"on {nodes}), until the whole gang fits"
        )

    def _release(self, hold: Hold, *, notify: bool = True) -> None:
        nodes = self.session.nodes
        self._release_devices(hold)
        for name, amount in hold.amounts.items():
            node = nodes[name]
            node.release_hold(amount, hold.pods[name])
            if notify:
                for listener in self.on_freed:
                    listener(node)

    def _retake(self, hold: Hold) -> None:
        nodes = self.session.nodes
        for name, amount in list(hold.amounts.items()):
            node = nodes[name]
            taken = amount.minimum(positive(node.idle))
            slots = max(min(hold.pods[name], node.max_pods - node.pod_count), 0)
            node.hold(taken, slots)
            hold.amounts[name] = taken
            hold.pods[name] = slots
        self._hold_devices(hold)


def _roles_short(job: JobInfo) -> bool:
    if not job.min_task_member:
        return False
    placed = placed_by_role(job)
    return any(placed.get(role, 0) < need for role, need in job.min_task_member.items())
