"""Storage objects, for pods with claims (VolumeBinding and its kin): PersistentVolumeClaims,
PersistentVolumes, StorageClasses and CSINodes, decoded into the few fields the volume
plugins read.

The four kinds are handled alike, into one StorageView sessions share: any change unsettles
every gang and, as kube-scheduler requeues pods on PV and PVC events, brings the gangs that
failed back at once (a pod that waited for a claim to be bound or a volume to appear is
tried again). One handler per kind, each a line in cache/wiring.py.
"""

from __future__ import annotations

from typing import Any

from scheduler.api import wire
from scheduler.cache.kinds.base import Handler, named, namespaced
from scheduler.cache.table import ReadOnlyTable
from scheduler.cache.world import World


def upsert_claim(world: World, claim: wire.PersistentVolumeClaim) -> None:
    """A PersistentVolumeClaim was added or changed."""
    _store(world, world.claims, namespaced(claim), claim)


def delete_claim(world: World, key: str) -> None:
    """A PersistentVolumeClaim ("namespace/name") is gone."""
    _store(world, world.claims, key, None)


def upsert_volume(world: World, volume: wire.PersistentVolume) -> None:
    """A PersistentVolume was added or changed."""
    _store(world, world.volumes, volume.metadata.name, volume)


def delete_volume(world: World, name: str) -> None:
    """A PersistentVolume is gone."""
    _store(world, world.volumes, name, None)


def upsert_storage_class(world: World, storage_class: wire.StorageClass) -> None:
    """A StorageClass was added or changed."""
    _store(world, world.storage_classes, storage_class.metadata.name, storage_class)


def delete_storage_class(world: World, name: str) -> None:
    """A StorageClass is gone."""
    _store(world, world.storage_classes, name, None)


def upsert_csinode(world: World, csinode: wire.CSINode) -> None:
    """A CSINode was added or changed."""
    _store(world, world.csinodes, csinode.metadata.name, csinode)


def delete_csinode(world: World, name: str) -> None:
    """A CSINode is gone."""
    _store(world, world.csinodes, name, None)


def _store(world: World, table: ReadOnlyTable[Any], key: str, obj: Any) -> None:
    world.cluster_changed()
    if obj is None:
        if not table.remove(key):
            return
    else:
        table.put(key, obj)
    world.room_freed()


CLAIMS = Handler(
    "persistentvolumeclaim",
    "/api/v1/persistentvolumeclaims",
    wire.PersistentVolumeClaim,
    namespaced,
    upsert_claim,
    delete_claim,
)
VOLUMES = Handler(
    "persistentvolume",
    "/api/v1/persistentvolumes",
    wire.PersistentVolume,
    named,
    upsert_volume,
    delete_volume,
)
CLASSES = Handler(
    "storageclass",
    "/apis/storage.k8s.io/v1/storageclasses",
    wire.StorageClass,
    named,
    upsert_storage_class,
    delete_storage_class,
)
CSINODES = Handler(
    "csinode",
    "/apis/storage.k8s.io/v1/csinodes",
    wire.CSINode,
    named,
    upsert_csinode,
    delete_csinode,
)
