"""The kinds the scheduler watches, how each is keyed and stored, what their reflectors count."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import msgspec
import pytest

from scheduler.api import dra, wire
from scheduler.api.hypernode import HyperNode
from scheduler.cache import kinds
from scheduler.cache.kinds.base import Handler
from scheduler.cache.reflector import Kind
from scheduler.cache.wiring import HANDLERS, world_kinds, world_reflectors
from scheduler.cache.world import World
from scheduler.metrics import Metrics
from tests.unit import native_objects


def world() -> World:
    return World(frozenset({"muster"}), "default")


def kinds_by_name(subject: World) -> dict[str, Kind[Any]]:
    return {kind.name: kind for kind in world_kinds(subject)}


@pytest.mark.parametrize(
    ("name", "path", "wire_type"),
    [
        pytest.param("node", "/api/v1/nodes", wire.Node, id="node"),
        pytest.param(
            "priorityclass",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            wire.PriorityClass,
            id="priorityclass",
        ),
        pytest.param("queue", "/apis/scheduling.volcano.sh/v1beta1/queues", wire.Queue, id="queue"),
        pytest.param(
            "podgroup",
            "/apis/scheduling.volcano.sh/v1beta1/podgroups",
            wire.PodGroup,
            id="podgroup-all-namespaces",
        ),
        pytest.param("pod", "/api/v1/pods", wire.Pod, id="pod-all-namespaces"),
        pytest.param("namespace", "/api/v1/namespaces", wire.Namespace, id="namespace"),
        pytest.param(
            "persistentvolumeclaim",
            "/api/v1/persistentvolumeclaims",
            wire.PersistentVolumeClaim,
            id="pvc-all-namespaces",
        ),
        pytest.param(
            "persistentvolume", "/api/v1/persistentvolumes", wire.PersistentVolume, id="pv"
        ),
        pytest.param(
            "storageclass",
            "/apis/storage.k8s.io/v1/storageclasses",
            wire.StorageClass,
            id="storageclass",
        ),
        pytest.param("csinode", "/apis/storage.k8s.io/v1/csinodes", wire.CSINode, id="csinode"),
        pytest.param(
            "poddisruptionbudget",
            "/apis/policy/v1/poddisruptionbudgets",
            wire.PodDisruptionBudget,
            id="pdb-all-namespaces",
        ),
        pytest.param(
            "hypernode", "/apis/topology.volcano.sh/v1alpha1/hypernodes", HyperNode, id="hypernode"
        ),
        pytest.param(
            "deviceclass",
            "/apis/resource.k8s.io/v1/deviceclasses",
            dra.DeviceClass,
            id="deviceclass",
        ),
        pytest.param(
            "resourceslice",
            "/apis/resource.k8s.io/v1/resourceslices",
            dra.ResourceSlice,
            id="resourceslice",
        ),
        pytest.param(
            "resourceclaim",
            "/apis/resource.k8s.io/v1/resourceclaims",
            dra.ResourceClaim,
            id="resourceclaim-all-namespaces",
        ),
    ],
)
def test_each_kind_is_listed_cluster_wide_from_its_api_path(
    name: str, path: str, wire_type: type[Any]
) -> None:
    kind = kinds_by_name(world())[name]
    assert (kind.path, kind.wire_type) == (path, wire_type)


WATCHED = [
    "csinode",
    "deviceclass",
    "hypernode",
    "namespace",
    "nativepodgroup",
    "node",
    "persistentvolume",
    "persistentvolumeclaim",
    "pod",
    "poddisruptionbudget",
    "podgroup",
    "priorityclass",
    "provisioningrequest",
    "queue",
    "resourceclaim",
    "resourceslice",
    "storageclass",
    "workload",
]


def test_exactly_the_kinds_sessions_read_are_watched() -> None:
    assert sorted(kinds_by_name(world())) == WATCHED


def test_every_handler_a_kind_module_declares_is_registered_once() -> None:
    declared = [
        value
        for info in pkgutil.iter_modules(kinds.__path__)
        for value in vars(importlib.import_module(f"{kinds.__name__}.{info.name}")).values()
        if isinstance(value, Handler)
    ]
    assert sorted(h.name for h in declared) == sorted(h.name for h in HANDLERS) == WATCHED


def test_pods_are_keyed_by_uid_and_podgroups_by_namespace_and_name() -> None:
    kinds = kinds_by_name(world())
    pod = msgspec.convert({"metadata": {"namespace": "ml", "name": "w", "uid": "u-1"}}, wire.Pod)
    group = msgspec.convert({"metadata": {"namespace": "ml", "name": "train"}}, wire.PodGroup)
    assert kinds["pod"].key(pod) == "u-1"
    assert kinds["podgroup"].key(group) == "ml/train"


def test_a_podgroup_deleted_by_key_leaves_the_world() -> None:
    subject = world()
    kind = kinds_by_name(subject)["podgroup"]
    group = msgspec.convert({"metadata": {"namespace": "ml", "name": "train"}}, wire.PodGroup)
    kind.upsert(group)
    assert subject.counts()["podgroup"] == 1
    kind.delete(kind.key(group))
    assert subject.counts()["podgroup"] == 0


def test_reflectors_count_restarts_and_undecodable_objects_by_kind() -> None:
    metrics = Metrics()
    client: Any = object()  # reflectors that are never run send nothing
    reflectors = {r.name: r for r in world_reflectors(client, world(), metrics)}
    registry = metrics.registry
    # the undecodable series exist from the start, at 0
    assert registry.get_sample_value("muster_undecodable_objects_total", {"resource": "pod"}) == 0
    reflectors["pod"].on_undecodable("pod ml/w cannot be read and is ignored")
    reflectors["queue"].on_restart("relist")
    assert registry.get_sample_value("muster_undecodable_objects_total", {"resource": "pod"}) == 1
    assert registry.get_sample_value("muster_relists_total", {"resource": "queue"}) == 1
    assert registry.get_sample_value("muster_relists_total", {"resource": "pod"}) is None


def test_every_reflector_shares_the_one_client() -> None:
    # One client, one connection pool and one qps budget for every watch.
    client: Any = object()
    reflectors = world_reflectors(client, world(), Metrics())
    assert sorted(r.name for r in reflectors) == WATCHED
    assert all(r.client is client for r in reflectors)


def test_the_pod_kind_names_spec_fields_newer_than_musters_list() -> None:
    # A field the API server knows and muster does not reaches the World named, never
    # dropped without a word (api/pod_fields.py).
    kind = kinds_by_name(world())["pod"]
    raw = msgspec.json.encode(
        {"metadata": {"name": "p", "uid": "u"}, "spec": {"containers": [], "fancyNewField": 1}}
    )

    assert kind.decode is not None
    pod = kind.decode(msgspec.Raw(raw))

    assert pod.unknown_spec_fields == ("fancyNewField",)


def test_every_reflector_lists_in_pages_of_the_given_size() -> None:
    client: Any = object()
    assert {r.page_size for r in world_reflectors(client, world(), Metrics())} == {5000}
    sized = world_reflectors(client, world(), Metrics(), page_size=250)
    assert {r.page_size for r in sized} == {250}


def test_reflectors_count_failures_by_code_and_export_how_long_a_watch_is_broken() -> None:
    metrics = Metrics()
    client: Any = object()
    reflectors = {r.name: r for r in world_reflectors(client, world(), metrics)}
    registry = metrics.registry
    assert registry.get_sample_value("muster_watch_broken_seconds", {"resource": "pod"}) == 0
    now = [100.0]
    pod = reflectors["pod"]
    pod.clock = lambda: now[0]
    pod.on_failure("403")
    pod._broken()  # what run() does on a failed list or watch
    now[0] += 12
    assert (
        registry.get_sample_value("muster_watch_failures_total", {"resource": "pod", "code": "403"})
        == 1
    )
    assert registry.get_sample_value("muster_watch_broken_seconds", {"resource": "pod"}) == 12


def test_native_podgroups_and_workloads_are_watched_at_the_version_discovery_finds() -> None:
    kinds = kinds_by_name(world())
    for name in ("nativepodgroup", "workload"):
        assert kinds[name].discover is not None
        assert kinds[name].path == ""
    group = native_objects.native_podgroup("train", 2, namespace="ml")
    assert kinds["nativepodgroup"].key(group) == "scheduling.k8s.io/ml/train"
