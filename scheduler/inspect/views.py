"""What a session says about each PodGroup and queue, as plain rows for the commands to print.

Pure: every figure and message comes from the session's result (the status it would write)
or, where the result holds no update because the server already has it, from the object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.api.job import JobInfo
from scheduler.api.names import GROUP
from scheduler.api.native import GROUP as NATIVE_GROUP
from scheduler.api.native import PODGROUP_RESOURCE, native_key
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.reasons import ADMITTED, UNSCHEDULABLE
from scheduler.api.resources import UNLIMITED, Resource, share_of
from scheduler.api.task import TaskStatus
from scheduler.api.timestamps import parse_rfc3339
from scheduler.cache.world import World
from scheduler.framework.decisions import GroupCondition, PodGroupStatusUpdate, SessionResult
from scheduler.framework.podgroup_conditions import scheduled_condition
from scheduler.inspect.cluster import Session


@dataclass(frozen=True)
class GroupView:
    """A PodGroup as the session leaves it."""

    namespace: str
    name: str
    queue: str
    phase: str
    min_member: int
    members: int
    placed: int
    created: str
    conditions: tuple[GroupCondition, ...]
    # A native PodGroup's (scheduling.k8s.io) scheduled condition type; "" for Volcano's.
    scheduled_type: str = ""

    @property
    def native(self) -> bool:
        """Whether it is a native PodGroup (podgroups.scheduling.k8s.io)."""
        return bool(self.scheduled_type)

    @property
    def key(self) -> str:
        """The gang key: namespace/name, scheduling.k8s.io/namespace/name for a native one."""
        if self.native:
            return native_key(self.namespace, self.name)
        return f"{self.namespace}/{self.name}"

    @property
    def title(self) -> str:
        """How the commands name it: "PodGroup ns/name", or a native one's resource."""
        kind = PODGROUP_RESOURCE if self.native else "PodGroup"
        return f"{kind} {self.namespace}/{self.name}"

    @property
    def api(self) -> str:
        """Its API group."""
        return NATIVE_GROUP if self.native else GROUP

    def condition(self, kind: str) -> GroupCondition | None:
        """The condition of that type, if the PodGroup carries one."""
        return next((c for c in self.conditions if c.type == kind), None)

    @property
    def waiting_reason(self) -> str:
        """Why it waits, in one line: the Unschedulable condition's message (a native
        PodGroup's scheduled condition's while False; or the Admitted condition's when it
        was sent back); "" when it does not wait."""
        waiting = self.scheduled_type or UNSCHEDULABLE
        for kind in (waiting, ADMITTED):
            found = self.condition(kind)
            if found is None:
                continue
            if (kind == UNSCHEDULABLE) == (found.status == "True"):
                return found.message
        return ""

    def as_dict(self, now: float) -> dict[str, Any]:
        """The row as JSON."""
        return {
            "api": self.api,
            "namespace": self.namespace,
            "name": self.name,
            "queue": self.queue,
            "phase": self.phase,
            "minMember": self.min_member,
            "members": self.members,
            "placed": self.placed,
            "age": age(self.created, now),
            "reason": self.waiting_reason,
            "conditions": [
                {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
                for c in self.conditions
            ],
        }


@dataclass(frozen=True)
class QueueView:
    """A queue's figures as the session computed them."""

    name: str
    state: str
    weight: int
    parent: str
    allocated: Resource
    deserved: Resource | None
    capability: Resource | None
    podgroups: dict[str, int]

    @property
    def share(self) -> float | None:
        """Volcano's share (allocated over deserved), when the config computes deserved."""
        return share_of(self.allocated, self.deserved) if self.deserved is not None else None

    def as_dict(self) -> dict[str, Any]:
        """The row as JSON."""
        return {
            "name": self.name,
            "state": self.state,
            "weight": self.weight,
            "parent": self.parent,
            "allocated": self.allocated.to_list(),
            "deserved": self.deserved.to_list() if self.deserved is not None else None,
            "capability": resource_list(self.capability),
            "share": self.share,
            "podgroups": dict(self.podgroups),
        }


def resource_list(resource: Resource | None) -> dict[str, str] | None:
    """A ResourceList for JSON, "unlimited" where a limit has none."""
    if resource is None:
        return None
    return {
        key: "unlimited" if resource.get(key) >= UNLIMITED else value
        for key, value in resource.to_list().items()
    }


def short(resource: Resource | None) -> str:
    """A resource vector in a table cell: "cpu=2,memory=4Gi"; "-" when there is none."""
    if resource is None:
        return "-"
    listed = resource_list(resource) or {}
    return ",".join(f"{key}={value}" for key, value in listed.items()) or "0"


def age(created: str, now: float) -> str:
    """kubectl's AGE column (its HumanDuration): 90s, 5m30s, 12m, 5h10m, 30h, 3d4h, 20d."""
    since = parse_rfc3339(created) if created else None
    if since is None:
        return "<unknown>"
    return human_duration(int(now - since))


def human_duration(seconds: int) -> str:
    """A duration as kubectl shows ages: precise while short, coarser as it grows."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def _from_wire(job: JobInfo) -> tuple[GroupCondition, ...]:
    return tuple(
        GroupCondition(c.type, c.status, c.reason, c.message, c.last_transition_time or "")
        for c in job.conditions
    )


def group_view(
    job: JobInfo, update: PodGroupStatusUpdate | None, observed: JobInfo | None
) -> GroupView:
    """A PodGroup after the session: the status the session writes, else the one it keeps.

    `observed` is the job as the cluster holds it (before the session): how many members
    are placed now."""
    phase: PodGroupPhase = update.phase if update is not None else job.observed_phase
    conditions = update.conditions if update is not None else _from_wire(job)
    before = observed if observed is not None else job
    return GroupView(
        namespace=job.namespace,
        name=job.name,
        queue=job.queue,
        phase=phase.value,
        min_member=job.min_member,
        members=len(before.tasks),
        placed=before.ready_count(),
        created=job.creation_timestamp,
        conditions=conditions,
        scheduled_type=scheduled_condition(job) if job.native else "",
    )


def group_views(session: Session, world: World) -> list[GroupView]:
    """Every PodGroup (not the one-pod groups of bare pods), by namespace and name."""
    updates = {u.key: u for u in session.result.podgroups}
    views = [
        group_view(job, updates.get(key), world.live.jobs.get(key))
        for key, job in session.snapshot.jobs.items()
        if not job.shadow
    ]
    return sorted(views, key=lambda v: (v.namespace, v.name, v.native))


def queue_views(session: Session) -> list[QueueView]:
    """Every queue, by name."""
    queues = session.snapshot.queues
    views = []
    for update in session.result.queues:
        info = queues.get(update.name)
        views.append(
            QueueView(
                name=update.name,
                state=update.state,
                weight=info.weight if info is not None else 1,
                parent=info.parent if info is not None else "",
                allocated=update.allocated,
                deserved=update.deserved,
                capability=update.capability,
                podgroups=update.podgroups,
            )
        )
    return sorted(views, key=lambda v: v.name)


def pod_messages(result: SessionResult, job_key: str) -> dict[str, str]:
    """Pod name -> why the session leaves it pending, for one job."""
    return {p.name: p.message for p in result.unschedulable if p.job == job_key}


def device_words(result: SessionResult, job_key: str) -> dict[str, list[str]]:
    """Pod name -> muster's words for why its ResourceClaims found no devices (the claim,
    request and class, how many devices match and how many are free), for one job."""
    pending = {f"{p.namespace}/{p.name}": p.name for p in result.unschedulable if p.job == job_key}
    return {pending[key]: lines for key, lines in result.devices.items() if key in pending}


def member_nodes(session: Session, job_key: str) -> dict[str, tuple[str, str]]:
    """Pod name -> (node, status) of each member the session leaves on a node."""
    job = session.snapshot.jobs.get(job_key)
    if job is None:
        return {}
    return {
        task.name: (task.node_name, task.status.value)
        for task in job.tasks.values()
        if task.node_name and task.status is not TaskStatus.PENDING
    }


def table(header: list[str], rows: list[list[str]]) -> str:
    """Columns as kubectl prints them: left-aligned, three spaces apart, no trailing blanks."""
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = []
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines)


def verdict(view: GroupView, result: SessionResult) -> str:
    """ "runs" (placed already), "would run" (this session places it, or holds room for it
    while the pods it evicts leave) or "waits"."""
    if view.phase in (PodGroupPhase.RUNNING.value, PodGroupPhase.COMPLETED.value):
        return "runs" if view.placed >= view.min_member else "would run"
    if view.key in result.nominated:
        return "would run"
    return "waits"
