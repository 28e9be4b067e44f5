"""Bytes per cached pod and node: a World built in-process under tracemalloc."""

from __future__ import annotations

import gc
import tracemalloc
import uuid

import msgspec

from harness.workload import Workload, pod_manifest, podgroup_manifest
from muster_sim.cluster.nodes import NodePool, node_objects
from scheduler.api import wire
from scheduler.cache.kinds import nodes as cached_nodes
from scheduler.cache.kinds import podgroups
from scheduler.cache.kinds import pods as cached_pods
from scheduler.cache.world import World


def _as_served(manifest: dict[str, object], serial: int) -> bytes:
    """The manifest as an API server returns it: uid, resourceVersion, timestamp, status."""
    meta = dict(manifest["metadata"])  # type: ignore[call-overload]
    meta.update(
        uid=str(uuid.UUID(int=serial)),
        resourceVersion=str(serial),
        creationTimestamp="2026-01-01T00:00:00Z",
    )
    served = dict(manifest, metadata=meta)
    if manifest.get("kind") == "Pod":
        served["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    return msgspec.json.encode(served)


def cache_bytes(workload: Workload) -> dict[str, float]:
    """Traced bytes the World holds per node, per PodGroup and per pod of the workload."""
    namespace = "bench"
    cpu, memory_gi, slots = workload.node_shape()
    pool = NodePool("sim-node", workload.nodes, str(cpu), f"{memory_gi}Gi", pods=slots)
    nodes = [msgspec.json.encode(n) for n in node_objects([pool])]
    gangs = workload.gangs()
    groups = [_as_served(podgroup_manifest(namespace, g, s), i) for i, (g, s) in enumerate(gangs)]
    pods = [
        _as_served(pod_manifest(workload, namespace, g, m), 10**6 + i)
        for i, (g, m) in enumerate((g, m) for g, s in gangs for m in range(s))
    ]
    decode_node = msgspec.json.Decoder(wire.Node)
    decode_group = msgspec.json.Decoder(wire.PodGroup)
    decode_pod = msgspec.json.Decoder(wire.Pod)
    gc.collect()
    tracemalloc.start()
    try:
        world = World(frozenset({workload.scheduler_name}))
        base = tracemalloc.get_traced_memory()[0]
        for raw in nodes:
            cached_nodes.upsert(world, decode_node.decode(raw))
        after_nodes = tracemalloc.get_traced_memory()[0]
        for raw in groups:
            podgroups.upsert(world, decode_group.decode(raw))
        after_groups = tracemalloc.get_traced_memory()[0]
        for raw in pods:
            cached_pods.upsert(world, decode_pod.decode(raw))
        gc.collect()
        after_pods = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(world.tasks) == workload.pods
    return {
        "bytes_per_node": (after_nodes - base) / workload.nodes,
        "bytes_per_podgroup": (after_groups - after_nodes) / max(1, len(gangs)),
        "bytes_per_pod": (after_pods - after_groups) / workload.pods,
        "bytes_per_pod_with_its_podgroup": (after_pods - after_nodes) / workload.pods,
    }
