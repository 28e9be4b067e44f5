"""`muster controller` on sim with the scheduler: PodGroups for bare pods, queues, webhooks."""

from __future__ import annotations

import base64
import json
import subprocess

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.e2e.conftest import StartController, StartScheduler
from tests.e2e.harness import (
    GROUP,
    GROUP_NAME,
    MUSTER,
    QUEUE_NAME,
    VERSION,
    BindingLog,
    Cluster,
    Obj,
    bound,
    make_pod,
    make_podgroup,
    wait_for,
)
from tests.unit.controller import workloads as w

MIN_MEMBER = "scheduling.volcano.sh/group-min-member"
STATE_REQUEST = "muster.dev/queue-state"
PODGROUP = (GROUP, VERSION, "podgroups")
QUEUE = (GROUP, VERSION, "queues")
POD = ("", "v1", "pods")


# ---------------------------------------------------------------- helpers


def create_owner(cluster: Cluster, owner: Obj) -> Obj:
    """A controlling owner (a ReplicaSet, a Job) as its controller would find it."""
    group, version = owner["apiVersion"].split("/")
    namespace = owner["metadata"]["namespace"]
    plural = w.PLURALS[owner["kind"]]
    return dict(
        cluster.custom.create_namespaced_custom_object(group, version, namespace, plural, owner)
    )


def owned_pod(name: str, owner: Obj, cpu: str = "1", **pod: object) -> Obj:
    manifest = make_pod(name, cpu=cpu, **pod)  # type: ignore[arg-type]
    manifest["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]
    return manifest


def podgroup_or_none(cluster: Cluster, namespace: str, name: str) -> Obj | None:
    try:
        return cluster.podgroup(namespace, name)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def podgroups(cluster: Cluster, namespace: str) -> list[Obj]:
    listed = cluster.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "podgroups")
    return list(listed["items"])


def queue_state(cluster: Cluster, name: str) -> str | None:
    queue = cluster.queue(name)
    return (queue or {}).get("status", {}).get("state")


def create_queue(cluster: Cluster, name: str, **spec: object) -> None:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, **spec},
    }
    cluster.create_queue(body)


def muster_queue(cluster: Cluster, action: str, name: str) -> str:
    done = subprocess.run(
        [MUSTER, "queue", "--kubeconfig", str(cluster.kubeconfig), action, name],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    return done.stdout


def phase(cluster: Cluster, namespace: str, name: str) -> str | None:
    return (podgroup_or_none(cluster, namespace, name) or {}).get("status", {}).get("phase")


def refusal(answer: Obj) -> str:
    assert answer["allowed"] is False, answer
    return str(answer["status"]["message"])


# ---------------------------------------------------------------- PodGroups for bare pods


@pytest.mark.nodes(2, "4")
def test_replicaset_of_three_gets_one_podgroup_and_is_scheduled(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    start_controller: StartController,
    needs_sim: object,
) -> None:
    start_scheduler()
    start_controller()
    rs = create_owner(cluster, w.replicaset("web", namespace))
    with BindingLog(cluster, namespace) as log:
        for i in range(3):
            cluster.create_pod(namespace, owned_pod(f"web-{i}", rs, cpu="500m"))
        wait_for(
            lambda: len(bound(cluster.placements(namespace))) == 3,
            timeout=15,
            message=lambda: f"3 pods bound\n{cluster.describe(namespace)}",
        )
        assert log.double_binds() == {}
    name = f"podgroup-{rs['metadata']['uid']}"
    groups = podgroups(cluster, namespace)
    assert [g["metadata"]["name"] for g in groups] == [name]
    group = groups[0]
    assert group["spec"]["minMember"] == 1
    assert group["spec"]["minResources"] == {"cpu": "500m", "memory": "128Mi"}
    assert group["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
    for pod in cluster.pods(namespace):
        annotations = pod["metadata"]["annotations"]
        assert annotations[GROUP_NAME] == name
        # kopf keeps no state on users' objects
        assert not [key for key in annotations if "kopf" in key], annotations
    assert not [k for k in group["metadata"].get("annotations") or {} if "kopf" in k]

    # the PodGroup goes with its owner
    cluster.custom.delete_namespaced_custom_object("apps", "v1", namespace, "replicasets", "web")
    wait_for(
        lambda: podgroup_or_none(cluster, namespace, name) is None,
        timeout=10,
        message="the PodGroup garbage-collected with its ReplicaSet",
    )


@pytest.mark.nodes(2, "4")
def test_a_replicaset_whose_pods_have_a_generic_ephemeral_volume_is_grouped_and_runs(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    start_controller: StartController,
    needs_sim: object,
) -> None:
    start_scheduler()
    start_controller()
    storage = client.StorageV1Api(cluster.api)
    scratch_class = f"e2e-scratch-{namespace}"
    storage.create_storage_class(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": scratch_class},
            "provisioner": "csi.e2e.example.com",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    claim_spec = {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": scratch_class,
        "resources": {"requests": {"storage": "1Gi"}},
    }
    rs = create_owner(cluster, w.replicaset("scratch", namespace))
    try:
        for i in range(2):
            pod = owned_pod(f"scratch-{i}", rs, cpu="500m")
            pod["spec"]["volumes"] = [
                {"name": "tmp", "ephemeral": {"volumeClaimTemplate": {"spec": claim_spec}}}
            ]
            cluster.create_pod(namespace, pod)
            uid = cluster.core.read_namespaced_pod(f"scratch-{i}", namespace).metadata.uid
            # kube-controller-manager's ephemeral-volume controller makes <pod>-<volume>,
            # owned by the pod; sim runs none, so the test does.
            cluster.core.create_namespaced_persistent_volume_claim(
                namespace,
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {
                        "name": f"scratch-{i}-tmp",
                        "ownerReferences": [
                            {
                                "apiVersion": "v1",
                                "kind": "Pod",
                                "name": f"scratch-{i}",
                                "uid": uid,
                                "controller": True,
                            }
                        ],
                    },
                    "spec": claim_spec,
                },
            )
        wait_for(
            lambda: len(bound(cluster.placements(namespace))) == 2,
            timeout=20,
            message=lambda: f"2 pods bound\n{cluster.describe(namespace)}",
        )
        name = f"podgroup-{rs['metadata']['uid']}"
        assert [g["metadata"]["name"] for g in podgroups(cluster, namespace)] == [name]
    finally:
        storage.delete_storage_class(scratch_class, _preload_content=False)


@pytest.mark.nodes(2, "4")
def test_job_with_group_min_member_four_waits_for_four(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    start_controller: StartController,
    needs_sim: object,
) -> None:
    scheduler = start_scheduler()
    start_controller()
    job = create_owner(cluster, w.job("train", namespace, annotations={MIN_MEMBER: "4"}))
    name = f"podgroup-{job['metadata']['uid']}"
    with BindingLog(cluster, namespace) as log:
        for i in range(3):
            cluster.create_pod(namespace, owned_pod(f"train-{i}", job))
        wait_for(
            lambda: all(
                p["metadata"]["annotations"].get(GROUP_NAME) == name
                for p in cluster.pods(namespace)
            ),
            timeout=10,
            message=lambda: f"pods annotated with {name}\n{cluster.describe(namespace)}",
        )
        group = cluster.podgroup(namespace, name)
        assert group["spec"]["minMember"] == 4
        assert group["spec"]["minResources"] == {"cpu": "4", "memory": "512Mi"}
        scheduler.wait_sessions(3)
        assert bound(cluster.placements(namespace)) == [], "a gang of 4 started with 3 pods"

        cluster.create_pod(namespace, owned_pod("train-3", job))
        wait_for(
            lambda: len(bound(cluster.placements(namespace))) == 4,
            timeout=10,
            message=lambda: f"4 pods bound\n{cluster.describe(namespace)}",
        )
        assert log.double_binds() == {}
    assert len(podgroups(cluster, namespace)) == 1


# ---------------------------------------------------------------- queues


@pytest.mark.nodes(2, "4")
def test_closing_a_queue_stops_admission_and_reopening_resumes_it(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    start_controller: StartController,
) -> None:
    scheduler = start_scheduler()
    start_controller()
    create_queue(cluster, "team")
    wait_for(lambda: queue_state(cluster, "team") == "Open", 10, message="team Open")
    cluster.submit(
        namespace,
        make_podgroup("first", 2, queue="team"),
        [make_pod(f"first-{i}", group="first") for i in range(2)],
    )
    wait_for(lambda: phase(cluster, namespace, "first") == "Running", 10, message="first Running")

    assert "Closed requested" in muster_queue(cluster, "close", "team")
    # the running gang keeps the queue Closing, and keeps running
    wait_for(lambda: queue_state(cluster, "team") == "Closing", 10, message="team Closing")
    cluster.submit(
        namespace,
        make_podgroup("second", 2, queue="team"),
        [make_pod(f"second-{i}", group="second") for i in range(2)],
    )
    scheduler.wait_sessions(3)
    assert phase(cluster, namespace, "second") == "Pending"
    assert bound(cluster.placements(namespace), ["second-0", "second-1"]) == []
    assert len(bound(cluster.placements(namespace), ["first-0", "first-1"])) == 2

    # once its last admitted gang is gone, the queue is Closed
    for i in range(2):
        cluster.core.delete_namespaced_pod(f"first-{i}", namespace, grace_period_seconds=0)
    cluster.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, "podgroups", "first")
    wait_for(lambda: queue_state(cluster, "team") == "Closed", 10, message="team Closed")
    assert phase(cluster, namespace, "second") == "Pending"

    muster_queue(cluster, "open", "team")
    wait_for(lambda: queue_state(cluster, "team") == "Open", 10, message="team Open again")
    wait_for(
        lambda: len(bound(cluster.placements(namespace), ["second-0", "second-1"])) == 2,
        timeout=10,
        message=lambda: f"second placed after reopening\n{cluster.describe(namespace)}",
    )


# ---------------------------------------------------------------- admission webhooks


def test_each_webhook_rule_refuses_a_bad_object_with_its_message(
    cluster: Cluster, namespace: str, start_controller: StartController
) -> None:
    controller = start_controller()
    create_queue(cluster, "shut")
    cluster.custom.patch_cluster_custom_object(
        GROUP, VERSION, "queues", "shut", {"metadata": {"annotations": {STATE_REQUEST: "Closed"}}}
    )
    wait_for(lambda: queue_state(cluster, "shut") == "Closed", 10, message="shut Closed")
    wait_for(lambda: queue_state(cluster, "default") == "Open", 10, message="default Open")

    def podgroup(spec: Obj, name: str = "pg") -> Obj:
        return {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }

    def validate_podgroup(spec: Obj, old: Obj | None = None) -> Obj:
        operation = "UPDATE" if old else "CREATE"
        return controller.review(
            "/validate-podgroup", PODGROUP, operation, podgroup(spec), old, namespace
        )

    assert "spec.minMember=-1" in refusal(validate_podgroup({"minMember": -1}))
    message = refusal(validate_podgroup({"minMember": 1, "minResources": {"cpu": "lots"}}))
    assert "spec.minResources.cpu='lots'" in message and "such as 500m" in message
    message = refusal(validate_podgroup({"minMember": 2, "minTaskMember": {"a": 2, "b": 1}}))
    assert "raise minMember to 3" in message
    message = refusal(validate_podgroup({"minMember": 1, "queue": "nowhere"}))
    assert "queue 'nowhere' does not exist" in message
    # sim's queue state reaches the controller's index through its watch: poll the answer
    wait_for(
        lambda: not validate_podgroup({"minMember": 1, "queue": "shut"})["allowed"],
        10,
        message="a PodGroup refused in a Closed queue",
    )
    message = refusal(validate_podgroup({"minMember": 1, "queue": "shut"}))
    assert "is Closed; open it (muster queue open shut)" in message
    assert validate_podgroup({"minMember": 2, "minResources": {"cpu": "2"}})["allowed"]
    # KubeRay finishing a RayJob in a closed queue: minMember 0, empty minResources
    old = podgroup({"minMember": 3, "queue": "shut", "minTaskMember": {"head": 1, "w": 2}})
    finished = {"minMember": 0, "queue": "shut", "minResources": {}, "minTaskMember": {"w": 2}}
    assert validate_podgroup(finished, old)["allowed"]

    def queue(name: str, spec: Obj) -> Obj:
        return {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": spec,
        }

    def validate_queue(name: str, spec: Obj) -> Obj:
        return controller.review("/validate-queue", QUEUE, "CREATE", queue(name, spec))

    assert "spec.weight=0: must be 1 or more" in refusal(validate_queue("q", {"weight": 0}))
    message = refusal(
        validate_queue(
            "q", {"weight": 1, "capability": {"cpu": "2"}, "guarantee": {"resource": {"cpu": "4"}}}
        )
    )
    assert "exceeds spec.capability" in message
    message = refusal(validate_queue("q", {"weight": 1, "parent": "ghost"}))
    assert "queue 'ghost' does not exist" in message
    create_queue(cluster, "child", parent="shut")
    wait_for(
        lambda: not validate_queue("shut", {"weight": 1, "parent": "child"})["allowed"],
        10,
        message="a cycle refused",
    )
    assert "makes a cycle" in refusal(validate_queue("shut", {"weight": 1, "parent": "child"}))

    cluster.create_podgroup(namespace, make_podgroup("user", 1))
    wait_for(
        lambda: (
            not controller.review(
                "/validate-queue-delete", QUEUE, "DELETE", None, queue("default", {"weight": 1})
            )["allowed"]
        ),
        10,
        message="deleting the default queue in use refused",
    )
    message = refusal(
        controller.review(
            "/validate-queue-delete", QUEUE, "DELETE", None, queue("default", {"weight": 1})
        )
    )
    assert f"in use by PodGroup {namespace}/user" in message

    def validate_pod(queue_name: str, scheduler_name: str = "muster") -> Obj:
        pod = make_pod("p", annotations={QUEUE_NAME: queue_name}, scheduler_name=scheduler_name)
        pod["metadata"]["namespace"] = namespace
        return controller.review("/validate-pod", POD, "CREATE", pod, namespace=namespace)

    assert "queue 'shut' is Closed" in refusal(validate_pod("shut"))
    assert "queue 'gone' does not exist" in refusal(validate_pod("gone"))
    assert validate_pod("gone", scheduler_name="default-scheduler")["allowed"]
    assert validate_pod("default")["allowed"]


def test_a_podgroup_without_queue_takes_its_namespaces_queue(
    cluster: Cluster, namespace: str, start_controller: StartController
) -> None:
    controller = start_controller()
    cluster.core.patch_namespace(namespace, {"metadata": {"annotations": {QUEUE_NAME: "ml"}}})
    pg = make_podgroup("pg", 1)
    pg["metadata"]["namespace"] = namespace
    answer = controller.review("/mutate-podgroup", PODGROUP, "CREATE", pg, namespace=namespace)
    assert answer["allowed"], answer
    patch = json.loads(base64.b64decode(answer["patch"]))
    assert {"op": "add", "path": "/spec/queue", "value": "ml"} in patch, patch
    pg["spec"]["queue"] = "set"
    answer = controller.review("/mutate-podgroup", PODGROUP, "CREATE", pg, namespace=namespace)
    assert "patch" not in answer or json.loads(base64.b64decode(answer["patch"])) == []


# ---------------------------------------------------------------- KubeRay, replayed


def ray_pod(name: str, group: str, role: str | None, cpu: str) -> Obj:
    """A pod as KubeRay's volcano integration writes it."""
    pod = make_pod(name, group=group, role=role, cpu=cpu, scheduler_name="volcano")
    pod["metadata"]["labels"] = {"ray.io/node-type": role or "job", "volcano.sh/queue-name": "ray"}
    return pod


def allocated_cpu(cluster: Cluster, queue: str) -> str | None:
    status = (cluster.queue(queue) or {}).get("status", {})
    return (status.get("allocated") or {}).get("cpu")


@pytest.mark.nodes(2, "4")
def test_kuberay_flows_with_the_controller_end_with_the_right_placements_and_queue_figures(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    start_controller: StartController,
) -> None:
    start_scheduler(names=("volcano",))
    start_controller(names=("volcano",))
    create_queue(cluster, "ray", capability={"cpu": "6"})
    wait_for(lambda: queue_state(cluster, "ray") == "Open", 10, message="ray Open")
    job = "ray-job-pg"
    cluster.create_podgroup(
        namespace,
        make_podgroup(job, 3, queue="ray", min_resources={"cpu": "3500m", "memory": "512Mi"}),
    )
    members = [ray_pod("job-head", job, "headgroup", "1")]
    members += [ray_pod(f"job-worker-{i}", job, "worker-group", "1") for i in range(2)]
    for pod in members:
        cluster.create_pod(namespace, pod)
    wait_for(lambda: phase(cluster, namespace, job) == "Running", 10, message="the gang Running")

    # the submitter joins after the cluster runs, alone
    cluster.create_pod(namespace, ray_pod("job-submitter", job, None, "500m"))
    wait_for(
        lambda: cluster.placements(namespace).get("job-submitter"),
        10,
        message=lambda: f"the submitter placed\n{cluster.describe(namespace)}",
    )
    # scale-up in place
    cluster.patch_podgroup(
        namespace, job, {"spec": {"minMember": 5, "minResources": {"cpu": "5500m"}}}
    )
    for i in (2, 3):
        cluster.create_pod(namespace, ray_pod(f"job-worker-{i}", job, "worker-group", "1"))
    wait_for(
        lambda: len(bound(cluster.placements(namespace))) == 6,
        10,
        message=lambda: f"6 pods placed\n{cluster.describe(namespace)}",
    )
    wait_for(lambda: allocated_cpu(cluster, "ray") == "5500m", 10, message="ray allocated 5500m")

    # the RayJob finishes: KubeRay deletes the cluster and releases the gang in place
    for pod in cluster.pods(namespace):
        cluster.core.delete_namespaced_pod(
            pod["metadata"]["name"], namespace, grace_period_seconds=0
        )
    cluster.patch_podgroup(namespace, job, {"spec": {"minMember": 0, "minResources": None}})
    # a gang needing the queue's whole capability is admitted: nothing is reserved any more
    other = "ray-other-pg"
    cluster.create_podgroup(
        namespace, make_podgroup(other, 2, queue="ray", min_resources={"cpu": "6"})
    )
    for i in range(2):
        cluster.create_pod(namespace, ray_pod(f"other-{i}", other, "worker-group", "3"))
    wait_for(
        lambda: len(bound(cluster.placements(namespace))) == 2,
        10,
        message=lambda: f"the second gang placed\n{cluster.describe(namespace)}",
    )
    wait_for(lambda: allocated_cpu(cluster, "ray") == "6", 10, message="ray allocated 6")

    # suspended: its pods go away, the PodGroup stays, and the queue runs nothing
    for i in range(2):
        cluster.core.delete_namespaced_pod(f"other-{i}", namespace, grace_period_seconds=0)
    wait_for(
        lambda: (cluster.queue("ray") or {}).get("status", {}).get("running") == 0,
        10,
        message=lambda: f"ray runs nothing: {cluster.queue('ray')}",
    )
    assert cluster.pods(namespace) == []
    names = sorted(g["metadata"]["name"] for g in podgroups(cluster, namespace))
    assert names == [job, other], "the controller made PodGroups for KubeRay's pods"
    assert cluster.podgroup(namespace, job)["spec"]["minMember"] == 0


@pytest.mark.nodes(1, "4")
def test_queue_allocated_empties_when_its_last_pod_goes(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    start_scheduler()
    cluster.create_pod(namespace, make_pod("solo", annotations={QUEUE_NAME: "default"}))
    wait_for(lambda: allocated_cpu(cluster, "default") == "1", 10, message="default holds 1")
    cluster.core.delete_namespaced_pod("solo", namespace, grace_period_seconds=0)
    wait_for(
        lambda: not allocated_cpu(cluster, "default"),
        3,
        message=lambda: f"default holds nothing: {cluster.queue('default')}",
    )
