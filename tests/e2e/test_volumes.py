"""Pods with PersistentVolumeClaims end to end over HTTP: a pod follows its zonal volume, a
WaitForFirstConsumer claim is provisioned on the node muster chose (PreBind's selected-node),
an unbound Immediate claim keeps its pod pending with kube-scheduler's words, and a gang whose
members each have a WaitForFirstConsumer claim binds whole."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    Cluster,
    Obj,
    condition,
    confine_to_pool,
    make_gang,
    make_pod,
    node_names,
    wait_for,
)

ZONE = "topology.kubernetes.io/zone"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


class Storage:
    """The test's cluster-scoped storage objects (named uniquely), deleted afterwards."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.storage = client.StorageV1Api(cluster.api)
        self.suffix = uuid.uuid4().hex[:6]
        self.classes: list[str] = []
        self.volumes: list[str] = []

    def storage_class(self, stem: str, *, mode: str, provisioner: str) -> str:
        name = f"e2e-{stem}-{self.suffix}"
        self.storage.create_storage_class(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": name},
                "provisioner": provisioner,
                "volumeBindingMode": mode,
            }
        )
        self.classes.append(name)
        return name

    def zonal_volume(self, stem: str, storage_class: str, zone: str) -> str:
        name = f"e2e-{stem}-{self.suffix}"
        self.cluster.core.create_persistent_volume(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name, "labels": {ZONE: zone}},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": storage_class,
                    "persistentVolumeReclaimPolicy": "Retain",
                    "local": {"path": "/mnt/disk"},
                    "nodeAffinity": {
                        "required": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": ZONE, "operator": "In", "values": [zone]}
                                    ]
                                }
                            ]
                        }
                    },
                },
            }
        )
        self.volumes.append(name)
        return name

    def claim(self, namespace: str, name: str, storage_class: str) -> None:
        self.cluster.core.create_namespaced_persistent_volume_claim(
            namespace,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": storage_class,
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        )

    def claim_object(self, namespace: str, name: str) -> Any:
        return self.cluster.core.read_namespaced_persistent_volume_claim(name, namespace)

    def cleanup(self, namespace: str) -> None:
        # Deletes answer the deleted object (kube-apiserver) or a Status (sim, today): the
        # answers are not read.
        raw = {"_preload_content": False}
        for claim in self.cluster.core.list_namespaced_persistent_volume_claim(namespace).items:
            self.cluster.core.delete_namespaced_persistent_volume_claim(
                claim.metadata.name, namespace, **raw
            )
        for name in self.volumes:
            self.cluster.core.delete_persistent_volume(name, **raw)
        for claim_volume in self.cluster.core.list_persistent_volume().items:
            ref = claim_volume.spec.claim_ref
            if ref is not None and ref.namespace == namespace:
                self.cluster.core.delete_persistent_volume(claim_volume.metadata.name, **raw)
        for name in self.classes:
            self.storage.delete_storage_class(name, **raw)


@pytest.fixture
def storage(cluster: Cluster, namespace: str) -> Iterator[Storage]:
    made = Storage(cluster)
    yield made
    made.cleanup(namespace)


def label_zones(cluster: Cluster) -> dict[str, str]:
    """Put the test's nodes in zones a, b, ... (one each); returns zone -> node."""
    zones: dict[str, str] = {}
    for index, name in enumerate(node_names(cluster)):
        zone = "abcdefgh"[index]
        cluster.core.patch_node(name, {"metadata": {"labels": {ZONE: zone}}})
        zones[zone] = name
    return zones


def pod_using(cluster: Cluster, name: str, *claims: str, group: str | None = None) -> Obj:
    pod = make_pod(name, group=group)
    pod["spec"]["volumes"] = [
        {"name": claim, "persistentVolumeClaim": {"claimName": claim}} for claim in claims
    ]
    if cluster.pool is not None:
        confine_to_pool(pod, cluster.pool)
    return pod


def on_sim(cluster: Cluster) -> bool:
    """Whether sim's PV controller, provisioner and kubelet stand behind the API (a real
    cluster of the suite has none: there only muster's own writes can be checked)."""
    return cluster.pool is None


def running_on(cluster: Cluster, namespace: str, name: str) -> str | None:
    """The pod's node once it runs (on sim; on a real cluster, once it is bound)."""
    pod = cluster.core.read_namespaced_pod(name, namespace)
    if on_sim(cluster) and pod.status.phase != "Running":
        return None
    return str(pod.spec.node_name) if pod.spec.node_name else None


@pytest.mark.nodes(2, "4")
def test_a_pod_follows_its_bound_zonal_volume_and_runs(
    cluster: Cluster, namespace: str, storage: Storage, start_scheduler: StartScheduler
) -> None:
    if not on_sim(cluster):
        pytest.skip("needs a PV controller to bind the claim (sim runs one)")
    zones = label_zones(cluster)
    manual = storage.storage_class(
        "manual", mode="Immediate", provisioner="kubernetes.io/no-provisioner"
    )
    volume = storage.zonal_volume("zone-b", manual, "b")
    storage.claim(namespace, "data", manual)
    wait_for(
        lambda: storage.claim_object(namespace, "data").status.phase == "Bound" or None,
        timeout=10,
        message="the PV controller binds the claim to the zone-b volume",
    )
    assert storage.claim_object(namespace, "data").spec.volume_name == volume
    start_scheduler(period=0.5)
    cluster.create_pod(namespace, pod_using(cluster, "db", "data"))
    node = wait_for(
        lambda: running_on(cluster, namespace, "db"),
        timeout=15,
        message=lambda: f"db Running\n{cluster.describe(namespace)}",
    )
    assert node == zones["b"]


@pytest.mark.nodes(2, "4")
def test_a_wait_for_first_consumer_claim_is_provisioned_on_the_chosen_node(
    cluster: Cluster, namespace: str, storage: Storage, start_scheduler: StartScheduler
) -> None:
    zones = label_zones(cluster)
    lazy = storage.storage_class(
        "lazy", mode="WaitForFirstConsumer", provisioner="csi.e2e.example.com"
    )
    storage.claim(namespace, "data", lazy)
    start_scheduler(period=0.5)
    cluster.create_pod(namespace, pod_using(cluster, "app", "data"))
    if not on_sim(cluster):
        # No provisioner here: the claim gets its node, and the pod, as with
        # kube-scheduler, is not bound while its claim waits to be provisioned.
        selected = wait_for(
            lambda: (storage.claim_object(namespace, "data").metadata.annotations or {}).get(
                SELECTED_NODE
            ),
            timeout=15,
            message="selected-node on the claim",
        )
        assert selected in zones.values()
        assert cluster.placements(namespace)["app"] is None
        return
    node = wait_for(
        lambda: running_on(cluster, namespace, "app"),
        timeout=15,
        message=lambda: f"app Running\n{cluster.describe(namespace)}",
    )
    claim = storage.claim_object(namespace, "data")
    assert claim.metadata.annotations[SELECTED_NODE] == node
    assert claim.status.phase == "Bound"
    volume = cluster.core.read_persistent_volume(claim.spec.volume_name)
    (term,) = volume.spec.node_affinity.required.node_selector_terms
    pinned = {e.key: e.values for e in term.match_expressions}
    node_labels = cluster.core.read_node(node).metadata.labels
    assert pinned and all(node_labels.get(key) in values for key, values in pinned.items())


@pytest.mark.nodes(2, "4")
def test_an_unbound_immediate_claim_keeps_its_pod_pending_with_kube_schedulers_words(
    cluster: Cluster, namespace: str, storage: Storage, start_scheduler: StartScheduler
) -> None:
    stuck = storage.storage_class(
        "stuck", mode="Immediate", provisioner="kubernetes.io/no-provisioner"
    )
    storage.claim(namespace, "data", stuck)
    start_scheduler(period=0.5)
    cluster.create_pod(namespace, pod_using(cluster, "waiting", "data"))

    def scheduled_false() -> Obj | None:
        pod = next(p for p in cluster.pods(namespace) if p["metadata"]["name"] == "waiting")
        found = condition(pod, "PodScheduled")
        return found if found and found.get("status") == "False" else None

    found = wait_for(scheduled_false, timeout=10, message="PodScheduled=False on waiting")
    assert found["reason"] == "Unschedulable"
    assert "pod has unbound immediate PersistentVolumeClaims" in found["message"]
    assert cluster.placements(namespace)["waiting"] is None


@pytest.mark.nodes(3, "4")
def test_a_gang_each_with_a_wait_for_first_consumer_claim_binds_whole(
    cluster: Cluster, namespace: str, storage: Storage, start_scheduler: StartScheduler
) -> None:
    if not on_sim(cluster):
        pytest.skip("needs a provisioner to bind the claims before the pods (sim runs one)")
    lazy = storage.storage_class(
        "gang", mode="WaitForFirstConsumer", provisioner="csi.e2e.example.com"
    )
    podgroup, _ = make_gang("train", 3)
    pods = [pod_using(cluster, f"train-{i}", f"data-{i}", group="train") for i in range(3)]
    for i in range(3):
        storage.claim(namespace, f"data-{i}", lazy)
    start_scheduler(period=0.5)
    cluster.submit(namespace, podgroup, pods)
    nodes = {
        f"train-{i}": wait_for(
            lambda i=i: running_on(cluster, namespace, f"train-{i}"),
            timeout=20,
            message=lambda: f"the gang Running\n{cluster.describe(namespace)}",
        )
        for i in range(3)
    }
    for i in range(3):
        claim = storage.claim_object(namespace, f"data-{i}")
        assert claim.metadata.annotations[SELECTED_NODE] == nodes[f"train-{i}"]


@pytest.mark.nodes(2, "4")
def test_a_wait_for_first_consumer_claim_gets_the_static_volume_muster_chose(
    cluster: Cluster, namespace: str, storage: Storage, start_scheduler: StartScheduler
) -> None:
    if not on_sim(cluster):
        pytest.skip("needs a PV controller to make the volume Available (sim runs one)")
    zones = label_zones(cluster)
    local = storage.storage_class(
        "local", mode="WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner"
    )
    volume = storage.zonal_volume("local-b", local, "b")
    storage.claim(namespace, "data", local)
    start_scheduler(period=0.5)
    cluster.create_pod(namespace, pod_using(cluster, "cache", "data"))
    node = wait_for(
        lambda: running_on(cluster, namespace, "cache"),
        timeout=15,
        message=lambda: f"cache Running\n{cluster.describe(namespace)}",
    )
    assert node == zones["b"]
    claim = storage.claim_object(namespace, "data")
    ref = cluster.core.read_persistent_volume(volume).spec.claim_ref
    assert (ref.namespace, ref.name) == (namespace, "data")
    # PreBind set the volume's claimRef; the PV controller finished the binding
    assert (claim.status.phase, claim.spec.volume_name) == ("Bound", volume)
    assert SELECTED_NODE not in (claim.metadata.annotations or {})
