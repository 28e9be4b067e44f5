"""VolumeRestrictions: a ReadWriteOncePod claim is used by one pod at a time, cluster-wide.

As kube-scheduler's VolumeRestrictions (1.27+): a pod whose ReadWriteOncePod claim some
other placed pod already uses is unschedulable on every node, with kube's reason, and
Unschedulable rather than unresolvable: preempting the user cures it (preempt and reclaim
deallocate victims, which this index follows). The index of claim users is built once per
session, and only when a pod with such a claim is judged. Inline disk conflicts (GCE PD,
EBS, RBD, iSCSI volume sources) are not checked.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.api.node import NodeInfo
from scheduler.api.snapshot import StorageView
from scheduler.api.task import TERMINAL_STATUSES, TaskInfo
from scheduler.framework.status import OK, Status, unschedulable

REASON_RWOP_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
_CONFLICT = unschedulable(REASON_RWOP_CONFLICT)


class ReadWriteOncePod:
    """One session's users of claims (namespace/name -> uids of placed pods)."""

    def __init__(self, storage: StorageView, nodes: Mapping[str, NodeInfo]) -> None:
        self.storage = storage
        self.nodes = nodes
        self._users: dict[str, set[str]] | None = None
        self._exclusive: dict[tuple[str, ...], tuple[str, ...]] = {}

    def fits(self, task: TaskInfo) -> Status:
        """Whether no other placed pod uses one of the task's ReadWriteOncePod claims."""
        exclusive = self._exclusive_claims(task.placement.claims)
        if not exclusive:
            return OK
        users = self._index()
        for key in exclusive:
            if users.get(key, set()) - {task.uid}:
                return _CONFLICT
        return OK

    def placed(self, task: TaskInfo) -> None:
        """A pod with claims was placed (or its eviction undone): it uses them."""
        if self._users is not None:
            for key in task.placement.claims:
                self._users.setdefault(key, set()).add(task.uid)

    def unplaced(self, task: TaskInfo) -> None:
        """A pod with claims was unplaced or is being evicted: its claims are free of it."""
        if self._users is not None:
            for key in task.placement.claims:
                self._users.get(key, set()).discard(task.uid)

    def _exclusive_claims(self, keys: tuple[str, ...]) -> tuple[str, ...]:
        cached = self._exclusive.get(keys)
        if cached is None:
            claims = self.storage.claims
            cached = self._exclusive[keys] = tuple(
                key
                for key in keys
                if (claim := claims.get(key)) is not None
                and READ_WRITE_ONCE_POD in claim.spec.access_modes
            )
        return cached

    def _index(self) -> dict[str, set[str]]:
        if self._users is None:
            users: dict[str, set[str]] = {}
            for node in self.nodes.values():
                for task in node.tasks.values():
                    if task.placement.claims and task.status not in TERMINAL_STATUSES:
                        for key in task.placement.claims:
                            users.setdefault(key, set()).add(task.uid)
            self._users = users
        return self._users
