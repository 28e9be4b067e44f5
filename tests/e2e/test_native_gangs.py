"""Kubernetes' own gangs (scheduling.k8s.io Workloads and PodGroups) scheduled by muster, end
to end: all or nothing, the scheduled condition as kube-scheduler writes it, an Indexed Job
run as one gang, a gang preempted whole under disruptionMode PodGroup, two queues sharing
the cluster by weight. On sim at v1alpha2 (and v1beta1 where the versions differ); on a real
1.36 server with MUSTER_E2E_KUBECONFIG, where the Job controller makes the Indexed Job's
Workload, PodGroup and pods itself.

sim runs no controller behind the native API (as for Jobs): a test creates the Workload,
PodGroup and pods as Kubernetes' Job controller does (job_scheduling_manager.go: the
Workload named after the Job with a template `<job>-pgt-0` of gang.minCount = parallelism,
the PodGroup owned by the Job and referring to the Workload, the pods naming it in
spec.schedulingGroup with an extra ownerReference to it).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.e2e.conftest import StartController, StartScheduler
from tests.e2e.harness import (
    GROUP,
    NATIVE_GROUP,
    QUEUE_NAME,
    VERSION,
    Cluster,
    Obj,
    confine_to_pool,
    make_pod,
    wait_for,
)

V1ALPHA2 = "v1alpha2"
V1BETA1 = "v1beta1"
SCHEDULED = {V1ALPHA2: "PodGroupScheduled", V1BETA1: "PodGroupInitiallyScheduled"}
PREEMPTING = "enqueue, allocate, preempt, backfill"


# ---------------------------------------------------------------- builders and reads


def workload_body(name: str, version: str, min_count: int, job: str = "") -> Obj:
    template = {"name": f"{name}-pgt-0", "schedulingPolicy": {"gang": {"minCount": min_count}}}
    spec: Obj = {"podGroupTemplates": [template]}
    if job:
        spec["controllerRef"] = {"apiGroup": "batch", "kind": "Job", "name": job}
    return {
        "apiVersion": f"{NATIVE_GROUP}/{version}",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": spec,
    }


def podgroup_body(
    name: str,
    version: str,
    min_count: int,
    *,
    workload: str = "",
    whole: bool = False,
    priority_class: str = "",
    annotations: dict[str, str] | None = None,
) -> Obj:
    spec: Obj = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if workload:
        reference = {"workloadName": workload}
        if version == V1ALPHA2:
            reference["podGroupTemplateName"] = f"{workload}-pgt-0"
            spec["podGroupTemplateRef"] = {"workload": reference}
        else:
            reference["templateName"] = f"{workload}-pgt-0"
            spec["workloadRef"] = reference
    if whole:
        spec["disruptionMode"] = "PodGroup" if version == V1ALPHA2 else {"all": {}}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": f"{NATIVE_GROUP}/{version}",
        "kind": "PodGroup",
        "metadata": {"name": name, "annotations": dict(annotations or {})},
        "spec": spec,
    }


def member(name: str, group: str, *, cpu: str = "1", priority_class: str = "") -> Obj:
    pod = make_pod(name, cpu=cpu)
    pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    if priority_class:
        pod["spec"]["priorityClassName"] = priority_class
    return pod


def create_native(cluster: Cluster, namespace: str, version: str, body: Obj) -> Obj:
    plural = "workloads" if body["kind"] == "Workload" else "podgroups"
    return dict(
        cluster.custom.create_namespaced_custom_object(
            NATIVE_GROUP, version, namespace, plural, body
        )
    )


def native_podgroup(cluster: Cluster, namespace: str, version: str, name: str) -> Obj:
    return dict(
        cluster.custom.get_namespaced_custom_object(
            NATIVE_GROUP, version, namespace, "podgroups", name
        )
    )


def scheduled(cluster: Cluster, namespace: str, version: str, name: str) -> Obj | None:
    """The PodGroup's scheduled condition, as kube-scheduler names it at `version`."""
    conditions = (native_podgroup(cluster, namespace, version, name).get("status") or {}).get(
        "conditions"
    ) or []
    return next((c for c in conditions if c["type"] == SCHEDULED[version]), None)


def bound(cluster: Cluster, namespace: str, prefix: str) -> list[str]:
    return sorted(
        n for n, node in cluster.placements(namespace).items() if node and n.startswith(prefix)
    )


def volcano_podgroups(cluster: Cluster, namespace: str) -> list[str]:
    listed = cluster.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "podgroups")
    return [g["metadata"]["name"] for g in listed["items"]]


@pytest.fixture
def suffix() -> str:
    return uuid.uuid4().hex[:6]


@pytest.fixture
def priority_classes(cluster: Cluster, suffix: str) -> Iterator[tuple[str, str]]:
    api = client.SchedulingV1Api(cluster.api)
    names = (f"low-{suffix}", f"high-{suffix}")
    for name, value in zip(names, (10, 1000), strict=True):
        api.create_priority_class({"metadata": {"name": name}, "value": value})
    yield names
    for name in names:
        api.delete_priority_class(name)


# ---------------------------------------------------------------- all or nothing


def room_for_three_then_four(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler, version: str
) -> None:
    """A native gang of 4 one-cpu pods on 3 cpu: none bound, the scheduled condition False
    with kube-scheduler's reason and muster's words; a 4th cpu: all bound, the condition
    True with reason Scheduled."""
    scheduler = start_scheduler(period=0.2)
    create_native(cluster, namespace, version, workload_body("train", version, 4))
    create_native(cluster, namespace, version, podgroup_body("train", version, 4, workload="train"))
    for index in range(4):
        cluster.create_pod(namespace, member(f"train-{index}", "train"))
    # A session may run before the last pod is created: its condition says the gang waits
    # for the pods it has not yet ("2/2 tasks ... waiting for 2 more"), as it should. The
    # condition of a session that sees all four is the one this looks at.
    waiting = wait_for(
        lambda: (
            (found := scheduled(cluster, namespace, version, "train"))
            and found["message"].startswith("4/4 tasks")
            and found
        ),
        10,
        message=lambda: (
            f"the scheduled condition of the four pods: "
            f"{scheduled(cluster, namespace, version, 'train')}\n{cluster.describe(namespace)}"
        ),
    )
    assert (waiting["status"], waiting["reason"]) == ("False", "Unschedulable"), waiting
    assert waiting["message"].startswith("4/4 tasks in gang unschedulable: "), waiting
    scheduler.wait_sessions(scheduler.sessions() + 5)
    assert bound(cluster, namespace, "train-") == [], "a gang of 4 placed on room for 3"
    cluster.add_node("extra", "1")
    wait_for(
        lambda: len(bound(cluster, namespace, "train-")) == 4,
        15,
        message=lambda: f"all 4 bound once a 4th cpu exists\n{cluster.describe(namespace)}",
    )
    placed = wait_for(
        lambda: (
            (found := scheduled(cluster, namespace, version, "train"))
            and found["status"] == "True"
            and found
        ),
        10,
        message=lambda: (
            f"the scheduled condition True: {scheduled(cluster, namespace, version, 'train')}"
        ),
    )
    assert placed["reason"] == "Scheduled"


@pytest.mark.native_api(V1ALPHA2)
@pytest.mark.nodes(1, "3")
def test_a_native_gang_with_room_for_three_of_four_binds_none_then_all_four(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    room_for_three_then_four(cluster, namespace, start_scheduler, V1ALPHA2)


@pytest.mark.native_api(V1BETA1)
@pytest.mark.nodes(1, "3")
def test_a_v1beta1_native_gang_with_room_for_three_of_four_binds_none_then_all_four(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    room_for_three_then_four(cluster, namespace, start_scheduler, V1BETA1)


@pytest.mark.native_api(V1BETA1)
@pytest.mark.nodes(1, "3")
def test_a_v1beta1_gang_resized_to_fit_is_placed(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler(period=0.2)
    create_native(cluster, namespace, V1BETA1, podgroup_body("resize", V1BETA1, 4))
    for index in range(4):
        cluster.create_pod(namespace, member(f"resize-{index}", "resize"))
    scheduler.wait_sessions(scheduler.sessions() + 5)
    assert bound(cluster, namespace, "resize-") == []
    cluster.custom.patch_namespaced_custom_object(
        NATIVE_GROUP,
        V1BETA1,
        namespace,
        "podgroups",
        "resize",
        {"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}},
    )
    wait_for(
        lambda: len(bound(cluster, namespace, "resize-")) == 3,
        15,
        message=lambda: f"3 bound once minCount is 3\n{cluster.describe(namespace)}",
    )


@pytest.mark.native_api(V1ALPHA2)
@pytest.mark.nodes(1, "4")
def test_pods_of_a_native_podgroup_that_does_not_exist_wait_saying_so(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    start_scheduler(period=0.2)
    cluster.create_pod(namespace, member("early-0", "later"))

    def message() -> str:
        pod = cluster.core.read_namespaced_pod("early-0", namespace)
        found = next((c for c in pod.status.conditions or [] if c.type == "PodScheduled"), None)
        return found.message if found is not None and found.status == "False" else ""

    said = wait_for(message, 10, message=lambda: cluster.describe(namespace))
    assert (
        said
        == "waiting for podgroups.scheduling.k8s.io " + f"{namespace}/later, which does not exist"
    )
    create_native(cluster, namespace, V1ALPHA2, podgroup_body("later", V1ALPHA2, 1))
    wait_for(
        lambda: bound(cluster, namespace, "early-"), 10, message=lambda: cluster.describe(namespace)
    )


# ---------------------------------------------------------------- an Indexed Job


def indexed_job(name: str, ranks: int, pool: str | None) -> Obj:
    pod = make_pod("rank")
    template = {"metadata": {"labels": {}}, "spec": pod["spec"]}
    if pool is not None:
        confine_to_pool(template, pool)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "completionMode": "Indexed",
            "parallelism": ranks,
            "completions": ranks,
            "template": template,
        },
    }


def play_the_job_controller(cluster: Cluster, namespace: str, job: Obj, ranks: int) -> str:
    """What Kubernetes' Job controller makes for a new Indexed Job (WorkloadWithJob): the
    Workload, the gang PodGroup and the pods naming it. The PodGroup's name."""
    name = job["metadata"]["name"]
    job_ref = {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": job["metadata"]["uid"]}
    workload = workload_body(f"{name}-wl", V1ALPHA2, ranks, job=name)
    workload["metadata"]["ownerReferences"] = [
        {**job_ref, "controller": True, "blockOwnerDeletion": True}
    ]
    made = create_native(cluster, namespace, V1ALPHA2, workload)
    group = podgroup_body(f"{name}-pg", V1ALPHA2, ranks, workload=f"{name}-wl")
    group["metadata"]["ownerReferences"] = [
        {**job_ref, "controller": True, "blockOwnerDeletion": True},
        {
            "apiVersion": f"{NATIVE_GROUP}/{V1ALPHA2}",
            "kind": "Workload",
            "name": made["metadata"]["name"],
            "uid": made["metadata"]["uid"],
        },
    ]
    pg = create_native(cluster, namespace, V1ALPHA2, group)
    for index in range(ranks):
        pod = member(f"{name}-{index}-x", f"{name}-pg")
        pod["metadata"]["labels"] = {"batch.kubernetes.io/job-completion-index": str(index)}
        pod["metadata"]["ownerReferences"] = [
            {**job_ref, "controller": True, "blockOwnerDeletion": True},
            {
                "apiVersion": f"{NATIVE_GROUP}/{V1ALPHA2}",
                "kind": "PodGroup",
                "name": pg["metadata"]["name"],
                "uid": pg["metadata"]["uid"],
            },
        ]
        cluster.create_pod(namespace, pod)
    return str(pg["metadata"]["name"])


def job_podgroup(cluster: Cluster, namespace: str) -> str | None:
    listed = cluster.custom.list_namespaced_custom_object(
        NATIVE_GROUP, V1ALPHA2, namespace, "podgroups"
    )
    names = [g["metadata"]["name"] for g in listed["items"]]
    return names[0] if names else None


@pytest.mark.native_api(V1ALPHA2)
@pytest.mark.nodes(2, "2")
def test_an_indexed_job_for_muster_runs_as_one_native_gang(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    start_controller: StartController,
) -> None:
    start_controller()
    start_scheduler(period=0.2)
    body = indexed_job("ranks", 3, cluster.pool)
    job = client.BatchV1Api(cluster.api).create_namespaced_job(namespace, body)
    if cluster.sim is not None:
        stored = cluster.api.sanitize_for_serialization(job)
        play_the_job_controller(cluster, namespace, stored, 3)
    group = wait_for(
        lambda: job_podgroup(cluster, namespace),
        15,
        message=lambda: f"the Job's native PodGroup\n{cluster.describe(namespace)}",
    )
    wait_for(
        lambda: len(bound(cluster, namespace, "ranks-")) == 3,
        20,
        message=lambda: f"all 3 ranks bound\n{cluster.describe(namespace)}",
    )
    for pod in cluster.pods(namespace):
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": group}
    condition = wait_for(
        lambda: (
            (found := scheduled(cluster, namespace, V1ALPHA2, group))
            and found["status"] == "True"
            and found
        ),
        10,
        message=lambda: f"{group} scheduled: {scheduled(cluster, namespace, V1ALPHA2, group)}",
    )
    assert condition["reason"] == "Scheduled"
    assert native_podgroup(cluster, namespace, V1ALPHA2, group)["spec"]["schedulingPolicy"] == {
        "gang": {"minCount": 3}
    }
    assert volcano_podgroups(cluster, namespace) == [], "muster controller made a PodGroup too"


# ---------------------------------------------------------------- preemption


@pytest.mark.native_api(V1ALPHA2)
@pytest.mark.nodes(2, "2")
def test_a_native_gang_under_disruption_mode_podgroup_is_preempted_whole(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    priority_classes: tuple[str, str],
) -> None:
    low, high = priority_classes
    start_scheduler(period=0.2, actions=PREEMPTING)
    stored = create_native(
        cluster,
        namespace,
        V1ALPHA2,
        podgroup_body("victim", V1ALPHA2, 2, whole=True, priority_class=low),
    )
    if stored["spec"].get("disruptionMode") != "PodGroup":
        pytest.skip("the API server drops disruptionMode (its WorkloadAwarePreemption gate is off)")
    for index in range(4):
        cluster.create_pod(namespace, member(f"victim-{index}", "victim", priority_class=low))
    wait_for(
        lambda: len(bound(cluster, namespace, "victim-")) == 4,
        10,
        message=lambda: f"the victim gang bound\n{cluster.describe(namespace)}",
    )
    create_native(
        cluster, namespace, V1ALPHA2, podgroup_body("urgent", V1ALPHA2, 1, priority_class=high)
    )
    cluster.create_pod(namespace, member("urgent-0", "urgent", priority_class=high))
    wait_for(
        lambda: bound(cluster, namespace, "urgent-") == ["urgent-0"],
        20,
        message=lambda: f"the urgent gang placed\n{cluster.describe(namespace)}",
    )
    # one cpu was enough, but the victim goes whole: none of its four pods is left
    wait_for(
        lambda: (
            not [p for p in cluster.pods(namespace) if p["metadata"]["name"].startswith("victim-")]
        ),
        15,
        message=lambda: f"the whole victim gang evicted\n{cluster.describe(namespace)}",
    )
    conditions = (native_podgroup(cluster, namespace, V1ALPHA2, "victim").get("status") or {}).get(
        "conditions"
    ) or []
    target = next((c for c in conditions if c["type"] == "DisruptionTarget"), None)
    assert target is not None and target["reason"] == "PreemptionByScheduler", conditions


# ---------------------------------------------------------------- queues


def create_queue(cluster: Cluster, name: str, weight: int) -> None:
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Queue", "metadata": {"name": name}}
    cluster.create_queue({**body, "spec": {"weight": weight, "reclaimable": True}})


@pytest.mark.native_api(V1ALPHA2)
@pytest.mark.nodes(2, "4")
def test_native_gangs_of_two_queues_share_the_cluster_by_weight(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler, suffix: str
) -> None:
    # 8 cpu between weights 1 and 3: team-a deserves 2 (one gang of 2), team-b 6 (three).
    team_a, team_b = f"team-a-{suffix}", f"team-b-{suffix}"
    create_queue(cluster, team_a, 1)
    create_queue(cluster, team_b, 3)
    # team-a names its queue on each PodGroup; team-b on the Workload its PodGroups come from
    labelled = workload_body("b", V1ALPHA2, 2)
    labelled["metadata"]["labels"] = {QUEUE_NAME: team_b}
    create_native(cluster, namespace, V1ALPHA2, labelled)
    for index in range(4):
        a = podgroup_body(f"a{index}", V1ALPHA2, 2, annotations={QUEUE_NAME: team_a})
        create_native(cluster, namespace, V1ALPHA2, a)
        create_native(
            cluster, namespace, V1ALPHA2, podgroup_body(f"b{index}", V1ALPHA2, 2, workload="b")
        )
        for rank in range(2):
            cluster.create_pod(namespace, member(f"a{index}-{rank}", f"a{index}"))
            cluster.create_pod(namespace, member(f"b{index}-{rank}", f"b{index}"))
    # the whole backlog is there before the scheduler starts
    start_scheduler(period=0.2)

    def split() -> tuple[int, int]:
        return len(bound(cluster, namespace, "a")), len(bound(cluster, namespace, "b"))

    wait_for(
        lambda: sum(split()) == 8,
        20,
        message=lambda: f"the cluster full, have {split()}\n{cluster.describe(namespace)}",
    )
    time.sleep(1)
    assert split() == (2, 6)
