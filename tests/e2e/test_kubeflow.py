"""Kubeflow's Training Operator with --gang-scheduler-name=volcano, in its order, on muster.

The operator (pkg/controller.v1/common/scheduling.go SyncPodGroup, control/
podgroup_control.go) first creates the PodGroup named after the job (minMember,
queue, priorityClassName, minResources; the job's annotations); it creates the pods
only once the PodGroup's phase is neither empty nor Pending
(DelayPodCreationDueToPodGroup). Each pod names the group in
scheduling.k8s.io/group-name, its replica type (lower case) in volcano.sh/task-spec,
and schedulerName volcano.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import Cluster, Obj, bound, make_pod, make_podgroup, wait_for

JOB = "pytorch-mnist"


def training_pod(replica_type: str, index: int) -> Obj:
    """A pod as the operator makes it for one replica of a PyTorchJob."""
    name = f"{JOB}-{replica_type}-{index}"
    pod = make_pod(name, group=JOB, role=replica_type, cpu="1", scheduler_name="volcano")
    pod["metadata"]["labels"] = {
        "training.kubeflow.org/job-name": JOB,
        "training.kubeflow.org/replica-type": replica_type,
        "training.kubeflow.org/replica-index": str(index),
    }
    return pod


def phase(cluster: Cluster, namespace: str) -> str:
    return str(cluster.podgroup(namespace, JOB).get("status", {}).get("phase") or "")


@pytest.mark.nodes(2, "4")
def test_training_operator_podgroup_first_then_its_pods_bound_together(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler(names=("volcano",))
    # 1 master + 3 workers of 1 cpu: minMember 4, minResources their requests.
    cluster.create_podgroup(
        namespace,
        make_podgroup(JOB, 4, queue="default", min_resources={"cpu": "4", "memory": "512Mi"}),
    )
    scheduler.wait_sessions(2)
    # Admitted on minResources alone, with no pod yet: what the operator waits for.
    wait_for(
        lambda: phase(cluster, namespace) == "Inqueue",
        timeout=2,
        message=lambda: f"{JOB} Inqueue with no pods\n{cluster.describe(namespace)}",
    )
    assert cluster.pods(namespace) == []

    # DelayPodCreationDueToPodGroup is now false: the operator creates every replica.
    pods = [training_pod("master", 0)] + [training_pod("worker", i) for i in range(3)]
    for pod in pods:
        cluster.create_pod(namespace, pod)
    names = [p["metadata"]["name"] for p in pods]
    wait_for(
        lambda: len(bound(cluster.placements(namespace), names)) == 4,
        timeout=10,
        message=lambda: f"the 4 pods bound\n{cluster.describe(namespace)}",
    )
    wait_for(
        lambda: phase(cluster, namespace) == "Running",
        timeout=10,
        message=lambda: f"{JOB} Running\n{cluster.describe(namespace)}",
    )
