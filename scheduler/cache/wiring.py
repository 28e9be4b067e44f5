"""Which kinds keep a World current: one Reflector per kind, its restarts counted on Metrics."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from prometheus_client import Counter

from scheduler.api import hypernode, paths, provisioning, wire
from scheduler.api.hypernode import HyperNode
from scheduler.api.partition import NodePartition
from scheduler.cache.reflector import Kind, Reflector
from scheduler.cache.world import World
from scheduler.kube.client import KubeClient
from scheduler.metrics import Metrics

# HyperNodes (network topology), from Volcano's CRD or muster's crds/hypernode.yaml.
HYPERNODES_PATH = f"/apis/{hypernode.API_VERSION}/hypernodes"


def world_kinds(world: World, partition: NodePartition | None = None) -> list[Kind[Any]]:
    """Every kind the scheduler lists and watches cluster-wide, with the World methods
    that store and forget it; with a partition, only its nodes and queues."""
    selector = partition.selector if partition is not None else ""

    def namespaced(obj: Any) -> str:
        return f"{obj.metadata.namespace}/{obj.metadata.name}"

    def delete_podgroup(key: str) -> None:
        namespace, _, name = key.partition("/")
        world.delete_podgroup(namespace, name)

    return [
        Kind(
            "node",
            "/api/v1/nodes",
            wire.Node,
            lambda o: o.metadata.name,
            world.upsert_node,
            world.delete_node,
            selector=selector,
        ),
        Kind(
            "priorityclass",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            wire.PriorityClass,
            lambda o: o.metadata.name,
            world.upsert_priority_class,
            world.delete_priority_class,
        ),
        Kind(
            "queue",
            f"{paths.GROUP_PATH}/queues",
            wire.Queue,
            lambda o: o.metadata.name,
            world.upsert_queue,
            world.delete_queue,
            selector=selector,
        ),
        Kind(
            "podgroup",
            f"{paths.GROUP_PATH}/podgroups",
            wire.PodGroup,
            namespaced,
            world.upsert_podgroup,
            delete_podgroup,
        ),
        # Storage, for pods with claims (VolumeBinding and its kin): decoded into the few
        # fields the volume plugins read.
        Kind(
            "persistentvolumeclaim",
            "/api/v1/persistentvolumeclaims",
            wire.PersistentVolumeClaim,
            namespaced,
            world.upsert_claim,
            world.delete_claim,
        ),
        Kind(
            "persistentvolume",
            "/api/v1/persistentvolumes",
            wire.PersistentVolume,
            lambda o: o.metadata.name,
            world.upsert_volume,
            world.delete_volume,
        ),
        Kind(
            "storageclass",
            "/apis/storage.k8s.io/v1/storageclasses",
            wire.StorageClass,
            lambda o: o.metadata.name,
            world.upsert_storage_class,
            world.delete_storage_class,
        ),
        Kind(
            "csinode",
            "/apis/storage.k8s.io/v1/csinodes",
            wire.CSINode,
            lambda o: o.metadata.name,
            world.upsert_csinode,
            world.delete_csinode,
        ),
        # PodDisruptionBudgets, which preempt and reclaim plan their victims against.
        Kind(
            "poddisruptionbudget",
            "/apis/policy/v1/poddisruptionbudgets",
            wire.PodDisruptionBudget,
            namespaced,
            world.upsert_budget,
            world.delete_budget,
        ),
        # Namespace labels, for pod affinity terms' namespaceSelector.
        Kind(
            "namespace",
            "/api/v1/namespaces",
            wire.Namespace,
            lambda o: o.metadata.name,
            world.upsert_namespace,
            world.delete_namespace,
        ),
        # HyperNodes, for gangs with a network topology. Optional: most clusters do not
        # have the CRD, and a cluster without it simply has none.
        Kind(
            "hypernode",
            HYPERNODES_PATH,
            HyperNode,
            lambda o: o.metadata.name,
            world.upsert_hypernode,
            world.delete_hypernode,
            optional=True,
        ),
        # muster's ProvisioningRequests (scale-up), from cluster-autoscaler's CRD or muster's
        # crds/provisioningrequest.yaml. Optional: a cluster with no autoscaler has none.
        Kind(
            "provisioningrequest",
            provisioning.PATH,
            provisioning.ProvisioningRequest,
            namespaced,
            world.upsert_provisioning_request,
            world.delete_provisioning_request,
            optional=True,
        ),
        # Pods are keyed by uid: a pod recreated under the same name is another pod.
        Kind(
            "pod",
            "/api/v1/pods",
            wire.Pod,
            lambda o: o.metadata.uid,
            world.upsert_pod,
            world.delete_pod,
            decode=wire.decode_pod,
        ),
    ]


# Objects per list page. Bigger than client-go's 500: a 50,000-pod cluster lists in 10
# round trips instead of 100, and a server that pages from a snapshot at the list's
# resourceVersion (etcd, muster sim) repeats that work per page.
LIST_PAGE_SIZE = 5000


def world_reflectors(
    client: KubeClient,
    world: World,
    metrics: Metrics,
    *,
    page_size: int = LIST_PAGE_SIZE,
    partition: NodePartition | None = None,
) -> list[Reflector[Any]]:
    """One Reflector per kind of `world_kinds`, counting its restarts and skipped objects."""
    reflectors: list[Reflector[Any]] = []
    for kind in world_kinds(world, partition):
        reflector = Reflector(
            client,
            kind,
            page_size=page_size,
            on_restart=partial(metrics.reflector_restarted, kind.name),
            on_failure=partial(_count_failure, metrics.watch_failures, kind.name),
            on_undecodable=_counting(metrics.undecodable_objects.labels(kind.name)),
        )
        metrics.watch_broken.labels(kind.name).set_function(reflector.broken_for)
        reflectors.append(reflector)
    return reflectors


def _count_failure(counter: Counter, resource: str, code: str) -> None:
    counter.labels(resource, code).inc()


def _counting(counter: Counter) -> Callable[[str], None]:
    # The counter is labelled before any object is skipped, so its series reads 0 from
    # the start; the message itself is logged by the reflector.
    return lambda _message: counter.inc()
