"""The DRA side of a --dra-gpus run: the claim template, the GPUs on a cluster that is not
muster sim, the claims made before a backlog's scheduler starts, and the check that every
bound pod holds a GPU of its node.

muster sim publishes the GPUs of its nodes itself (a node pool's `draGpus`) and runs a
stand-in for kube-controller-manager's resourceclaim controller, which makes each pod's
ResourceClaim from the template and names it in the pod's status.resourceClaimStatuses. On
another cluster the bench publishes the GPUs of the nodes it made, as sim's driver would, and
leaves the claims to that cluster's resourceclaim controller.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import msgspec

from harness.cluster import bench_pool, run_bounded
from harness.workload import CLAIM_TEMPLATE, POD_CLAIM, Workload, claim_template_manifest
from muster_sim.cluster.devices import GPUS_LABEL, device_class, resource_slice
from muster_sim.cluster.nodes import node_objects
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import Conflict, NotFound

Obj = dict[str, Any]

RESOURCE_API = "/apis/resource.k8s.io/v1"
TEMPLATES = RESOURCE_API + "/namespaces/{ns}/resourceclaimtemplates"
CLAIMS = RESOURCE_API + "/namespaces/{ns}/resourceclaims"
SLICES = RESOURCE_API + "/resourceslices"
CLASSES = RESOURCE_API + "/deviceclasses"
# How long a backlog's claims may take to be made before the run is given up.
CLAIMS_MADE_TIMEOUT = 120.0


async def create_claim_template(kube: KubeClient, namespace: str) -> None:
    """The ResourceClaimTemplate every pod of the run claims its GPU from."""
    await kube.create(TEMPLATES.format(ns=namespace), claim_template_manifest(namespace))


async def await_claims_made(
    kube: KubeClient, namespace: str, expected: int, timeout: float = CLAIMS_MADE_TIMEOUT
) -> None:
    """Wait until `expected` pods of the namespace name their claim in their status, so a
    backlog's scheduler starts on pods it can place, not on the resourceclaim controller."""
    deadline = time.monotonic() + timeout
    made = 0
    while time.monotonic() < deadline:
        pods = await _items(kube, f"/api/v1/namespaces/{namespace}/pods")
        made = sum(1 for pod in pods if _claim_name(pod))
        if made >= expected:
            return
        await asyncio.sleep(0.5)
    raise RuntimeError(
        f"after {timeout:.0f}s only {made} of {expected} pods have the ResourceClaim made from "
        f"the template {CLAIM_TEMPLATE!r} in their status.resourceClaimStatuses: no "
        "resourceclaim controller is making them (on a cluster, kube-controller-manager with "
        "DRA on; muster sim runs one unless --no-resource-claim-controller)"
    )


async def publish_gpus(kube: KubeClient, workload: Workload) -> int:
    """On a cluster without sim's driver: its DeviceClass, and on every node the bench makes a
    ResourceSlice of `workload.dra_gpus` GPUs, as sim's driver publishes them (a slice of
    another size is replaced). Returns how many slices were written."""
    with contextlib.suppress(Conflict):
        await kube.create(CLASSES, device_class())
    names = {node["metadata"]["name"] for node in node_objects([bench_pool(workload)])}
    nodes = [n for n in await _items(kube, "/api/v1/nodes") if n["metadata"]["name"] in names]
    published = {s["metadata"]["name"]: s for s in await _items(kube, SLICES)}
    written: list[str] = []

    async def publish(index: int) -> None:
        node = nodes[index]
        labels = {**(node["metadata"].get("labels") or {}), GPUS_LABEL: str(workload.dra_gpus)}
        wanted = resource_slice(dict(node, metadata=dict(node["metadata"], labels=labels)))
        name = wanted["metadata"]["name"]
        have = published.get(name)
        if have is not None:
            if _devices(have) == _devices(wanted):
                return
            with contextlib.suppress(NotFound):
                await kube.request("DELETE", f"{SLICES}/{name}")
        await kube.create(SLICES, wanted)
        written.append(name)

    await run_bounded(len(nodes), 32, publish)
    return len(written)


async def delete_claims(kube: KubeClient, namespace: str, timeout: float = 60.0) -> None:
    """Delete the namespace's claims and wait until they are gone, so that the devices they
    held are free for the next run (the resourceclaim controller drops their finalizer once
    their pods are gone)."""
    path = CLAIMS.format(ns=namespace)
    with contextlib.suppress(NotFound):
        await kube.request("DELETE", path)
    deadline = time.monotonic() + timeout
    while await _items(kube, path, limit="1"):
        if time.monotonic() > deadline:
            print(f"warning: the claims of {namespace} are still there after {timeout:.0f}s")
            return
        await asyncio.sleep(0.5)


async def unallocated_claims_in(kube: KubeClient, namespace: str) -> list[str]:
    """unallocated_claims over the namespace's pods and claims as the server has them now."""
    pods = await _items(kube, f"/api/v1/namespaces/{namespace}/pods")
    claims = await _items(kube, CLAIMS.format(ns=namespace))
    return unallocated_claims(pods, claims)


def unallocated_claims(pods: list[Obj], claims: list[Obj]) -> list[str]:
    """What is wrong with the bound pods' GPUs: one line for each bound pod whose claim was
    not made, is not allocated, is not reserved for it or holds a device off its node, and
    for each device given to two pods. Empty when every bound pod holds a GPU of its node."""
    by_name = {claim["metadata"]["name"]: claim for claim in claims}
    holder: dict[tuple[str, str, str], str] = {}
    wrong: list[str] = []
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            continue
        name = pod["metadata"]["name"]
        claim = by_name.get(_claim_name(pod))
        if claim is None:
            wrong.append(f"{name}: bound to {node} with no ResourceClaim made for it")
            continue
        where = f"{name}: bound to {node}, its claim {claim['metadata']['name']}"
        status = claim.get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        if not results:
            wrong.append(f"{where} is not allocated")
            continue
        uid = pod["metadata"].get("uid")
        if not any(consumer.get("uid") == uid for consumer in status.get("reservedFor") or []):
            wrong.append(f"{where} is allocated but not reserved for it")
        for result in results:
            device = (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
            # sim's driver names each node's pool after the node
            if device[1] != node:
                wrong.append(f"{where} holds {'/'.join(device)}, not a device of its node")
            if device in holder:
                wrong.append(f"{where} holds {'/'.join(device)}, given to {holder[device]} too")
            holder[device] = name
    return wrong


def _claim_name(pod: Obj) -> str:
    """The name of the pod's claim from the template, "" until the controller records it."""
    for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if entry.get("name") == POD_CLAIM:
            return str(entry.get("resourceClaimName") or "")
    return ""


def _devices(resource_slice: Obj) -> list[str]:
    return [str(device["name"]) for device in resource_slice["spec"].get("devices") or []]


async def _items(kube: KubeClient, path: str, **params: str) -> list[Obj]:
    listed = msgspec.json.decode(await kube.request("GET", path, params=params or None))
    items: list[Obj] = listed.get("items") or []
    return items
