"""What a benchmark run schedules: nodes, gangs of pods, and how they arrive."""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass
from typing import Any

from muster_sim.cluster.devices import DRIVER

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
MIB = 2**20
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
# Zones the nodes are spread over when some gangs spread over zones (--mixed).
ZONES = 10
# --dra-gpus: the ResourceClaimTemplate every pod claims one GPU from, the name of that claim
# in the pod, and the DeviceClass of sim's simulated GPUs (muster_sim/cluster/devices.py).
CLAIM_TEMPLATE = "one-gpu"
POD_CLAIM = "gpu"
GPU_CLASS = DRIVER


@dataclass(frozen=True)
class Workload:
    """N nodes, M pods in gangs (a fixed size or a seeded mix), a backlog or an arrival rate."""

    nodes: int = 1000
    pods: int = 10_000
    gang: str = "8-64"
    seed: int = 1
    rate: float = 0.0  # pods/s; 0 means a backlog created before the scheduler starts
    pod_cpu_m: int = 250
    pod_memory_mi: int = 512
    scheduler_name: str = "muster"
    # The fraction of gangs with pod-to-pod terms: half required anti-affinity to their own
    # gang on hostname, half DoNotSchedule spread over zones with maxSkew 1.
    mixed: float = 0.0
    # Pods already running before the backlog (another scheduler's, on the nodes round-robin).
    running: int = 0
    # Simulated GPUs every node publishes through DRA; when above 0, every pod of every gang
    # claims one of them from the ResourceClaimTemplate CLAIM_TEMPLATE.
    dra_gpus: int = 0

    def gang_sizes(self) -> list[int]:
        """Sizes that add up to `pods`: fixed, or drawn uniformly from "LO-HI" with the seed."""
        low, _, high = self.gang.partition("-")
        lo, hi = int(low), int(high or low)
        rng = random.Random(self.seed)
        sizes: list[int] = []
        left = self.pods
        while left > 0:
            size = min(left, rng.randint(lo, hi))
            sizes.append(size)
            left -= size
        return sizes

    def gangs(self) -> list[tuple[str, int]]:
        """(PodGroup name, size) for every gang, in creation order."""
        return [(f"g{index:05d}", size) for index, size in enumerate(self.gang_sizes())]

    def node_shape(self) -> tuple[int, int, int]:
        """(cpu cores, memory GiB, pod slots) per simulated node: room for 1.5x the average load.

        Never below a 32-core, 128 GiB, 110-pod node, so the default sizes look like real ones;
        bigger only where M/N pods per node would not fit (100 nodes x 50k pods).
        """
        per_node = math.ceil((self.pods + self.running) / self.nodes) * 1.5
        cpu = max(32, math.ceil(per_node * self.pod_cpu_m / 1000))
        memory_gi = max(128, math.ceil(per_node * self.pod_memory_mi / 1024))
        slots = max(110, math.ceil(per_node))
        return cpu, memory_gi, slots

    def label(self) -> str:
        """A short name for tables: nodes x pods, gangs, devices, arrival."""
        arrival = f"{self.rate:g} pods/s" if self.rate else "backlog"
        extra = f", {self.mixed:g} with pod-to-pod terms" if self.mixed else ""
        extra += f", {self.running} running before" if self.running else ""
        extra += f", {self.dra_gpus} GPUs per node, one claimed per pod" if self.dra_gpus else ""
        return f"{self.nodes} nodes x {self.pods} pods, gangs {self.gang}{extra}, {arrival}"

    def terms(self, index: int) -> dict[str, Any]:
        """The pod-to-pod terms of the index-th gang's pods (--mixed), or none."""
        every = round(1 / self.mixed) if self.mixed > 0 else 0
        if not every or index % every:
            return {}
        selector = {"matchLabels": {"gang": f"g{index:05d}"}}
        if (index // every) % 2:
            term = {"topologyKey": HOSTNAME, "labelSelector": selector}
            required = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            return {"affinity": {"podAntiAffinity": required}}
        spread = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
        return {"topologySpreadConstraints": [{**spread, "labelSelector": selector}]}


def podgroup_manifest(namespace: str, name: str, size: int) -> dict[str, Any]:
    """A PodGroup whose minMember is the whole gang."""
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": size, "queue": "default"},
    }


def claim_template_manifest(namespace: str) -> dict[str, Any]:
    """The ResourceClaimTemplate of one GPU of sim's DeviceClass, which every pod claims from
    with --dra-gpus (the resourceclaim controller makes each pod's claim from it)."""
    request = {"name": POD_CLAIM, "exactly": {"deviceClassName": GPU_CLASS, "count": 1}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": CLAIM_TEMPLATE, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def pod_manifest(workload: Workload, namespace: str, group: str, index: int) -> dict[str, Any]:
    """One member of a gang (group "gNNNNN", its pod-to-pod terms by its number), claiming
    one GPU from CLAIM_TEMPLATE when the nodes publish some."""
    terms = workload.terms(int(group[1:])) if group[1:].isdigit() else {}
    resources: dict[str, Any] = {
        "requests": {"cpu": f"{workload.pod_cpu_m}m", "memory": f"{workload.pod_memory_mi}Mi"}
    }
    claims: dict[str, Any] = {}
    if workload.dra_gpus:
        resources["claims"] = [{"name": POD_CLAIM}]
        claims["resourceClaims"] = [
            {"name": POD_CLAIM, "resourceClaimTemplateName": CLAIM_TEMPLATE}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{group}-{index}",
            "namespace": namespace,
            "labels": {"app": "muster-bench", "gang": group},
            "annotations": {GROUP_ANNOTATION: group, "volcano.sh/task-spec": "worker"},
        },
        "spec": {
            **terms,
            **claims,
            "schedulerName": workload.scheduler_name,
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox:1.36", "resources": resources}],
        },
    }


def node_pools_yaml(workload: Workload) -> str:
    """A `muster sim --node-pools` file for the workload's nodes (in ZONES pools of a zone
    each when some gangs spread over zones)."""
    cpu, memory_gi, slots = workload.node_shape()
    # sim's simulated DRA driver publishes a ResourceSlice of draGpus GPUs for each node
    gpus = f"  draGpus: {workload.dra_gpus}\n" if workload.dra_gpus else ""
    if not workload.mixed:
        return (
            f"- name: sim-node\n  count: {workload.nodes}\n  cpu: '{cpu}'\n"
            f"  memory: {memory_gi}Gi\n  pods: {slots}\n{gpus}"
        )
    pools = []
    for zone in range(ZONES):
        count = workload.nodes // ZONES + (zone < workload.nodes % ZONES)
        pools.append(
            f"- name: sim-node-z{zone}\n  count: {count}\n  cpu: '{cpu}'\n"
            f"  memory: {memory_gi}Gi\n  pods: {slots}\n"
            f"  labels: {{{ZONE}: zone-{zone}}}\n{gpus}"
        )
    return "".join(pools)


def running_pod_manifest(workload: Workload, namespace: str, index: int) -> dict[str, Any]:
    """A pod another scheduler already placed, on the nodes round-robin (node names as
    node_pools_yaml makes them); it claims no device, as no scheduler allocated one for it."""
    manifest = pod_manifest(dataclasses.replace(workload, dra_gpus=0), namespace, "running", index)
    manifest["metadata"] = {"name": f"running-{index}", "namespace": namespace}
    manifest["spec"]["schedulerName"] = "default-scheduler"
    manifest["spec"]["nodeName"] = running_node(workload, index)
    return manifest


def running_node(workload: Workload, index: int) -> str:
    """The node of the index-th running pod."""
    node = index % workload.nodes
    width = max(4, len(str(workload.nodes)))
    if not workload.mixed:
        return f"sim-node-{node:0{width}d}"
    zone, place = node % ZONES, node // ZONES
    count = workload.nodes // ZONES + (zone < workload.nodes % ZONES)
    return f"sim-node-z{zone}-{place:0{max(4, len(str(count)))}d}"
