"""The scheduler's cache keeps PVCs, PVs, StorageClasses and CSINodes for the volume
filters: sessions see them, and pay no copy while none of them changes."""

from __future__ import annotations

from typing import Any

from scheduler.api import wire
from scheduler.api.snapshot import PlacementFailures
from scheduler.cache.kinds import storage
from scheduler.cache.wiring import world_kinds
from scheduler.cache.world import World
from tests.unit.nodefit.test_volumebinding import claim, storage_class, volume


def world() -> World:
    return World(frozenset({"muster"}), "default")


def test_a_session_sees_the_storage_objects_by_their_keys() -> None:
    subject = world()
    storage.upsert_claim(subject, claim("data"))
    storage.upsert_volume(subject, volume("pv-1"))
    storage.upsert_storage_class(subject, storage_class("wfc"))
    storage.upsert_csinode(subject, wire.from_dict({"metadata": {"name": "n1"}}, wire.CSINode))
    view = subject.snapshot().storage
    assert list(view.claims) == ["ns/data"]
    assert list(view.volumes) == ["pv-1"]
    assert list(view.classes) == ["wfc"]
    assert list(view.csinodes) == ["n1"]


def test_sessions_share_one_view_until_a_storage_object_changes() -> None:
    subject = world()
    storage.upsert_claim(subject, claim("data"))
    first = subject.snapshot().storage
    assert subject.snapshot().storage is first
    storage.upsert_claim(subject, claim("more"))
    second = subject.snapshot().storage
    assert second is not first and sorted(second.claims) == ["ns/data", "ns/more"]
    # the view an earlier session holds does not change under it
    assert list(first.claims) == ["ns/data"]


def test_a_deleted_claim_leaves_the_view() -> None:
    subject = world()
    storage.upsert_claim(subject, claim("data"))
    storage.delete_claim(subject, "ns/data")
    assert dict(subject.snapshot().storage.claims) == {}


def test_a_claim_event_wakes_the_loop_and_retries_failed_gangs_at_once() -> None:
    # as kube-scheduler requeues pods on PVC and PV events
    subject = world()
    subject.live.failures["ns/g"] = PlacementFailures(3, 100.0)
    before = subject.generation
    storage.upsert_volume(subject, volume("pv-1"))
    assert subject.generation > before
    assert subject.live.failures == {}


def test_storage_kinds_are_watched_cluster_wide_and_keyed_as_the_view_keys_them() -> None:
    subject = world()
    kinds: dict[str, Any] = {kind.name: kind for kind in world_kinds(subject)}
    expected = {
        "persistentvolumeclaim": "/api/v1/persistentvolumeclaims",
        "persistentvolume": "/api/v1/persistentvolumes",
        "storageclass": "/apis/storage.k8s.io/v1/storageclasses",
        "csinode": "/apis/storage.k8s.io/v1/csinodes",
    }
    assert {name: kinds[name].path for name in expected} == expected
    kinds["persistentvolumeclaim"].upsert(claim("data"))
    assert kinds["persistentvolumeclaim"].key(claim("data")) == "ns/data"
    kinds["persistentvolumeclaim"].delete("ns/data")
    assert subject.counts()["persistentvolumeclaim"] == 0
