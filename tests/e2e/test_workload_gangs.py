"""Every common workload placed as a gang, with no PodGroup written by hand.

For each kind the test creates what its operator creates (tests/unit/controller/workloads.py:
the workload, its Jobs or StatefulSets, its pods with their labels and ownerReferences, from
each operator's source), all but the last member first. `muster controller` makes the
PodGroup from the workload's spec; the scheduler binds none of the pods while fewer than
minMember exist, and all of them once the last arrives.

One sim, scheduler and controller serve the whole module (each kind in a namespace of its
own), so the module stays fast; the workload kinds' CRDs are plain schemas
(tests/e2e/workload-crds.yaml), as on a real server with MUSTER_E2E_KUBECONFIG.

A real server runs kube-controller-manager, whose Job and StatefulSet controllers make the
pods of the Jobs and StatefulSets a test creates: there the test lets them (their templates
confined to the suite's nodes) instead of playing them, and creates only what the operators
above them create. With its WorkloadWithJob gate on, the Job controller gangs an Indexed Job
of parallelism = completions > 1 itself (a native PodGroup: api/native.py); the test then
checks what muster makes of that: the native gang placed whole, no PodGroup of the
controller's for it, and a JobSet's other Jobs grouped Job by Job.
"""

from __future__ import annotations

import json
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.e2e.conftest import wait_until_ready
from tests.e2e.harness import (
    GROUP,
    GROUP_NAME,
    MUSTER,
    NATIVE_GROUP,
    VERSION,
    Cluster,
    Controller,
    Identities,
    Obj,
    Process,
    Scheduler,
    Sim,
    confine_to_pool,
    controller_argv,
    environ_kubeconfig,
    free_port,
    scheduler_conf,
    wait_for,
)
from tests.unit.controller import workloads as w

CRDS = Path(__file__).with_name("workload-crds.yaml")
RULE = "muster.dev/grouping-rule"


@dataclass
class World:
    """The module's API server, scheduler and controller."""

    cluster: Cluster
    scheduler: Scheduler
    controller: Controller


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """sim (or the real cluster's suite nodes), the CRDs, the scheduler and the controller."""
    work = tmp_path_factory.mktemp("gangs")
    processes: list[Process] = []
    stop = threading.Event()
    real = environ_kubeconfig()
    if real is None:
        sim = Sim.start(work, 2, "8", "32Gi")
        processes.append(sim.process)
        cluster = Cluster(sim.kubeconfig, sim)
    else:
        cluster = Cluster(real, None, pool=uuid.uuid4().hex[:8])
        threading.Thread(target=cluster.confirm_deletions, args=(stop,), daemon=True).start()
        for index in range(2):
            cluster.add_node(f"n{index}", "8", "32Gi")
    try:
        install_crds(cluster)
        identities = Identities(cluster, work)
        scheduler = start_scheduler(identities, work, processes)
        controller = start_controller(identities, work, processes)
        yield World(cluster, scheduler, controller)
    finally:
        stop.set()
        for process in reversed(processes):
            process.stop()
        if real is not None:
            cluster.delete_created_nodes()
        cluster.close()


def install_crds(cluster: Cluster) -> None:
    extensions = client.ApiextensionsV1Api(cluster.api)
    for crd in yaml.safe_load_all(CRDS.read_text()):
        if not crd:
            continue
        try:
            extensions.create_custom_resource_definition(crd)
        except ApiException as error:
            if error.status != 409:  # a real cluster with the operator installed
                raise


def start_scheduler(identities: Identities, work: Path, processes: list[Process]) -> Scheduler:
    port = free_port()
    argv = [
        MUSTER,
        "scheduler",
        "--kubeconfig",
        str(identities.kubeconfig("scheduler")),
        "--scheduler-conf",
        str(scheduler_conf(work / "scheduler.yaml")),
        "--schedule-period",
        "0.2s",
        "--metrics-address",
        f"127.0.0.1:{port}",
        "--no-leader-elect",
    ]
    process = Process("muster scheduler", argv, work / "scheduler.log")
    processes.append(process)
    scheduler = Scheduler(process, port, 0.2)
    wait_until_ready(scheduler)
    return scheduler


def start_controller(identities: Identities, work: Path, processes: list[Process]) -> Controller:
    health, webhook = free_port(), free_port()
    ca = work / "webhook-ca.pem"
    argv = controller_argv(
        identities.kubeconfig("controller"), health=health, webhook=webhook, ca=ca
    )
    process = Process("muster controller", argv, work / "controller.log")
    processes.append(process)
    controller = Controller(process, health, webhook, ca)
    wait_for(
        lambda: controller.healthy() and ca.exists(),
        20,
        message=lambda: f"{process.describe()} healthy\n{process.tail()}",
    )
    return controller


@pytest.fixture
def ns(world: World, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own, deleted afterwards."""
    stem = request.node.name.removeprefix("test_")[:30].replace("_", "-")
    name = f"gang-{stem}-{uuid.uuid4().hex[:5]}"
    world.cluster.create_namespace(name)
    yield name
    world.cluster.delete_namespace(name)


# ---------------------------------------------------------------- helpers


def create(world: World, obj: Obj) -> Obj:
    """Create any namespaced object; the object as stored (with its uid)."""
    cluster = world.cluster
    namespace = obj["metadata"]["namespace"]
    if obj["kind"] == "Pod":
        if cluster.pool is not None:
            confine_to_pool(obj, cluster.pool)
        response = cluster.core.create_namespaced_pod(namespace, obj, _preload_content=False)
        return dict(json.loads(response.data))
    group, _, version = obj["apiVersion"].rpartition("/")
    plural = w.PLURALS[obj["kind"]]
    return dict(
        cluster.custom.create_namespaced_custom_object(group, version, namespace, plural, obj)
    )


def real(world: World) -> bool:
    """Whether kube-controller-manager's Job and StatefulSet controllers make the pods."""
    return world.cluster.sim is None


def create_owned(world: World, obj: Obj) -> Obj:
    """Create a Job or StatefulSet; on a real server its template is confined to the suite's
    nodes, as the pods its controller makes must be."""
    if world.cluster.pool is not None:
        confine_to_pool(obj["spec"]["template"], world.cluster.pool)
    return create(world, obj)


def native_podgroups(world: World, namespace: str) -> list[Obj]:
    """The namespace's native PodGroups (scheduling.k8s.io/v1alpha2), [] when not served."""
    try:
        listed = world.cluster.custom.list_namespaced_custom_object(
            NATIVE_GROUP, "v1alpha2", namespace, "podgroups"
        )
    except ApiException as error:
        if error.status == 404:
            return []
        raise
    return list(listed["items"])


def gangs_jobs_natively(world: World, namespace: str, jobs: int) -> bool:
    """Whether Kubernetes' Job controller made native PodGroups for `jobs` Jobs just created
    (its WorkloadWithJob gate on): waited for a few seconds, as it does so before any pod."""
    try:
        wait_for(lambda: len(native_podgroups(world, namespace)) >= jobs, 5)
    except AssertionError:
        return False
    return True


def controller_pods(world: World, namespace: str, count: int) -> list[str]:
    """The names of the `count` pods the real controllers make, once they exist."""
    names = wait_for(
        lambda: (
            (found := [p["metadata"]["name"] for p in world.cluster.pods(namespace)])
            and len(found) >= count
            and found
        ),
        15,
        message=lambda: f"{count} pods made\n{world.cluster.describe(namespace)}",
    )
    return sorted(names)


def all_bound(world: World, namespace: str, names: list[str]) -> None:
    wait_for(
        lambda: len(bound(world, namespace, names)) == len(names),
        15,
        message=lambda: f"all {len(names)} pods bound\n{world.cluster.describe(namespace)}",
    )


def natively_ganged(world: World, namespace: str, names: list[str], jobs: int) -> None:
    """The pods of `jobs` natively ganged Jobs: each names its Job's native PodGroup (whose
    minCount is the Job's parallelism), none a PodGroup of muster controller's."""
    groups = {g["metadata"]["name"]: g for g in native_podgroups(world, namespace)}
    assert len(groups) == jobs, groups
    pods = {p["metadata"]["name"]: p for p in world.cluster.pods(namespace)}
    for name in names:
        pod = pods[name]
        assert (pod["spec"].get("schedulingGroup") or {}).get("podGroupName") in groups
        assert GROUP_NAME not in (pod["metadata"].get("annotations") or {})


def podgroup(world: World, namespace: str, name: str) -> Obj | None:
    try:
        return world.cluster.podgroup(namespace, name)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def controller_made(world: World, namespace: str) -> list[Obj]:
    listed = world.cluster.custom.list_namespaced_custom_object(
        GROUP, VERSION, namespace, "podgroups"
    )
    return [g for g in listed["items"] if RULE in (g["metadata"].get("annotations") or {})]


def bound(world: World, namespace: str, names: list[str]) -> list[str]:
    placed = world.cluster.placements(namespace)
    return [name for name in names if placed.get(name)]


def a_gang(
    world: World,
    namespace: str,
    first: list[Obj],
    last: list[Obj],
    *,
    owner_uid: str,
    key: str = "",
    size: int,
) -> Obj:
    """Create `first`; check their PodGroup is `podgroup-<owner uid>[-key]` of minMember
    `size` and none of them is bound; create `last`; check all are bound. The PodGroup."""
    name = f"podgroup-{owner_uid}" + (f"-{key}" if key else "")
    first_names = [create(world, pod)["metadata"]["name"] for pod in first]

    def grouped() -> bool:
        pods = {p["metadata"]["name"]: p for p in world.cluster.pods(namespace)}
        return all(
            (pods[n]["metadata"].get("annotations") or {}).get(GROUP_NAME) == name
            for n in first_names
        )

    wait_for(
        grouped,
        10,
        message=lambda: f"pods annotated with {name}\n{world.cluster.describe(namespace)}",
    )
    made = podgroup(world, namespace, name)
    assert made is not None
    assert made["spec"]["minMember"] == size, made["metadata"]["annotations"][RULE]
    world.scheduler.wait_sessions(3)
    assert bound(world, namespace, first_names) == [], (
        f"a gang of {size} started with {len(first)} pods"
    )
    names = first_names + [create(world, pod)["metadata"]["name"] for pod in last]
    wait_for(
        lambda: len(bound(world, namespace, names)) == len(names),
        10,
        message=lambda: f"all {len(names)} pods bound\n{world.cluster.describe(namespace)}",
    )
    return podgroup(world, namespace, name) or {}


# ---------------------------------------------------------------- one test per kind


def test_jobset_any_order_is_one_gang_of_every_replicated_jobs_pods(world: World, ns: str) -> None:
    js = create(world, w.jobset("train", ns, [("driver", 1, 1, 1), ("workers", 2, 2, 2)]))
    if real(world):
        jobset_on_a_real_server(world, ns, js)
        return
    pods = []
    for rjob, replicas, count in (("driver", 1, 1), ("workers", 2, 2)):
        for index in range(replicas):
            job = create(world, w.jobset_job(js, rjob, index))
            pods += [w.job_pod(job, i) for i in range(count)]
    made = a_gang(world, ns, pods[:-1], pods[-1:], owner_uid=js["metadata"]["uid"], size=5)
    assert made["metadata"]["ownerReferences"][0]["kind"] == "JobSet"
    rule = made["metadata"]["annotations"][RULE]
    assert "startupPolicyOrder AnyOrder" in rule
    argv = [MUSTER, "explain", "podgroup", f"{ns}/{made['metadata']['name']}"]
    argv += ["--kubeconfig", str(world.cluster.kubeconfig)]
    explained = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert f"made by muster controller: {rule}" in explained.stdout, explained.stdout


def jobset_on_a_real_server(world: World, ns: str, js: Obj) -> None:
    """The Job controller makes the JobSet's pods. The worker Jobs first (the JobSet
    controller makes them together; the driver after them here, so that the Job
    controller's native groups exist when the driver is grouped)."""
    for index in range(2):
        create_owned(world, w.jobset_job(js, "workers", index))
    native = gangs_jobs_natively(world, ns, 2)
    driver = create_owned(world, w.jobset_job(js, "driver", 0))
    names = controller_pods(world, ns, 5)
    all_bound(world, ns, names)
    if not native:
        # No native gangs: the JobSet is one gang, as on sim.
        made = podgroup(world, ns, f"podgroup-{js['metadata']['uid']}")
        assert made is not None and made["spec"]["minMember"] == 5
        return
    workers = [n for n in names if "-workers-" in n]
    natively_ganged(world, ns, workers, 2)
    # The driver's Job is no gang candidate: it is grouped as its own Job, not with the JobSet.
    assert [g["metadata"]["name"] for g in controller_made(world, ns)] == [
        f"podgroup-{driver['metadata']['uid']}"
    ]


def test_trainjob_is_grouped_through_its_jobset(world: World, ns: str) -> None:
    train = create(world, w.trainjob("llm", ns))
    js = create(world, w.trainjob_jobset(train, [("node", 1, 3, 3)]))
    if real(world):
        create_owned(world, w.jobset_job(js, "node", 0))
        native = gangs_jobs_natively(world, ns, 1)
        names = controller_pods(world, ns, 3)
        all_bound(world, ns, names)
        if native:
            natively_ganged(world, ns, names, 1)
            assert controller_made(world, ns) == []
        else:
            made = podgroup(world, ns, f"podgroup-{js['metadata']['uid']}")
            assert made is not None and made["spec"]["minMember"] == 3
        return
    job = create(world, w.jobset_job(js, "node", 0))
    pods = [w.job_pod(job, i) for i in range(3)]
    a_gang(world, ns, pods[:-1], pods[-1:], owner_uid=js["metadata"]["uid"], size=3)


def test_leaderworkerset_group_is_a_gang_with_leader_and_workers_subgroups(
    world: World, ns: str
) -> None:
    lws = create(world, w.leaderworkerset("serve", ns, replicas=1, size=3))
    if real(world):
        leaderworkerset_on_a_real_server(world, ns, lws)
        return
    leader_sts = create(world, w.lws_leader_statefulset(lws))
    leader = create(world, w.lws_leader_pod(lws, leader_sts, 0))
    workers = create(world, w.lws_worker_statefulset(lws, leader))
    # the leader is already created: the first worker joins it, the second completes the gang
    made = a_gang(
        world,
        ns,
        [w.lws_worker_pod(lws, workers, 1)],
        [w.lws_worker_pod(lws, workers, 2)],
        owner_uid=lws["metadata"]["uid"],
        key="0",
        size=3,
    )
    assert leader["metadata"]["name"] in world.cluster.placements(ns)
    assert [sub["name"] for sub in made["spec"]["subGroupPolicy"]] == ["leader", "workers"]


def leaderworkerset_on_a_real_server(world: World, ns: str, lws: Obj) -> None:
    """The StatefulSet controller makes the pods. LeaderWorkerSet's pod webhook (not on the
    suite's server) labels a pod with its group's index and key: for one group, the leader
    StatefulSet's template carries them. Its workers' StatefulSet starts at one replica
    (2 of the group's 3 pods: none bound), then is scaled to two (all 3 bound)."""
    leader_sts = w.lws_leader_statefulset(lws)
    leader_sts["spec"]["template"]["metadata"]["labels"].update(
        {w.LWS_GROUP: "0", w.LWS_KEY: "key0"}
    )
    leader_sts = create_owned(world, leader_sts)
    (leader_name,) = controller_pods(world, ns, 1)
    leader = next(p for p in world.cluster.pods(ns) if p["metadata"]["name"] == leader_name)
    leader = {"apiVersion": "v1", "kind": "Pod", **leader}
    workers_sts = w.lws_worker_statefulset(lws, leader)
    workers_sts["spec"]["replicas"] = 1
    workers_sts = create_owned(world, workers_sts)
    name = f"podgroup-{lws['metadata']['uid']}-0"
    names = controller_pods(world, ns, 2)
    wait_for(
        lambda: all(
            (p["metadata"].get("annotations") or {}).get(GROUP_NAME) == name
            for p in world.cluster.pods(ns)
        ),
        10,
        message=lambda: f"pods annotated with {name}\n{world.cluster.describe(ns)}",
    )
    made = podgroup(world, ns, name)
    assert made is not None and made["spec"]["minMember"] == 3
    world.scheduler.wait_sessions(3)
    assert bound(world, ns, names) == [], "a gang of 3 started with 2 pods"
    client.AppsV1Api(world.cluster.api).patch_namespaced_stateful_set(
        workers_sts["metadata"]["name"], ns, {"spec": {"replicas": 2}}
    )
    all_bound(world, ns, controller_pods(world, ns, 3))
    assert [sub["name"] for sub in made["spec"]["subGroupPolicy"]] == ["leader", "workers"]


def test_pytorchjob_is_one_gang_of_its_master_and_workers(world: World, ns: str) -> None:
    job = create(world, w.pytorchjob("mnist", ns, masters=1, workers=3))
    pods = [w.kubeflow_pod(job, "Master", 0)] + [w.kubeflow_pod(job, "Worker", i) for i in range(3)]
    a_gang(world, ns, pods[:-1], pods[-1:], owner_uid=job["metadata"]["uid"], size=4)


def test_a_training_operator_that_writes_its_podgroup_gets_no_other(world: World, ns: str) -> None:
    job = create(world, w.pytorchjob("mnist", ns, masters=1, workers=1))
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": "mnist", "ownerReferences": [w.reference(job)]},
        "spec": {"minMember": 2},
    }
    world.cluster.create_podgroup(ns, body)  # the operator's, with --gang-scheduler-name
    pods = [w.kubeflow_pod(job, "Master", 0), w.kubeflow_pod(job, "Worker", 0)]
    for pod in pods:
        pod["metadata"]["annotations"][GROUP_NAME] = "mnist"
        create(world, pod)
    names = [p["metadata"]["name"] for p in pods]
    wait_for(
        lambda: len(bound(world, ns, names)) == 2,
        10,
        message=lambda: f"the operator's gang bound\n{world.cluster.describe(ns)}",
    )
    assert controller_made(world, ns) == []


def test_mpijob_gangs_its_workers_then_counts_the_launcher_once_it_exists(
    world: World, ns: str
) -> None:
    mpi = create(world, w.mpijob("allreduce", ns, workers=2, wait_for_workers=True))
    workers = [w.mpi_worker_pod(mpi, i) for i in range(2)]
    made = a_gang(world, ns, workers[:1], workers[1:], owner_uid=mpi["metadata"]["uid"], size=2)
    if real(world):
        # The Job controller makes the launcher's pod.
        create_owned(world, w.mpi_launcher_job(mpi))
        launcher_name = next(n for n in controller_pods(world, ns, 3) if "launcher" in n)
    else:
        launcher_job = create(world, w.mpi_launcher_job(mpi))
        launcher_name = create(world, w.job_pod(launcher_job, 0))["metadata"]["name"]
    name = made["metadata"]["name"]
    wait_for(
        lambda: (podgroup(world, ns, name) or {}).get("spec", {}).get("minMember") == 3,
        10,
        message=lambda: f"{name} counts the launcher: {podgroup(world, ns, name)}",
    )
    wait_for(
        lambda: world.cluster.placements(ns).get(launcher_name),
        10,
        message=lambda: f"the launcher bound\n{world.cluster.describe(ns)}",
    )


def test_raycluster_of_a_rayjob_is_a_gang_of_head_and_workers(world: World, ns: str) -> None:
    job = create(world, w.rayjob("nightly", ns))
    raycluster = w.raycluster(
        "nightly-raycluster", ns, [{"groupName": "cpu", "replicas": 2, "minReplicas": 0}]
    )
    raycluster["metadata"]["ownerReferences"] = [w.reference(job)]
    cluster = create(world, raycluster)
    pods = [w.ray_pod(cluster, "headgroup", 0)] + [w.ray_pod(cluster, "cpu", i) for i in range(2)]
    made = a_gang(world, ns, pods[:-1], pods[-1:], owner_uid=cluster["metadata"]["uid"], size=3)
    assert [sub["name"] for sub in made["spec"]["subGroupPolicy"]] == ["headgroup", "cpu"]
    # Ray's autoscaler scales the worker group up: the PodGroup follows the RayCluster
    world.cluster.custom.patch_namespaced_custom_object(
        "ray.io",
        "v1",
        ns,
        "rayclusters",
        cluster["metadata"]["name"],
        {
            "spec": {
                "workerGroupSpecs": [{**raycluster["spec"]["workerGroupSpecs"][0], "replicas": 4}]
            }
        },
    )
    name = made["metadata"]["name"]
    wait_for(
        lambda: (podgroup(world, ns, name) or {}).get("spec", {}).get("minMember") == 5,
        10,
        message=lambda: f"{name} follows the scaled RayCluster: {podgroup(world, ns, name)}",
    )


def test_indexed_job_with_parallelism_equal_to_completions_is_a_gang(world: World, ns: str) -> None:
    if real(world):
        job = create_owned(world, w.job("ranks", ns, parallelism=3, completions=3, indexed=True))
        native = gangs_jobs_natively(world, ns, 1)
        names = controller_pods(world, ns, 3)
        all_bound(world, ns, names)
        if native:
            natively_ganged(world, ns, names, 1)
            assert controller_made(world, ns) == []
        else:
            made = podgroup(world, ns, f"podgroup-{job['metadata']['uid']}")
            assert made is not None and made["spec"]["minMember"] == 3
        return
    job = create(world, w.job("ranks", ns, parallelism=3, completions=3, indexed=True))
    pods = [w.job_pod(job, i) for i in range(3)]
    a_gang(world, ns, pods[:-1], pods[-1:], owner_uid=job["metadata"]["uid"], size=3)


def test_spark_driver_runs_alone_and_its_executors_join_its_group(world: World, ns: str) -> None:
    app = create(world, w.sparkapplication("etl", ns))
    driver = create(world, w.spark_driver(app, "spark-0123"))
    name = f"podgroup-{app['metadata']['uid']}-spark-0123"
    wait_for(
        lambda: world.cluster.placements(ns).get("etl-driver"),
        10,
        message=lambda: f"the driver bound alone\n{world.cluster.describe(ns)}",
    )
    executors = [
        create(world, w.spark_executor(app, driver, i))["metadata"]["name"] for i in range(2)
    ]
    wait_for(
        lambda: len(bound(world, ns, executors)) == 2,
        10,
        message=lambda: f"the executors bound\n{world.cluster.describe(ns)}",
    )
    assert [g["metadata"]["name"] for g in controller_made(world, ns)] == [name]
    for pod in world.cluster.pods(ns):
        assert pod["metadata"]["annotations"][GROUP_NAME] == name
