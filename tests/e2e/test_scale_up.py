"""Gang-atomic scale-up on sim with its stand-in cluster autoscaler: a gang of 8 pods of 4 cpu,
with no node at first and a node group of nodes of 8 cpu.

- Without ProvisioningRequests, the autoscaler scales up pod by pod: with at most 3 nodes
  it adds all 3 (6 pods' worth) and the gang never runs.
- With them (the scaleup plugin), muster asks for the whole gang at once: with at most 3
  nodes the request finds no capacity and no node is added; with at most 4, 4 nodes come
  and the gang runs, even across a restart of the scheduler.

And the ProvisioningRequest CRD stores what muster writes, on sim or on a real
kube-apiserver (MUSTER_E2E_KUBECONFIG).
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
import yaml
from kubernetes import client
from kubernetes import config as kube_config
from kubernetes.client.rest import ApiException

from muster_sim.cluster.autoscaler.config import provisioning_request_crd
from scheduler.api import wire
from scheduler.api.pod_templates import PodShape, template_spec
from scheduler.api.task import TaskInfo
from scheduler.effects.scale_up import ScaleUpWriter
from scheduler.framework.decisions import CreateProvisioningRequest, PodSetTemplate
from scheduler.kube.client import KubeClient
from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    Cluster,
    condition,
    make_pod,
    make_podgroup,
    wait_for,
    wait_for_phase,
)

PR_GROUP, PR_VERSION, PR_PLURAL = "autoscaling.x-k8s.io", "v1", "provisioningrequests"
CONSUME = "autoscaling.x-k8s.io/consume-provisioning-request"
TIMINGS = {"node_delay": 0.5, "ready_delay": 0.5, "scan_interval": 0.3}
SCALE_UP = [{"name": "scaleup"}]


def node_group(max_size: int) -> dict[str, Any]:
    return {"name": "big", "minSize": 0, "maxSize": max_size, "template": {"cpu": "8"}}


def submit_gang(cluster: Cluster, namespace: str, name: str = "gang") -> None:
    pods = [make_pod(f"{name}-{i}", group=name, cpu="4") for i in range(8)]
    cluster.submit(namespace, make_podgroup(name, 8), pods)


def nodes(cluster: Cluster, *, ready: bool = False) -> list[str]:
    found = []
    for node in cluster.core.list_node().items:
        is_ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)
        if is_ready or not ready:
            found.append(node.metadata.name)
    return sorted(found)


def requests(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    listed = cluster.custom.list_namespaced_custom_object(
        PR_GROUP, PR_VERSION, namespace, PR_PLURAL
    )
    return list(listed["items"])


def request_condition(cluster: Cluster, namespace: str, kind: str) -> tuple[str, str] | None:
    for found in requests(cluster, namespace):
        got = condition(found, kind)
        if got is not None:
            return got["status"], got["reason"]
    return None


def bound(cluster: Cluster, namespace: str) -> int:
    return sum(1 for pod in cluster.core.list_namespaced_pod(namespace).items if pod.spec.node_name)


@pytest.mark.nodes(0)
@pytest.mark.autoscaler(groups=[node_group(3)], **TIMINGS)
def test_without_provisioning_requests_pod_by_pod_scale_up_strands_part_of_the_gang(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler()
    submit_gang(cluster, namespace)
    added = wait_for(
        lambda: len(nodes(cluster, ready=True)) == 3 and nodes(cluster),
        timeout=15,
        message=lambda: f"3 nodes added for the gang's pods; nodes: {nodes(cluster)}",
    )
    assert added == ["big-0000", "big-0001", "big-0002"]
    scheduler.wait_sessions(5)
    # 6 pods' worth of nodes for 8 pods: the gang cannot run, and the nodes idle.
    assert bound(cluster, namespace) == 0
    assert len(nodes(cluster)) == 3
    assert requests(cluster, namespace) == []


@pytest.mark.nodes(0)
@pytest.mark.autoscaler(groups=[node_group(3)], **TIMINGS)
def test_with_provisioning_requests_a_gang_no_group_can_hold_adds_no_node(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler(plugins=SCALE_UP)
    submit_gang(cluster, namespace)
    wait_for(
        lambda: (
            request_condition(cluster, namespace, "Provisioned") == ("False", "CapacityIsNotFound")
        ),
        timeout=15,
        message=lambda: f"the request found no capacity: {requests(cluster, namespace)}",
    )

    def scale_up() -> dict[str, Any] | None:
        return condition(cluster.podgroup(namespace, "gang"), "ScaleUp")

    said = wait_for(lambda: (c := scale_up()) and c["reason"] == "CapacityNotFound" and c, 10)
    assert "gang-scaleup-1" in said["message"] and "CapacityIsNotFound" in said["message"]
    scheduler.wait_sessions(5)
    assert nodes(cluster) == []
    pods = cluster.core.list_namespaced_pod(namespace).items
    assert {(p.metadata.annotations or {}).get(CONSUME) for p in pods} == {"gang-scaleup-1"}


@pytest.mark.nodes(0)
@pytest.mark.autoscaler(groups=[node_group(4)], **{**TIMINGS, "node_delay": 2.0})
def test_with_provisioning_requests_the_whole_gang_gets_its_nodes_and_runs_across_a_restart(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    first = start_scheduler(plugins=SCALE_UP)
    submit_gang(cluster, namespace)
    wait_for(
        lambda: (
            request_condition(cluster, namespace, "Provisioned")
            == ("True", "CapacityIsProvisioned")
        ),
        timeout=15,
        message=lambda: f"the request provisioned: {requests(cluster, namespace)}",
    )
    # Provisioned before its nodes exist: a new scheduler reads everything back from the
    # API server (which request is the gang's, which attempt, where it stands).
    (made,) = requests(cluster, namespace)
    assert made["metadata"]["name"] == "gang-scaleup-1"
    first.process.stop()
    assert nodes(cluster) == []
    start_scheduler(plugins=SCALE_UP)
    wait_for_phase(cluster, namespace, "gang", "Running", timeout=20)
    assert nodes(cluster) == ["big-0000", "big-0001", "big-0002", "big-0003"]
    # Running is written with the binds sent, not answered: wait for the pods' nodes.
    wait_for(lambda: bound(cluster, namespace) == 8, 10, message="the whole gang bound")
    # Placed: its request goes, and the templates it owned with it.
    wait_for(lambda: not requests(cluster, namespace), 10, message="the request deleted")
    wait_for(
        lambda: not cluster.core.list_namespaced_pod_template(namespace).items,
        10,
        message="the templates deleted",
    )


# The CRD stores what muster writes --------------------------------------------------


def crd_installed(cluster: Cluster) -> bool:
    api = client.ApiextensionsV1Api(cluster.api)
    try:
        api.read_custom_resource_definition(f"{PR_PLURAL}.{PR_GROUP}")
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def install_crd(cluster: Cluster) -> None:
    body = yaml.safe_load(provisioning_request_crd().read_text())
    client.ApiextensionsV1Api(cluster.api).create_custom_resource_definition(body)

    def established() -> bool:
        try:
            requests(cluster, "default")
        except ApiException:
            return False
        return True

    wait_for(established, 20, message="the ProvisioningRequest CRD served")


def a_members_shape() -> PodShape:
    """A pod as KubeRay writes a GPU worker: node affinity, tolerations, spread."""
    pod = {
        "metadata": {"name": "w-0", "namespace": "ns", "uid": "u", "labels": {"app": "w"}},
        "spec": {
            "schedulerName": "muster",
            "nodeSelector": {"pool": "gpu"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app": "w"}},
                        }
                    ]
                }
            },
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "w"}},
                }
            ],
            "containers": [
                {
                    "name": "w",
                    "image": "rayproject/ray",
                    "resources": {"requests": {"cpu": "8", "nvidia.com/gpu": "1"}},
                    "ports": [{"containerPort": 8265, "hostPort": 8265}],
                }
            ],
        },
    }
    return PodShape.of(TaskInfo.from_pod(msgspec.convert(pod, wire.Pod)))


class _Events:
    """A stand-in event recorder: the writer records a Warning only when a write fails."""

    def __init__(self) -> None:
        self.recorded: list[tuple[Any, ...]] = []

    def record(self, *event: Any) -> None:
        self.recorded.append(event)


def test_the_provisioning_request_crd_stores_what_muster_writes_unpruned(
    cluster: Cluster, namespace: str
) -> None:
    created_crd = not crd_installed(cluster)
    if created_crd:
        install_crd(cluster)
    try:
        cluster.create_podgroup(namespace, make_podgroup("gang", 2))
        group = cluster.podgroup(namespace, "gang")
        shape = a_members_shape()
        decision = CreateProvisioningRequest(
            namespace=namespace,
            name="gang-scaleup-1",
            podgroup="gang",
            podgroup_uid=group["metadata"]["uid"],
            attempt=1,
            class_name="best-effort-atomic-scale-up.autoscaling.x-k8s.io",
            parameters=(("ValidUntilSeconds", "3600"),),
            pod_sets=(PodSetTemplate("gang-scaleup-1-0", 2, template_spec(shape)),),
        )
        events = _Events()

        async def write() -> None:
            configuration = client.Configuration()
            kube_config.load_kube_config(
                config_file=str(cluster.kubeconfig), client_configuration=configuration
            )
            async with KubeClient(configuration) as kube:
                writer = ScaleUpWriter(kube, events)
                writer.create(decision)
                await writer.drain()

        asyncio.run(write())
        assert events.recorded == []
        (stored,) = requests(cluster, namespace)
        assert stored["spec"] == {
            "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
            "podSets": [{"podTemplateRef": {"name": "gang-scaleup-1-0"}, "count": 2}],
            "parameters": {"ValidUntilSeconds": "3600"},
        }
        assert stored["metadata"]["labels"] == {
            "app.kubernetes.io/managed-by": "muster",
            "scale-up.muster.dev/attempt": "1",
        }
        (owner,) = stored["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"]) == ("PodGroup", group["metadata"]["uid"])
        made = cluster.core.read_namespaced_pod_template("gang-scaleup-1-0", namespace)
        body = cluster.api.sanitize_for_serialization(made)
        written = decision.pod_sets[0].template
        # Every field muster wrote is stored as written (the server adds its defaults).
        assert body["template"]["metadata"]["labels"] == written["metadata"]["labels"]
        for field in ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints"):
            assert body["template"]["spec"][field] == written["spec"][field], field
        container = body["template"]["spec"]["containers"][0]
        assert container["resources"] == written["spec"]["containers"][0]["resources"]
        assert container["ports"][0]["hostPort"] == 8265
        (template_owner,) = body["metadata"]["ownerReferences"]
        assert (template_owner["kind"], template_owner["uid"]) == (
            "ProvisioningRequest",
            stored["metadata"]["uid"],
        )
        # An autoscaler's answer, on the status subresource, read back.
        answer = {
            "type": "Provisioned",
            "status": "True",
            "reason": "CapacityIsProvisioned",
            "message": "Capacity is found in the cluster",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": 1,
        }
        cluster.custom.patch_namespaced_custom_object_status(
            PR_GROUP,
            PR_VERSION,
            namespace,
            PR_PLURAL,
            "gang-scaleup-1",
            {"status": {"conditions": [answer]}},
        )
        assert request_condition(cluster, namespace, "Provisioned") == (
            "True",
            "CapacityIsProvisioned",
        )
        # The spec cannot change: a changed request is a new request.
        with pytest.raises(ApiException) as refused:
            cluster.custom.patch_namespaced_custom_object(
                PR_GROUP,
                PR_VERSION,
                namespace,
                PR_PLURAL,
                "gang-scaleup-1",
                {
                    "spec": {
                        "podSets": [{"podTemplateRef": {"name": "gang-scaleup-1-0"}, "count": 3}]
                    }
                },
            )
        assert refused.value.status == 422
        assert "immutable" in str(refused.value.body)
    finally:
        for found in requests(cluster, namespace) if crd_installed(cluster) else []:
            cluster.custom.delete_namespaced_custom_object(
                PR_GROUP, PR_VERSION, namespace, PR_PLURAL, found["metadata"]["name"]
            )
        if created_crd:
            client.ApiextensionsV1Api(cluster.api).delete_custom_resource_definition(
                f"{PR_PLURAL}.{PR_GROUP}"
            )
