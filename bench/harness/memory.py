"""Bytes per cached pod and node: a World built in-process under tracemalloc.

With --dra-gpus each pod is cached as the scheduler sees it once the resourceclaim controller
has made its claim (named in its status.resourceClaimStatuses), and each claim is cached
too: its bytes are reported apart (`bytes_per_claim`), beside the pod's."""

from __future__ import annotations

import gc
import tracemalloc
import uuid

import msgspec

from harness.workload import GPU_CLASS, POD_CLAIM, Workload, pod_manifest, podgroup_manifest
from muster_sim.cluster.nodes import NodePool, node_objects
from scheduler.api import dra, wire
from scheduler.cache.kinds import nodes as cached_nodes
from scheduler.cache.kinds import podgroups, resourceclaims
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
        status: dict[str, object] = {"phase": "Pending", "qosClass": "Burstable"}
        if (manifest.get("spec") or {}).get("resourceClaims"):  # type: ignore[attr-defined]
            made = {"name": POD_CLAIM, "resourceClaimName": _claim_name(str(meta["name"]))}
            status["resourceClaimStatuses"] = [made]
        served["status"] = status
    return msgspec.json.encode(served)


def _claim_name(pod: str) -> str:
    """The name the resourceclaim controller gives the pod's claim (a random suffix)."""
    return f"{pod}-{POD_CLAIM}-{uuid.uuid5(uuid.NAMESPACE_DNS, pod).hex[:5]}"


def _claim(pod: bytes) -> bytes:
    """The claim the resourceclaim controller makes for the pod, as the API server serves
    it: owned by the pod, annotated with its claim's name, one GPU of sim's class."""
    served = msgspec.json.decode(pod)
    meta, spec = served["metadata"], served["spec"]
    template = {"deviceClassName": GPU_CLASS, "allocationMode": "ExactCount", "count": 1}
    owner = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
    claim = {
        "metadata": {
            "name": served["status"]["resourceClaimStatuses"][0]["resourceClaimName"],
            "namespace": meta["namespace"],
            "uid": str(uuid.uuid5(uuid.NAMESPACE_OID, meta["uid"])),
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
            "annotations": {dra.POD_CLAIM_NAME_ANNOTATION: POD_CLAIM},
            "ownerReferences": [dict(owner, controller=True, blockOwnerDeletion=True)],
        },
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": template}]}},
    }
    assert spec["resourceClaims"][0]["name"] == POD_CLAIM
    return msgspec.json.encode(claim)


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
    claims = [_claim(raw) for raw in pods] if workload.dra_gpus else []
    decode_pod = msgspec.json.Decoder(wire.Pod)
    decode_claim = msgspec.json.Decoder(dra.ResourceClaim)
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
        for raw in claims:
            resourceclaims.upsert(world, decode_claim.decode(raw))
        gc.collect()
        after_claims = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(world.tasks) == workload.pods
    return {
        "bytes_per_node": (after_nodes - base) / workload.nodes,
        "bytes_per_podgroup": (after_groups - after_nodes) / max(1, len(gangs)),
        "bytes_per_pod": (after_pods - after_groups) / workload.pods,
        "bytes_per_pod_with_its_podgroup": (after_pods - after_nodes) / workload.pods,
        "bytes_per_claim": (after_claims - after_pods) / len(claims) if claims else 0.0,
    }
