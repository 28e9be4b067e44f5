"""The demo's cluster as its scenes see it: the sample gangs, the pods they make, and the
calls to the simulated API server that submit them and read back where they went."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from muster_sim.cluster.nodes import DRA_GPUS_LABEL
from scheduler.api.names import GROUP, GROUP_NAME_ANNOTATION, TASK_SPEC_ANNOTATION, VERSION

NAMESPACE = "demo"
POOL_LABEL = "demo.muster.dev/pool"
# The GPU scene's nodes (sim's DRA driver publishes their GPUs), tainted for GPU pods.
GPU_POOL = "gpu"
GPUS_PER_NODE = 4
RESOURCE_GROUP, RESOURCE_VERSION = "resource.k8s.io", "v1"


@dataclass
class Gang:
    """One sample workload: a PodGroup and its pods, and when it was placed."""

    name: str
    queue: str
    roles: dict[str, tuple[int, int]]  # role -> (count, cpu per pod)
    # A pod with no PodGroup: `muster controller` makes one for it.
    bare: bool = False
    # The node pool its pods ask for (nodeSelector and toleration), if any.
    pool: str = ""
    # When muster could first see the gang: the scheduler's start (the backlog is in place).
    submitted: float = 0.0
    placed_after: float | None = None
    nodes: set[str] = field(default_factory=set)

    # A ResourceClaimTemplate each pod claims a device from (DRA), if any.
    claim_template: str = ""

    @property
    def size(self) -> int:
        return sum(count for count, _ in self.roles.values())

    @property
    def cpu(self) -> int:
        return sum(count * cpu for count, cpu in self.roles.values())

    def pod_names(self) -> list[str]:
        names: list[str] = []
        for role, (count, _) in self.roles.items():
            names.extend(f"{self.name}-{role}-{i}" for i in range(count))
        return names


def wait_until(check: Any, timeout: float, what: str | Callable[[], str]) -> None:
    """Poll a condition; raise with `what` (what it is, and where it stands) if it does not
    hold in time."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what() if callable(what) else what}")
        time.sleep(0.05)


class Cluster:
    """The demo's API calls, through the official client."""

    def __init__(self, kubeconfig: Path) -> None:
        api = k8s_config.new_client_from_config(str(kubeconfig))  # type: ignore[no-untyped-call]
        self.core = k8s.CoreV1Api(api)
        self.custom = k8s.CustomObjectsApi(api)

    def queue(self, name: str, weight: int) -> None:
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": weight},
        }
        self.custom.create_cluster_custom_object(GROUP, VERSION, "queues", body)

    def submit(self, gang: Gang) -> None:
        if gang.bare:
            pod = pod_manifest(gang, "main", 0, gang.roles["main"][1])
            del pod["metadata"]["annotations"]
            self.core.create_namespaced_pod(NAMESPACE, pod)
            return
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "PodGroup",
            "metadata": {"name": gang.name},
            "spec": {"minMember": gang.size, "queue": gang.queue},
        }
        self.custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "podgroups", body)
        for role, (count, cpu) in gang.roles.items():
            for index in range(count):
                self.core.create_namespaced_pod(NAMESPACE, pod_manifest(gang, role, index, cpu))

    def placements(self) -> dict[str, str]:
        placed = {}
        for pod in self.core.list_namespaced_pod(NAMESPACE).items:
            if pod.metadata and pod.metadata.name and pod.spec and pod.spec.node_name:
                placed[pod.metadata.name] = pod.spec.node_name
        return placed

    def podgroup_of(self, pod: str) -> str:
        """The PodGroup a pod belongs to (its group-name annotation)."""
        found = self.core.read_namespaced_pod(pod, NAMESPACE)
        annotations = (found.metadata.annotations if found.metadata else None) or {}
        return str(annotations.get(GROUP_NAME_ANNOTATION, "none"))

    def podgroup(self, name: str) -> dict[str, Any]:
        found: Any = self.custom.get_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, "podgroups", name
        )
        return dict(found)

    def gpu_node(self, name: str) -> None:
        """Register a Ready node whose GPUs sim's DRA driver publishes, tainted for GPU pods;
        lift the not-ready taint the API server puts on it, as a kubelet's Ready would."""
        body: Any = {
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    POOL_LABEL: GPU_POOL,
                    DRA_GPUS_LABEL: str(GPUS_PER_NODE),
                },
            },
            "spec": {"taints": [{"key": POOL_LABEL, "value": GPU_POOL, "effect": "NoSchedule"}]},
            "status": {
                "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        created = self.core.create_node(body)
        given = (created.spec.taints if created.spec is not None else None) or []
        taints = [
            {"key": t.key, "value": t.value, "effect": t.effect}
            for t in given
            if t.key != "node.kubernetes.io/not-ready"
        ]
        self.core.patch_node(name, {"spec": {"taints": taints}})

    def claim_template(self, name: str, device_class: str) -> None:
        """A ResourceClaimTemplate of one device of the class."""
        body = {
            "apiVersion": f"{RESOURCE_GROUP}/{RESOURCE_VERSION}",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]
                    }
                }
            },
        }
        self.custom.create_namespaced_custom_object(
            RESOURCE_GROUP, RESOURCE_VERSION, NAMESPACE, "resourceclaimtemplates", body
        )

    def devices(self) -> dict[str, str]:
        """Pod name -> "node/device" its claim was allocated, for the claims made from
        templates (their pod-claim-name annotation) that are allocated."""
        found: Any = self.custom.list_namespaced_custom_object(
            RESOURCE_GROUP, RESOURCE_VERSION, NAMESPACE, "resourceclaims"
        )
        devices = {}
        for claim in found.get("items", []):
            references = claim["metadata"].get("ownerReferences", [])
            owner = next((r["name"] for r in references if r["kind"] == "Pod"), None)
            results = (claim.get("status", {}).get("allocation") or {}).get("devices", {})
            for result in results.get("results", []):
                if owner is not None:
                    devices[owner] = f"{result['pool']}/{result['device']}"
        return devices


def pod_manifest(gang: Gang, role: str, index: int, cpu: int) -> Any:
    """A member pod as KubeRay writes it: group and role annotations, our scheduler; a claim
    from the gang's ResourceClaimTemplate when it has one."""
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{gang.name}-{role}-{index}",
            "annotations": {GROUP_NAME_ANNOTATION: gang.name, TASK_SPEC_ANNOTATION: role},
        },
        "spec": {
            "schedulerName": "muster",
            "containers": [
                {
                    "name": role,
                    "image": "rayproject/ray",
                    "resources": {"requests": {"cpu": str(cpu)}},
                }
            ],
        },
    }
    if gang.pool:
        pod["spec"]["nodeSelector"] = {POOL_LABEL: gang.pool}
        pod["spec"]["tolerations"] = [
            {"key": POOL_LABEL, "value": gang.pool, "effect": "NoSchedule"}
        ]
    if gang.claim_template:
        pod["spec"]["resourceClaims"] = [
            {"name": "gpu", "resourceClaimTemplateName": gang.claim_template}
        ]
        pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return pod


def waiting_reason(group: dict[str, Any]) -> str | None:
    """The message of a PodGroup's Unschedulable=True condition."""
    for condition in group.get("status", {}).get("conditions", []):
        if condition.get("type") == "Unschedulable" and condition.get("status") == "True":
            return str(condition.get("message", ""))
    return None
