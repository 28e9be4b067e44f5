"""sim's simulated GPUs: ResourceSlices published on its nodes by the DRA driver
gpu.sim.muster.dev (--dra-gpus, --dra-gpu-models, a pool's or node group's draGpus), with
their DeviceClass; nodes added later, by a client or by the stand-in autoscaler, get theirs."""

from __future__ import annotations

from typing import Any

from muster_sim.cluster.autoscaler.config import AutoscalerConfig
from muster_sim.cluster.autoscaler.node_groups import NodeGroup
from muster_sim.cluster.devices import DRIVER, GPUS_LABEL, MODEL_LABEL
from muster_sim.cluster.nodes import NodePool
from tests.sim.conftest import Raw, create_namespace, unique, wait_for
from tests.sim.test_provisioning_requests import pod_set, request, requests_path, template
from tests.sim.test_provisioning_requests import templates_path as pod_templates_path

SIM_CONFIG = {
    "nodes": 2,
    "dra_gpus": 2,
    "dra_models": ("a100", "h100"),
    "autoscaler": AutoscalerConfig(
        groups=(
            NodeGroup(
                "gpu", 0, 2, NodePool("gpu", 0, "8", "32Gi", dra_gpus=4, dra_models=("h200",))
            ),
        ),
        node_delay=0.1,
        ready_delay=0.1,
        scan_interval=0.1,
    ),
}
SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def slices_by_node(raw: Raw) -> dict[str, dict[str, Any]]:
    code, listed = raw.json("GET", SLICES)
    assert code == 200, listed
    return {s["spec"]["nodeName"]: s for s in listed["items"]}


def test_each_node_publishes_its_gpus_in_one_slice_of_its_own_pool(raw: Raw) -> None:
    found = slices_by_node(raw)
    assert {"sim-node-0000", "sim-node-0001"} <= set(found)
    node = raw.json("GET", "/api/v1/nodes/sim-node-0000")[1]
    spec = found["sim-node-0000"]["spec"]
    assert spec["driver"] == DRIVER
    assert spec["pool"] == {"name": "sim-node-0000", "generation": 0, "resourceSliceCount": 1}
    assert [d["name"] for d in spec["devices"]] == ["gpu-0", "gpu-1"]
    first = spec["devices"][0]
    assert first["attributes"]["model"] == {"string": "a100"}
    assert first["attributes"]["index"] == {"int": 0}
    assert first["attributes"]["uuid"]["string"].startswith("GPU-")
    assert first["capacity"] == {"memory": {"value": "80Gi"}}
    (owner,) = found["sim-node-0000"]["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "Node",
        "sim-node-0000",
        node["metadata"]["uid"],
    )


def test_models_go_to_nodes_in_turn(raw: Raw) -> None:
    found = slices_by_node(raw)
    models = [
        found[n]["spec"]["devices"][0]["attributes"]["model"]["string"]
        for n in ("sim-node-0000", "sim-node-0001")
    ]
    assert models == ["a100", "h100"]
    labels = raw.json("GET", "/api/v1/nodes/sim-node-0001")[1]["metadata"]["labels"]
    assert (labels[GPUS_LABEL], labels[MODEL_LABEL]) == ("2", "h100")


def test_a_device_class_selects_every_simulated_gpu(raw: Raw) -> None:
    code, found = raw.json("GET", f"/apis/resource.k8s.io/v1/deviceclasses/{DRIVER}")
    assert code == 200, found
    assert found["spec"] == {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}


def test_a_node_a_client_registers_with_the_label_gets_its_slice_and_loses_it_with_the_node(
    raw: Raw,
) -> None:
    name = unique("registered")
    labels = {GPUS_LABEL: "1", MODEL_LABEL: "l4"}
    code, node = raw.json("POST", "/api/v1/nodes", {"metadata": {"name": name, "labels": labels}})
    assert code == 201, node
    published = wait_for(lambda: slices_by_node(raw).get(name))
    assert [d["attributes"]["model"]["string"] for d in published["spec"]["devices"]] == ["l4"]
    assert raw.json("DELETE", f"/api/v1/nodes/{name}")[0] == 200
    assert wait_for(lambda: name not in slices_by_node(raw))


def test_nodes_the_autoscaler_adds_publish_their_gpus(raw: Raw) -> None:
    ns = create_namespace(raw, "gpus")
    name = unique("gang")
    # pods only the group's nodes take, so that the existing nodes do not answer
    pods = template(f"{name}-0", nodeSelector={"sim.muster.dev/pool": "gpu"})
    assert raw.json("POST", pod_templates_path(ns), pods)[0] == 201
    assert raw.json("POST", requests_path(ns), request(name, [pod_set(f"{name}-0", 2)]))[0] == 201

    def group_slices() -> list[dict[str, Any]]:
        return [s for n, s in slices_by_node(raw).items() if n.startswith("gpu-")]

    added = wait_for(group_slices, timeout=10)
    devices = added[0]["spec"]["devices"]
    assert len(devices) == 4
    assert {d["attributes"]["model"]["string"] for d in devices} == {"h200"}
