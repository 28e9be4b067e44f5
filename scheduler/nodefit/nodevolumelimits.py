"""NodeVolumeLimits for CSI drivers: no node attaches more of a driver's volumes than its
CSINode allows.

As kube-scheduler's NodeVolumeLimits: the new pod's claims count per driver (a bound
claim by its CSI volume's driver and handle, an unbound one by its class's provisioner
and a handle of its own), volumes already used by the node's pods (those placed in this
session included) are counted once each, and a driver whose CSINode entry has
allocatable.count refuses the node when they would exceed it: "node(s) exceed max volume
count". Not read: the node's legacy attachable-volumes-csi-* allocatable, and in-tree
volumes migrated to CSI.
"""

from __future__ import annotations

from collections import Counter

from scheduler.api import wire
from scheduler.api.node import NodeInfo
from scheduler.api.snapshot import StorageView
from scheduler.api.task import TaskInfo
from scheduler.framework.status import OK, Status, unschedulable
from scheduler.nodefit.volumebinding import claim_class

REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"
_EXCEEDED = unschedulable(REASON_MAX_VOLUME_COUNT)
# What an unbound claim's volume is called until it exists (kube uses a random prefix).
_UNBOUND_HANDLE = "unbound:"


class CSIVolumeLimits:
    """One session's volume counts per node and driver."""

    def __init__(self, storage: StorageView) -> None:
        self.storage = storage
        # node name -> (node version, unique volume name -> driver)
        self._attached: dict[str, tuple[int, dict[str, str]]] = {}

    def fits(self, task: TaskInfo, node: NodeInfo) -> Status:
        """Whether the node's CSINode limits take the task's CSI volumes."""
        csinode = self.storage.csinodes.get(node.name)
        if csinode is None:
            return OK
        limits = {
            driver.name: driver.allocatable.count
            for driver in csinode.spec.drivers
            if driver.allocatable is not None and driver.allocatable.count is not None
        }
        if not limits:
            return OK
        new = self._volumes(task.placement.claims)
        if not new:
            return OK
        attached = self._attached_volumes(node, exclude=task.uid)
        new_count = Counter(driver for name, driver in new.items() if name not in attached)
        attached_count = Counter(attached.values())
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count[driver] + count > limit:
                return _EXCEEDED
        return OK

    def _attached_volumes(self, node: NodeInfo, exclude: str) -> dict[str, str]:
        cached = self._attached.get(node.name)
        if cached is None or cached[0] != node.version:
            volumes: dict[str, str] = {}
            for other in node.tasks.values():
                if other.placement.claims:
                    volumes.update(self._volumes(other.placement.claims))
            cached = self._attached[node.name] = (node.version, volumes)
        if exclude in node.tasks:
            # The task itself (re-checked where it is placed) does not count against itself.
            others: dict[str, str] = {}
            for uid, other in node.tasks.items():
                if uid != exclude and other.placement.claims:
                    others.update(self._volumes(other.placement.claims))
            return others
        return cached[1]

    def _volumes(self, keys: tuple[str, ...]) -> dict[str, str]:
        """Unique volume name -> CSI driver, for the claims that use a CSI driver."""
        found: dict[str, str] = {}
        for key in keys:
            claim = self.storage.claims.get(key)
            if claim is None:
                continue
            driver, handle = self._driver_and_handle(key, claim)
            if driver and handle:
                found[f"{driver}/{handle}"] = driver
        return found

    def _driver_and_handle(self, key: str, claim: wire.PersistentVolumeClaim) -> tuple[str, str]:
        volume = (
            self.storage.volumes.get(claim.spec.volume_name) if claim.spec.volume_name else None
        )
        if volume is not None:
            csi = volume.spec.csi
            return (csi.driver, csi.volume_handle) if csi is not None else ("", "")
        storage_class = self.storage.classes.get(claim_class(claim))
        if storage_class is None:
            return "", ""
        return storage_class.provisioner, _UNBOUND_HANDLE + key
