"""A pod's request, status and constraints as the scheduler reads them."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.placement import HostPort, Toleration, normalized_image_name
from scheduler.api.pod_requests import pod_request
from scheduler.api.resources import Resource
from scheduler.api.task import TaskInfo, TaskStatus

GIB = 2**30


def container(cpu: str = "", memory: str = "", **extra: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return {"resources": {"requests": requests}, **extra}


def sidecar(cpu: str = "", memory: str = "") -> dict[str, Any]:
    return container(cpu, memory, restartPolicy="Always")


def request_of(**spec: Any) -> Resource:
    return pod_request(wire.from_dict(spec, wire.PodSpec))


def pod(
    *,
    phase: str = "Pending",
    node: str = "",
    deleting: bool = False,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> wire.Pod:
    metadata: dict[str, Any] = {
        "name": "web-0",
        "namespace": "team",
        "uid": "u-1",
        "annotations": annotations or {},
    }
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec.setdefault("containers", [container("1", "1Gi")])
    if node:
        spec["nodeName"] = node
    return wire.from_dict(
        {"metadata": metadata, "spec": spec, "status": {"phase": phase}}, wire.Pod
    )


# pod_request


def test_request_sums_the_containers() -> None:
    request = request_of(containers=[container("1", "1Gi"), container("500m", "2Gi")])
    assert request == Resource(1500, 3 * GIB)


def test_init_container_larger_than_the_containers_sets_that_dimension() -> None:
    request = request_of(containers=[container("1", "4Gi")], initContainers=[container("3", "1Gi")])
    assert request == Resource(3000, 4 * GIB)


def test_init_containers_run_one_at_a_time_so_only_the_largest_counts() -> None:
    request = request_of(
        containers=[container("1")], initContainers=[container("2"), container("2")]
    )
    assert request.cpu == 2000


def test_sidecars_run_beside_the_containers_and_add_to_them() -> None:
    request = request_of(
        containers=[container("1", "1Gi")], initContainers=[sidecar("500m", "1Gi")]
    )
    assert request == Resource(1500, 2 * GIB)


def test_init_container_after_a_sidecar_runs_beside_it() -> None:
    # max(containers 1 + sidecar 0.5, init 2 + sidecar 0.5) = 2.5
    request = request_of(
        containers=[container("1")], initContainers=[sidecar("500m"), container("2")]
    )
    assert request.cpu == 2500


def test_init_container_before_a_sidecar_does_not_run_beside_it() -> None:
    # max(containers 1 + sidecar 0.5, init 2) = 2
    request = request_of(
        containers=[container("1")], initContainers=[container("2"), sidecar("500m")]
    )
    assert request.cpu == 2000


def test_pod_overhead_is_added_on_top() -> None:
    request = request_of(
        containers=[container("1", "1Gi")],
        initContainers=[container("2")],
        overhead={"cpu": "250m", "memory": "128Mi"},
    )
    assert request == Resource(2250, GIB + 128 * 2**20)


def test_extended_resources_are_requested_like_cpu() -> None:
    request = request_of(
        containers=[{"resources": {"requests": {"nvidia.com/gpu": 2, "cpu": "1"}}}]
    )
    assert request == Resource(1000, 0, {"nvidia.com/gpu": 2})


def test_pod_without_requests_is_best_effort() -> None:
    task = TaskInfo.from_pod(pod(containers=[{"name": "app"}]))
    assert task.best_effort
    assert not TaskInfo.from_pod(pod()).best_effort


def test_malformed_quantity_names_pod_field_and_value() -> None:
    bad = pod(containers=[container("1"), container("", "12XB")])
    with pytest.raises(InvalidObject) as raised:
        TaskInfo.from_pod(bad)
    error = raised.value
    assert error.kind == "Pod"
    assert error.name == "team/web-0"
    assert error.field == "spec.containers[1].resources.requests.memory"
    assert error.value == "12XB"


def test_malformed_init_container_quantity_names_its_field() -> None:
    with pytest.raises(InvalidObject, match=r"spec\.initContainers\[0\]\.resources\.requests\.cpu"):
        TaskInfo.from_pod(pod(initContainers=[container("one")]))


# statuses


@pytest.mark.parametrize(
    ("phase", "node", "deleting", "status"),
    [
        ("Pending", "", False, TaskStatus.PENDING),
        ("", "", False, TaskStatus.PENDING),
        ("Pending", "n1", False, TaskStatus.BOUND),
        ("Running", "n1", False, TaskStatus.RUNNING),
        ("Running", "n1", True, TaskStatus.RELEASING),
        ("Pending", "n1", True, TaskStatus.RELEASING),
        ("Succeeded", "n1", False, TaskStatus.SUCCEEDED),
        ("Failed", "n1", False, TaskStatus.FAILED),
        ("Unknown", "n1", False, TaskStatus.UNKNOWN),
    ],
    ids=[
        "pending",
        "no-phase-yet",
        "bound-not-running",
        "running",
        "running-being-deleted",
        "bound-being-deleted",
        "succeeded",
        "failed",
        "unknown",
    ],
)
def test_status_follows_phase_node_and_deletion(
    phase: str, node: str, deleting: bool, status: TaskStatus
) -> None:
    assert TaskInfo.from_pod(pod(phase=phase, node=node, deleting=deleting)).status is status


def test_scheduling_gates_mark_the_task_gated() -> None:
    assert TaskInfo.from_pod(pod(schedulingGates=[{"name": "wait"}])).gated
    assert not TaskInfo.from_pod(pod()).gated


# identity and membership


def test_group_role_queue_and_priority_come_from_annotations_and_spec() -> None:
    annotations = {
        "scheduling.k8s.io/group-name": "ray-pg",
        "volcano.sh/task-spec": "worker",
        "scheduling.volcano.sh/queue-name": "research",
    }
    task = TaskInfo.from_pod(
        pod(annotations=annotations, priority=100, schedulerName="muster", nodeName="")
    )
    assert task.job == "team/ray-pg"
    assert task.role == "worker"
    assert task.queue_annotation == "research"
    assert task.priority == 100
    assert task.scheduler_name == "muster"
    assert task.key == "team/web-0"


def test_pod_without_group_annotation_has_no_job() -> None:
    task = TaskInfo.from_pod(pod())
    assert task.job == ""
    assert task.priority == 0


def test_owner_is_the_controller_reference() -> None:
    document = {
        "metadata": {
            "name": "p",
            "ownerReferences": [
                {"kind": "Other", "uid": "x"},
                {"kind": "ReplicaSet", "uid": "rs-1", "controller": True},
            ],
        },
        "spec": {"containers": []},
    }
    assert TaskInfo.from_pod(wire.from_dict(document, wire.Pod)).owner_uid == "rs-1"


# placement


def test_placement_reads_selector_tolerations_and_host_ports() -> None:
    task = TaskInfo.from_pod(
        pod(
            nodeSelector={"zone": "a", "disk": "ssd"},
            tolerations=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
            containers=[
                {"ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 9000}]},
                {"ports": [{"containerPort": 53, "hostPort": 53, "protocol": "UDP"}]},
            ],
        )
    )
    placement = task.placement
    assert placement.node_selector == (("disk", "ssd"), ("zone", "a"))
    assert placement.tolerations == (Toleration("dedicated", "Equal", "gpu", "NoSchedule"),)
    assert placement.host_ports == (HostPort("", "TCP", 8080), HostPort("", "UDP", 53))


def test_pods_from_one_template_share_one_placement_record() -> None:
    first = TaskInfo.from_pod(pod(nodeSelector={"zone": "a"}))
    second = TaskInfo.from_pod(pod(nodeSelector={"zone": "a"}))
    assert first.placement is second.placement  # one record in the cache, not one per pod
    assert first.placement.node_selector == (("zone", "a"),)


def test_pods_with_affinity_from_one_template_have_equal_placements() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                ]
            }
        }
    }
    first = TaskInfo.from_pod(pod(affinity=affinity))
    second = TaskInfo.from_pod(pod(affinity=affinity))
    assert first.placement == second.placement
    assert hash(first.placement) == hash(second.placement)


def test_pods_asking_different_tolerations_get_different_placements() -> None:
    gpu = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    cpu = [{"key": "dedicated", "value": "cpu", "effect": "NoSchedule"}]
    first = TaskInfo.from_pod(pod(tolerations=gpu))
    second = TaskInfo.from_pod(pod(tolerations=cpu))
    assert first.placement.tolerations == (Toleration("dedicated", "Equal", "gpu", "NoSchedule"),)
    assert second.placement.tolerations == (Toleration("dedicated", "Equal", "cpu", "NoSchedule"),)


def labelled(labels: dict[str, str]) -> wire.Pod:
    subject = pod()
    subject.metadata.labels = labels
    return subject


def test_pods_with_equal_labels_share_them_and_read_them_unchanged() -> None:
    first = TaskInfo.from_pod(labelled({"app": "a", "gang": "g1"}))
    second = TaskInfo.from_pod(labelled({"app": "a", "gang": "g1"}))
    other = TaskInfo.from_pod(labelled({"app": "a", "gang": "g2"}))
    assert first.labels is second.labels
    assert dict(first.labels) == {"app": "a", "gang": "g1"}
    assert dict(other.labels) == {"app": "a", "gang": "g2"}
    assert dict(TaskInfo.from_pod(pod()).labels) == {}


def test_host_ports_conflict_on_same_port_and_protocol_unless_ips_differ() -> None:
    tcp = HostPort("", "TCP", 80)
    assert tcp.conflicts_with(HostPort("10.0.0.1", "TCP", 80))
    assert not tcp.conflicts_with(HostPort("", "UDP", 80))
    assert not tcp.conflicts_with(HostPort("", "TCP", 81))
    assert not HostPort("10.0.0.1", "TCP", 80).conflicts_with(HostPort("10.0.0.2", "TCP", 80))
    assert HostPort("0.0.0.0", "TCP", 80).conflicts_with(HostPort("10.0.0.2", "TCP", 80))


def test_clone_has_its_own_status_and_node_but_shares_request_and_placement() -> None:
    task = TaskInfo.from_pod(pod())
    twin = task.clone()
    twin.status = TaskStatus.ALLOCATED
    twin.node_name = "n1"
    assert task.status is TaskStatus.PENDING
    assert task.node_name == ""
    assert twin.request is task.request
    assert twin.placement is task.placement


# Images (ImageLocality)

DIGEST = "sha256:" + "4f" * 32


@pytest.mark.parametrize(
    ("image", "normalised"),
    [
        # kube-scheduler's TestNormalizedImageName.
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        (f"root@{DIGEST}", f"root@{DIGEST}"),
        # No registry or library/ prefix is added (the kubelet may report one).
        ("nginx", "nginx:latest"),
    ],
)
def test_image_names_are_normalised_as_image_locality_reads_them(
    image: str, normalised: str
) -> None:
    assert normalized_image_name(image) == normalised


def test_pod_images_are_its_init_containers_then_its_containers() -> None:
    task = TaskInfo.from_pod(
        pod(
            initContainers=[{"name": "setup", "image": "tools:v1"}],
            containers=[{"name": "main", "image": "app"}, {"name": "side", "image": "app"}],
        )
    )
    assert task.images == ("tools:v1", "app:latest", "app:latest")


def test_images_leave_the_decoded_placement_alone_so_pods_keep_sharing_shapes() -> None:
    first = TaskInfo.from_pod(pod(containers=[{"name": "c", "image": "a:v1"}]))
    second = TaskInfo.from_pod(pod(containers=[{"name": "c", "image": "b:v1"}]))
    assert first.placement == second.placement
    assert first.placement.images == ()


def test_clone_shares_the_images() -> None:
    task = TaskInfo.from_pod(pod(containers=[{"name": "c", "image": "a:v1"}]))
    assert task.clone().images is task.images
