"""Simulated Node objects built from node pools (sizes, labels, taints, simulated DRA GPUs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from muster_sim.validation.quantities import quantity

Obj = dict[str, Any]

POOL_LABEL = "sim.muster.dev/pool"
GPU = "nvidia.com/gpu"
# what sim's simulated DRA driver publishes on a node (cluster/devices.py reads them)
DRA_GPUS_LABEL = "sim.muster.dev/dra-gpus"
DRA_MODEL_LABEL = "sim.muster.dev/dra-gpu-model"


class PoolError(ValueError):
    """A node-pool file that cannot be used; the message names the pool and the field."""


@dataclass(frozen=True)
class NodePool:
    """`count` identical nodes with the given capacity, labels and taints; `dra_gpus` GPUs
    each published through DRA, their models taken from `dra_models` node by node."""

    name: str
    count: int
    cpu: str = "32"
    memory: str = "128Gi"
    gpus: int = 0
    pods: int = 110
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Obj, ...] = ()
    dra_gpus: int = 0
    dra_models: tuple[str, ...] = ("a100",)

    def __post_init__(self) -> None:
        if self.count < 0:
            raise PoolError(f"node pool {self.name!r}: count must be >= 0, got {self.count}")
        if self.dra_gpus < 0:
            raise PoolError(f"node pool {self.name!r}: draGpus must be >= 0, got {self.dra_gpus}")
        if not self.dra_models or not all(self.dra_models):
            raise PoolError(f"node pool {self.name!r}: draModels must name at least one model")
        for what, value in (("cpu", self.cpu), ("memory", self.memory)):
            if quantity(value) is None:
                raise PoolError(f"node pool {self.name!r}: {what} {value!r} is not a quantity")


def load_pools(path: str | Path) -> list[NodePool]:
    """Read pools from YAML: a list of pools, or a mapping with a `pools` list."""
    data = yaml.safe_load(Path(path).read_text())
    if isinstance(data, dict):
        data = data.get("pools")
    if not isinstance(data, list):
        raise PoolError(f"{path}: expected a list of node pools (or `pools: [...]`)")
    pools: list[NodePool] = []
    for index, raw in enumerate(data):
        if not isinstance(raw, dict) or "name" not in raw:
            raise PoolError(f"{path}: pool #{index} needs at least a name")
        try:
            pools.append(
                NodePool(
                    name=str(raw["name"]),
                    count=int(raw.get("count", 1)),
                    cpu=str(raw.get("cpu", "32")),
                    memory=str(raw.get("memory", "128Gi")),
                    gpus=int(raw.get("gpus", 0)),
                    pods=int(raw.get("pods", 110)),
                    labels={str(k): str(v) for k, v in (raw.get("labels") or {}).items()},
                    taints=tuple(dict(t) for t in raw.get("taints") or []),
                    dra_gpus=int(raw.get("draGpus", 0)),
                    dra_models=dra_models(raw.get("draModels")),
                )
            )
        except (TypeError, ValueError) as error:
            raise PoolError(f"{path}: pool {raw.get('name')!r}: {error}") from None
    return pools


def dra_models(raw: Any) -> tuple[str, ...]:
    """`draModels` of a pool or template: a list or a comma-separated string (default a100)."""
    if raw is None:
        return ("a100",)
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    return tuple(str(item).strip() for item in items)


def node_objects(pools: list[NodePool]) -> list[Obj]:
    """One Ready Node object per pool member, named `<pool>-<index>`."""
    nodes: list[Obj] = []
    serial = 0
    for pool in pools:
        width = max(4, len(str(pool.count)))
        for index in range(pool.count):
            serial += 1
            nodes.append(_node(pool, f"{pool.name}-{index:0{width}d}", serial, index))
    return nodes


def node_object(pool: NodePool, name: str, serial: int) -> Obj:
    """One Ready Node of the pool named `name` (`serial` numbers its address and picks its
    GPU model)."""
    return _node(pool, name, serial, serial)


def _node(pool: NodePool, name: str, serial: int, turn: int) -> Obj:
    capacity = {
        "cpu": pool.cpu,
        "memory": pool.memory,
        "pods": str(pool.pods),
        "ephemeral-storage": "100Gi",
    }
    if pool.gpus > 0:
        capacity[GPU] = str(pool.gpus)
    ip = f"10.{(serial >> 16) & 255}.{(serial >> 8) & 255}.{serial & 255}"
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": pool.name,
        POOL_LABEL: pool.name,
        "type": "kwok",
        **pool.labels,
    }
    if pool.dra_gpus > 0:
        labels[DRA_GPUS_LABEL] = str(pool.dra_gpus)
        labels[DRA_MODEL_LABEL] = pool.dra_models[turn % len(pool.dra_models)]
    spec: Obj = {}
    if pool.taints:
        spec["taints"] = [dict(t) for t in pool.taints]
    conditions = [
        {"type": t, "status": "False", "reason": f"KubeletHasNo{t}", "message": ""}
        for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
        }
    )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "sim.muster.dev/simulated": "true",
            },
        },
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "v1.30.0-muster-sim",
                "kubeProxyVersion": "v1.30.0-muster-sim",
                "containerRuntimeVersion": "sim://1.0",
                "osImage": "muster sim",
                "kernelVersion": "sim",
                "machineID": name,
                "systemUUID": name,
                "bootID": name,
            },
            "phase": "Running",
        },
    }
