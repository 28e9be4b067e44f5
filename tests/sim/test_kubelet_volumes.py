"""The sim kubelet starts a pod only once its claims are bound to volumes its node can reach."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from muster_sim.cluster.nodes import NodePool
from muster_sim.server import SimServer
from tests.sim.conftest import Raw, bind, create_namespace, pod_body, unique, wait_for

ZONE = "topology.kubernetes.io/zone"
# no provisioner: the tests bind claims themselves, which also shows the switch holds claims back
SIM_CONFIG = {
    "nodes": 0,
    "node_pools": [
        NodePool("zone-a", 1, "8", "32Gi", labels={ZONE: "a"}),
        NodePool("zone-b", 1, "8", "32Gi", labels={ZONE: "b"}),
    ],
    "provisioner": False,
}
PV_PATH = "/api/v1/persistentvolumes"


def pvc_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"


@pytest.fixture(scope="module")
def ns(raw: Raw) -> str:
    return create_namespace(raw, "kvol")


@pytest.fixture(scope="module")
def nodes(raw: Raw) -> dict[str, str]:
    """zone -> node name."""
    listed = raw.json("GET", "/api/v1/nodes")[1]
    return {n["metadata"]["labels"][ZONE]: n["metadata"]["name"] for n in listed["items"]}


def create_claim(raw: Raw, ns: str, name: str, class_name: str = "") -> dict[str, Any]:
    body = {
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": class_name,
        },
    }
    code, created = raw.json("POST", pvc_path(ns), body)
    assert code == 201, created
    return dict(created)


def bind_by_hand(raw: Raw, ns: str, claim: dict[str, Any], zone: str) -> None:
    """What the PV controller would do: a zonal volume pointing at the claim, both Bound."""
    name = unique("pv")
    meta = claim["metadata"]
    volume = {
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "1Gi"},
            "storageClassName": "",
            "csi": {"driver": "disk.example.com", "volumeHandle": name},
            "claimRef": {"namespace": ns, "name": meta["name"], "uid": meta["uid"]},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
                    ]
                }
            },
        },
    }
    assert raw.json("POST", PV_PATH, volume)[0] == 201
    path = f"{pvc_path(ns)}/{meta['name']}"
    merge = "application/merge-patch+json"
    code, body = raw.json("PATCH", path, {"spec": {"volumeName": name}}, content_type=merge)
    assert code == 200, body
    code, body = raw.json(
        "PATCH", path + "/status", {"status": {"phase": "Bound"}}, content_type=merge
    )
    assert code == 200, body


def pod_with_claim(core: client.CoreV1Api, ns: str, claim_name: str, node: str) -> str:
    name = unique("pod")
    body = pod_body(
        name, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]
    )
    core.create_namespaced_pod(ns, body)
    bind(core, ns, name, node)
    return name


def failed_mounts(core: client.CoreV1Api, ns: str, pod: str) -> list[str]:
    events = core.list_namespaced_event(ns, field_selector=f"involvedObject.name={pod}").items
    return [e.message for e in events if e.reason == "FailedMount"]


def phase(core: client.CoreV1Api, ns: str, pod: str) -> str:
    return str(core.read_namespaced_pod(pod, ns).status.phase)


def test_pod_waits_in_container_creating_for_a_missing_claim_then_starts_once_bound(
    core: client.CoreV1Api, raw: Raw, ns: str, nodes: dict[str, str]
) -> None:
    claim_name = unique("pvc")
    pod = pod_with_claim(core, ns, claim_name, nodes["a"])
    messages = wait_for(lambda: failed_mounts(core, ns, pod))
    assert messages[0] == (
        "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], "
        f"failed to process volumes=[data]: error processing PVC {ns}/{claim_name}: failed to "
        f'fetch PVC from API server: persistentvolumeclaims "{claim_name}" not found'
    )
    status = core.read_namespaced_pod(pod, ns).status
    assert status.phase == "Pending"
    assert status.container_statuses[0].state.waiting.reason == "ContainerCreating"
    claim = create_claim(raw, ns, claim_name)
    wait_for(lambda: any("PVC is not bound" in m for m in failed_mounts(core, ns, pod)))
    assert phase(core, ns, pod) == "Pending"
    bind_by_hand(raw, ns, claim, "a")
    wait_for(lambda: phase(core, ns, pod) == "Running")


def test_pod_on_a_node_outside_its_volumes_affinity_never_starts(
    core: client.CoreV1Api, raw: Raw, ns: str, nodes: dict[str, str]
) -> None:
    claim = create_claim(raw, ns, unique("pvc"))
    bind_by_hand(raw, ns, claim, "a")
    pod = pod_with_claim(core, ns, claim["metadata"]["name"], nodes["b"])
    messages = wait_for(lambda: failed_mounts(core, ns, pod))
    volume_name = raw.json("GET", f"{pvc_path(ns)}/{claim['metadata']['name']}")[1]["spec"][
        "volumeName"
    ]
    assert messages == [
        f'MountVolume.NodeAffinity check failed for volume "{volume_name}" : '
        "no matching NodeSelectorTerms"
    ]
    assert phase(core, ns, pod) == "Pending"


def test_without_the_provisioner_a_claim_stays_pending_with_no_volume(
    sim: SimServer, raw: Raw, ns: str
) -> None:
    assert sim.provisioner is None
    class_name = unique("sc")
    code, body = raw.json(
        "POST",
        "/apis/storage.k8s.io/v1/storageclasses",
        {"metadata": {"name": class_name}, "provisioner": "disk.example.com"},
    )
    assert code == 201, body
    claim = create_claim(raw, ns, unique("pvc"), class_name)
    current = raw.json("GET", f"{pvc_path(ns)}/{claim['metadata']['name']}")[1]
    assert current["status"]["phase"] == "Pending"
    assert "volume.kubernetes.io/storage-provisioner" not in (
        current["metadata"].get("annotations") or {}
    )
    assert raw.json("GET", f"{PV_PATH}/pvc-{claim['metadata']['uid']}")[0] == 404
