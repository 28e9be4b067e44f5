"""Which kinds keep a World current: one handler per kind (cache/kinds/), each run by a
Reflector whose restarts, failures and undecodable objects are counted on Metrics.

`muster status|explain|whatif` list and apply the same handlers, in the same order.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from prometheus_client import Counter

from scheduler.api.partition import NodePartition
from scheduler.cache.kinds import (
    deviceclasses,
    hypernodes,
    namespaces,
    native_podgroups,
    nodes,
    poddisruptionbudgets,
    podgroups,
    pods,
    priorityclasses,
    provisioningrequests,
    queues,
    resourceclaims,
    resourceslices,
    storage,
    workloads,
)
from scheduler.cache.kinds.base import Handler
from scheduler.cache.reflector import Kind, Reflector
from scheduler.cache.world import World
from scheduler.kube.client import KubeClient
from scheduler.metrics import Metrics

# Every kind the scheduler lists and watches cluster-wide, one line each, in the order a
# World built from one listing applies them (inspect/cluster.py): nodes before the pods on
# them, priority classes before the PodGroups that name them, namespaces and Workloads
# before the native PodGroups that take their queue, DRA's classes and slices before the
# claims, pods last.
HANDLERS: tuple[Handler[Any], ...] = (
    nodes.HANDLER,
    priorityclasses.HANDLER,
    queues.HANDLER,
    podgroups.HANDLER,
    storage.CLAIMS,
    storage.VOLUMES,
    storage.CLASSES,
    storage.CSINODES,
    poddisruptionbudgets.HANDLER,
    namespaces.HANDLER,
    workloads.HANDLER,
    native_podgroups.HANDLER,
    hypernodes.HANDLER,
    provisioningrequests.HANDLER,
    deviceclasses.HANDLER,
    resourceslices.HANDLER,
    resourceclaims.HANDLER,
    pods.HANDLER,
)


def world_kinds(world: World, partition: NodePartition | None = None) -> list[Kind[Any]]:
    """Every kind of HANDLERS bound to `world`; with a partition, only its nodes and queues
    are listed and watched."""
    selector = partition.selector if partition is not None else ""
    return [handler.bind(world, selector) for handler in HANDLERS]


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
