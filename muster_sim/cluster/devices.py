"""sim's simulated DRA driver: GPUs published on nodes through ResourceSlices, as a DRA
driver's kubelet plugin publishes the devices of its node.

A node labelled `sim.muster.dev/dra-gpus: "N"` (sim labels its own nodes so when `--dra-gpus`
or a node pool's `draGpus` says; a client may label a node it registers) gets one
ResourceSlice: driver `gpu.sim.muster.dev`, one pool named after the node (generation 0, one
slice), `nodeName` the node, devices `gpu-0` ... `gpu-<N-1>`, each with the attributes
`model` (the label `sim.muster.dev/dra-gpu-model`, else a100), `uuid` and `index`, and the
capacity `memory` (80Gi). The slice is owned by its node, so it goes when the node goes. The
first slice published brings the DeviceClass `gpu.sim.muster.dev`, which selects every device
of the driver; a request narrows it by model with a selector such as
`device.attributes["gpu.sim.muster.dev"].model == "h100"`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from muster_sim.apiserver.resources import NODES
from muster_sim.apiserver.store import Event, name_of
from muster_sim.apiserver.verbs import ApiServer
from muster_sim.errors import ApiError

Obj = dict[str, Any]

log = logging.getLogger("muster.sim")

DRIVER = "gpu.sim.muster.dev"
GPUS_LABEL = "sim.muster.dev/dra-gpus"
MODEL_LABEL = "sim.muster.dev/dra-gpu-model"
DEFAULT_MODEL = "a100"
GPU_MEMORY = "80Gi"
RESOURCE_GROUP = "resource.k8s.io"
SLICES = "resourceslices.resource.k8s.io"
CLASSES = "deviceclasses.resource.k8s.io"
# the uuids of simulated GPUs are stable: the same node and index, the same uuid
_UUID_NAMESPACE = uuid.UUID("6f6d2b2e-6d75-7374-6572-2d73696d2d31")


def gpu_count(node: Obj) -> int:
    """How many simulated GPUs a node's label asks for (0 when none or not a number)."""
    text = (node["metadata"].get("labels") or {}).get(GPUS_LABEL, "0")
    try:
        return max(0, int(text))
    except ValueError:
        return 0


def slice_name(node_name: str) -> str:
    """The name of a node's ResourceSlice."""
    return f"{node_name}-{DRIVER}"


def resource_slice(node: Obj) -> Obj:
    """The ResourceSlice that publishes a node's simulated GPUs."""
    name = name_of(node)
    model = (node["metadata"].get("labels") or {}).get(MODEL_LABEL) or DEFAULT_MODEL
    devices = [
        {
            "name": f"gpu-{index}",
            "attributes": {
                "model": {"string": model},
                "uuid": {"string": f"GPU-{uuid.uuid5(_UUID_NAMESPACE, f'{name}/{index}')}"},
                "index": {"int": index},
            },
            "capacity": {"memory": {"value": GPU_MEMORY}},
        }
        for index in range(gpu_count(node))
    ]
    owner = {
        "apiVersion": "v1",
        "kind": "Node",
        "name": name,
        "uid": node["metadata"]["uid"],
        "controller": True,
    }
    return {
        "metadata": {"name": slice_name(name), "ownerReferences": [owner]},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": name, "generation": 0, "resourceSliceCount": 1},
            "nodeName": name,
            "devices": devices,
        },
    }


def device_class() -> Obj:
    """The DeviceClass of every simulated GPU."""
    return {
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


class DevicePublisher:
    """Publishes the simulated GPUs of every labelled node, now and as nodes are added."""

    def __init__(self, api: ApiServer) -> None:
        self.api = api
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: asyncio.Handle | None = None
        self._new_nodes: set[str] = set()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Publish for the nodes there are, then for every node added (on `loop`)."""
        self._loop = loop
        self.api.store.listen(NODES, self._on_node)
        for node in list(self.api.store.iter_all(NODES)):
            self._publish(node)

    def stop(self) -> None:
        """Cancel a pending pass."""
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def _on_node(self, event: Event) -> None:
        if event.type == "DELETED" or self._loop is None:
            return
        self._new_nodes.add(name_of(event.obj))
        if self._pending is None:
            self._pending = self._loop.call_soon(self._publish_new)

    def _publish_new(self) -> None:
        self._pending = None
        while self._new_nodes:
            node = self.api.store.get(NODES, "", self._new_nodes.pop())
            if node is not None:
                self._publish(node)

    def _publish(self, node: Obj) -> None:
        if gpu_count(node) == 0 or node["metadata"].get("deletionTimestamp"):
            return
        if self.api.store.get(SLICES, "", slice_name(name_of(node))) is not None:
            return
        try:
            if self.api.store.get(CLASSES, "", DRIVER) is None:
                self.api.create(
                    self.api.kind(RESOURCE_GROUP, "v1", "deviceclasses"), None, device_class()
                )
            self.api.create(
                self.api.kind(RESOURCE_GROUP, "v1", "resourceslices"), None, resource_slice(node)
            )
        except ApiError as error:
            log.warning("simulated GPUs of node %s not published: %s", name_of(node), error.message)
