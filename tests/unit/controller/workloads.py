"""The objects workload operators create, as their sources write them, for the controller's tests.

Each builder takes the parent as stored (its uid from the API server, or made up in unit
tests) and returns the child as the operator creates it: labels, annotations and the
controller ownerReference of JobSet (pkg/controllers/jobset_controller.go
labelAndAnnotateObject, constructJob), the Job controller (pod labels and the
completion-index annotation of an Indexed Job), LeaderWorkerSet (leader and worker
StatefulSets, its pod webhook's labels), the Kubeflow Training Operator and mpi-operator
(replica labels, the MPIJob launcher Job), Kubeflow Trainer v2 (a JobSet owned by its
TrainJob), KubeRay (ray.io labels), and Spark (spark-app-selector, executors owned by their
driver). Pod specs are the same small container everywhere: the tests are about grouping.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

Obj = dict[str, Any]
SCHEDULER = "muster"
# The plural each kind is served under.
PLURALS = {
    "Job": "jobs",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "Pod": "pods",
    "JobSet": "jobsets",
    "LeaderWorkerSet": "leaderworkersets",
    "PyTorchJob": "pytorchjobs",
    "MPIJob": "mpijobs",
    "TrainJob": "trainjobs",
    "RayCluster": "rayclusters",
    "RayJob": "rayjobs",
    "SparkApplication": "sparkapplications",
}
_uids = itertools.count(1)


def fake_uid(prefix: str) -> str:
    """A uid for objects unit tests make up (the API server gives real ones)."""
    return f"{prefix}-uid-{next(_uids)}"


def reference(owner: Obj, *, controller: bool = True) -> Obj:
    """The ownerReference an operator sets on what it creates (controller-runtime's)."""
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    if controller:
        ref["controller"] = True
        ref["blockOwnerDeletion"] = True
    return ref


def pod_spec(cpu: str = "1", *, restart: str | None = None) -> Obj:
    """A pod spec of ours: one container requesting `cpu`."""
    spec: Obj = {
        "schedulerName": SCHEDULER,
        "containers": [
            {
                "name": "main",
                "image": "busybox:1.36",
                "command": ["sleep", "3600"],
                "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}},
            }
        ],
    }
    if restart is not None:
        spec["restartPolicy"] = restart
    return spec


def template(
    cpu: str = "1", *, labels: dict[str, str] | None = None, restart: str | None = None
) -> Obj:
    """A pod template."""
    return {"metadata": {"labels": dict(labels or {})}, "spec": pod_spec(cpu, restart=restart)}


def _object(api_version: str, kind: str, name: str, namespace: str, spec: Obj, **meta: Any) -> Obj:
    metadata: Obj = {"name": name, "namespace": namespace, **meta}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


def with_uid(obj: Obj, uid: str | None = None) -> Obj:
    """The object as the API server returns it, with a uid (made up unless given)."""
    made = copy.deepcopy(obj)
    made["metadata"]["uid"] = uid or fake_uid(obj["kind"].lower())
    return made


def pod(
    name: str,
    namespace: str,
    owner: Obj | None,
    *,
    cpu: str = "1",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    restart: str | None = None,
    others: tuple[Obj, ...] = (),
) -> Obj:
    """A pod as a controller creates it, controlled by `owner` (others: extra references)."""
    refs = [reference(owner)] if owner is not None else []
    refs += [reference(other, controller=False) for other in others]
    metadata: Obj = {
        "name": name,
        "namespace": namespace,
        "labels": dict(labels or {}),
        "annotations": dict(annotations or {}),
    }
    if refs:
        metadata["ownerReferences"] = refs
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": pod_spec(cpu, restart=restart),
    }


# -- batch/v1 Jobs and their pods -----------------------------------------------------


def job(
    name: str,
    namespace: str,
    *,
    parallelism: int | None = None,
    completions: int | None = None,
    indexed: bool = False,
    cpu: str = "1",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    """A Job as a user (or an operator) writes it."""
    spec: Obj = {"template": template(cpu, labels=labels, restart="Never")}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    if indexed:
        spec["completionMode"] = "Indexed"
    meta: Obj = {"annotations": dict(annotations or {})}
    return _object("batch/v1", "Job", name, namespace, spec, **meta)


def job_pod(job_obj: Obj, index: int, *, suffix: str = "x") -> Obj:
    """A pod of a Job as the Job controller creates it: the template's labels (the selector
    labels the API server added included), an Indexed Job's completion index as label and
    annotation, the Job as controller."""
    spec = job_obj["spec"]
    labels = dict((spec["template"].get("metadata") or {}).get("labels") or {})
    uid, name = job_obj["metadata"]["uid"], job_obj["metadata"]["name"]
    labels.setdefault("controller-uid", uid)
    labels.setdefault("batch.kubernetes.io/controller-uid", uid)
    labels.setdefault("job-name", name)
    labels.setdefault("batch.kubernetes.io/job-name", name)
    annotations = dict((spec["template"].get("metadata") or {}).get("annotations") or {})
    if spec.get("completionMode") == "Indexed":
        labels["batch.kubernetes.io/job-completion-index"] = str(index)
        annotations["batch.kubernetes.io/job-completion-index"] = str(index)
    made = pod(
        f"{name}-{index}-{suffix}",
        job_obj["metadata"]["namespace"],
        job_obj,
        labels=labels,
        annotations=annotations,
        restart="Never",
    )
    made["spec"] = copy.deepcopy(spec["template"]["spec"])
    return made


# -- JobSet -------------------------------------------------------------------------------

JOBSET_API = "jobset.x-k8s.io/v1alpha2"


def jobset(
    name: str,
    namespace: str,
    replicated: list[tuple[str, int, int, int]],
    *,
    order: str | None = None,
) -> Obj:
    """A JobSet: (replicatedJob name, replicas, parallelism, completions) each, Indexed Jobs."""
    jobs = []
    for rjob, replicas, parallelism, completions in replicated:
        jobs.append(
            {
                "name": rjob,
                "replicas": replicas,
                "template": {
                    "spec": {
                        "parallelism": parallelism,
                        "completions": completions,
                        "completionMode": "Indexed",
                        "template": template(restart="OnFailure"),
                    }
                },
            }
        )
    spec: Obj = {"replicatedJobs": jobs}
    if order is not None:
        spec["startupPolicy"] = {"startupPolicyOrder": order}
    return _object(JOBSET_API, "JobSet", name, namespace, spec)


def jobset_job(js: Obj, rjob: str, index: int) -> Obj:
    """The Job a JobSet creates for replica `index` of a replicatedJob (constructJob): named
    <jobset>-<rjob>-<index>, the JobSet's labels and annotations on the Job and its pod
    template, the JobSet as controller."""
    entry = next(j for j in js["spec"]["replicatedJobs"] if j["name"] == rjob)
    name = f"{js['metadata']['name']}-{rjob}-{index}"
    marks = {
        "jobset.sigs.k8s.io/jobset-name": js["metadata"]["name"],
        "jobset.sigs.k8s.io/jobset-uid": js["metadata"]["uid"],
        "jobset.sigs.k8s.io/replicatedjob-name": rjob,
        "jobset.sigs.k8s.io/replicatedjob-replicas": str(entry["replicas"]),
        "jobset.sigs.k8s.io/job-index": str(index),
        "jobset.sigs.k8s.io/restart-attempt": "0",
        "jobset.sigs.k8s.io/group-name": "default",
    }
    spec = copy.deepcopy(entry["template"]["spec"])
    spec["template"].setdefault("metadata", {}).setdefault("labels", {}).update(marks)
    spec["template"]["metadata"].setdefault("annotations", {}).update(marks)
    return _object(
        "batch/v1",
        "Job",
        name,
        js["metadata"]["namespace"],
        spec,
        labels=dict(marks),
        annotations=dict(marks),
        ownerReferences=[reference(js)],
    )


# -- Kubeflow Trainer v2 --------------------------------------------------------------


def trainjob(name: str, namespace: str) -> Obj:
    """A TrainJob naming its runtime (the runtime's JobSet template makes the pods)."""
    spec = {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}}
    return _object("trainer.kubeflow.org/v1alpha1", "TrainJob", name, namespace, spec)


def trainjob_jobset(train: Obj, replicated: list[tuple[str, int, int, int]]) -> Obj:
    """The JobSet Trainer creates for a TrainJob: the TrainJob's name, owned by it."""
    js = jobset(train["metadata"]["name"], train["metadata"]["namespace"], replicated)
    js["metadata"]["ownerReferences"] = [reference(train)]
    return js


# -- LeaderWorkerSet --------------------------------------------------------------------

LWS_API = "leaderworkerset.x-k8s.io/v1"
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_SIZE = "leaderworkerset.sigs.k8s.io/size"
LWS_KEY = "leaderworkerset.sigs.k8s.io/group-key"
LWS_REVISION = "leaderworkerset.sigs.k8s.io/template-revision-hash"


def leaderworkerset(
    name: str, namespace: str, *, replicas: int, size: int, policy: str | None = None
) -> Obj:
    """A LeaderWorkerSet of `replicas` groups of `size` pods."""
    spec: Obj = {
        "replicas": replicas,
        "leaderWorkerTemplate": {"size": size, "workerTemplate": template()},
    }
    if policy is not None:
        spec["startupPolicy"] = policy
    return _object(LWS_API, "LeaderWorkerSet", name, namespace, spec)


def lws_leader_statefulset(lws: Obj) -> Obj:
    """The leader StatefulSet (constructLeaderStatefulSetApplyConfiguration): named as the
    LWS, selecting worker-index 0, one replica per group, owned by the LWS."""
    name = lws["metadata"]["name"]
    size = lws["spec"]["leaderWorkerTemplate"]["size"]
    labels = {LWS_WORKER: "0", LWS_NAME: name, LWS_REVISION: "rev1"}
    tpl = template(labels=labels)
    tpl["metadata"]["annotations"] = {LWS_SIZE: str(size)}
    spec = {
        "replicas": lws["spec"]["replicas"],
        "serviceName": name,
        "podManagementPolicy": "Parallel",
        "selector": {"matchLabels": {LWS_NAME: name, LWS_WORKER: "0"}},
        "template": tpl,
    }
    return _object(
        "apps/v1",
        "StatefulSet",
        name,
        lws["metadata"]["namespace"],
        spec,
        labels={LWS_NAME: name, LWS_REVISION: "rev1"},
        ownerReferences=[reference(lws)],
    )


def lws_leader_pod(lws: Obj, leader_sts: Obj, group: int) -> Obj:
    """A leader pod: the StatefulSet's pod <lws>-<group>, with the group index and group key
    LWS's pod webhook adds."""
    tpl = leader_sts["spec"]["template"]
    labels = {
        **tpl["metadata"]["labels"],
        LWS_GROUP: str(group),
        LWS_KEY: f"key{group}",
        "statefulset.kubernetes.io/pod-name": f"{leader_sts['metadata']['name']}-{group}",
        "apps.kubernetes.io/pod-index": str(group),
    }
    return pod(
        f"{leader_sts['metadata']['name']}-{group}",
        lws["metadata"]["namespace"],
        leader_sts,
        labels=labels,
        annotations=dict(tpl["metadata"]["annotations"]),
    )


def lws_worker_statefulset(lws: Obj, leader: Obj) -> Obj:
    """A group's worker StatefulSet (constructWorkerStatefulSetApplyConfiguration): named as
    the leader pod, size - 1 replicas from ordinal 1, owned by the leader pod."""
    size = lws["spec"]["leaderWorkerTemplate"]["size"]
    group = leader["metadata"]["labels"][LWS_GROUP]
    selector = {LWS_GROUP: group, LWS_NAME: lws["metadata"]["name"], LWS_KEY: f"key{group}"}
    tpl = template(labels={**selector, LWS_REVISION: "rev1"})
    tpl["metadata"]["annotations"] = {
        LWS_SIZE: str(size),
        "leaderworkerset.sigs.k8s.io/leader-name": leader["metadata"]["name"],
    }
    spec = {
        "replicas": size - 1,
        "serviceName": lws["metadata"]["name"],
        "podManagementPolicy": "Parallel",
        "ordinals": {"start": 1},
        "selector": {"matchLabels": selector},
        "template": tpl,
    }
    return _object(
        "apps/v1",
        "StatefulSet",
        leader["metadata"]["name"],
        lws["metadata"]["namespace"],
        spec,
        labels=dict(selector),
        ownerReferences=[reference(leader)],
    )


def lws_worker_pod(lws: Obj, worker_sts: Obj, ordinal: int) -> Obj:
    """A worker pod <leader>-<ordinal>, with the worker index LWS's pod webhook adds."""
    tpl = worker_sts["spec"]["template"]
    name = f"{worker_sts['metadata']['name']}-{ordinal}"
    labels = {
        **tpl["metadata"]["labels"],
        LWS_WORKER: str(ordinal),
        "statefulset.kubernetes.io/pod-name": name,
    }
    return pod(
        name,
        lws["metadata"]["namespace"],
        worker_sts,
        labels=labels,
        annotations=dict(tpl["metadata"]["annotations"]),
    )


# -- Kubeflow Training Operator and mpi-operator ----------------------------------------

KUBEFLOW_API = "kubeflow.org/v1"


def pytorchjob(
    name: str,
    namespace: str,
    *,
    masters: int = 1,
    workers: int = 2,
    min_available: int | None = None,
    elastic_min: int | None = None,
) -> Obj:
    """A PyTorchJob of a Master and Workers."""
    specs: Obj = {}
    if masters:
        specs["Master"] = {
            "replicas": masters,
            "restartPolicy": "OnFailure",
            "template": template(),
        }
    specs["Worker"] = {"replicas": workers, "restartPolicy": "OnFailure", "template": template()}
    spec: Obj = {"pytorchReplicaSpecs": specs, "runPolicy": {}}
    if min_available is not None:
        spec["runPolicy"]["schedulingPolicy"] = {"minAvailable": min_available}
    if elastic_min is not None:
        spec["elasticPolicy"] = {"minReplicas": elastic_min, "maxReplicas": workers}
    return _object(KUBEFLOW_API, "PyTorchJob", name, namespace, spec)


def kubeflow_pod(
    job_obj: Obj, replica_type: str, index: int, operator: str = "pytorchjob-controller"
) -> Obj:
    """A replica's pod as the Training Operator creates it: <job>-<type>-<index>, its
    replica labels (job-role master for the master), the job as controller."""
    lower = replica_type.lower()
    name = job_obj["metadata"]["name"]
    labels = {
        "training.kubeflow.org/operator-name": operator,
        "training.kubeflow.org/job-name": name,
        "training.kubeflow.org/replica-type": lower,
        "training.kubeflow.org/replica-index": str(index),
    }
    if lower == "master":
        labels["training.kubeflow.org/job-role"] = "master"
    return pod(
        f"{name}-{lower}-{index}",
        job_obj["metadata"]["namespace"],
        job_obj,
        labels=labels,
        restart="OnFailure",
    )


def mpijob(name: str, namespace: str, *, workers: int, wait_for_workers: bool = False) -> Obj:
    """An MPIJob (mpi-operator, kubeflow.org/v2beta1): one Launcher and Workers."""
    spec: Obj = {
        "slotsPerWorker": 1,
        "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": template()},
            "Worker": {"replicas": workers, "template": template()},
        },
    }
    if wait_for_workers:
        spec["launcherCreationPolicy"] = "WaitForWorkersReady"
    return _object("kubeflow.org/v2beta1", "MPIJob", name, namespace, spec)


def mpi_worker_pod(mpi: Obj, index: int) -> Obj:
    """A worker pod (newWorker): <job>-worker-<index>, owned by the MPIJob."""
    name = mpi["metadata"]["name"]
    labels = {
        "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/job-name": name,
        "training.kubeflow.org/job-role": "worker",
        "training.kubeflow.org/replica-index": str(index),
    }
    return pod(f"{name}-worker-{index}", mpi["metadata"]["namespace"], mpi, labels=labels)


def mpi_launcher_job(mpi: Obj) -> Obj:
    """The launcher Job (newLauncherJob): <job>-launcher, owned by the MPIJob."""
    name = mpi["metadata"]["name"]
    labels = {
        "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/job-name": name,
        "training.kubeflow.org/job-role": "launcher",
    }
    spec = {"template": template(labels=labels, restart="OnFailure")}
    return _object(
        "batch/v1",
        "Job",
        f"{name}-launcher",
        mpi["metadata"]["namespace"],
        spec,
        labels={"app": name},
        ownerReferences=[reference(mpi)],
    )


# -- KubeRay ---------------------------------------------------------------------------------

RAY_API = "ray.io/v1"


def raycluster(name: str, namespace: str, groups: list[Obj]) -> Obj:
    """A RayCluster: a head and worker groups (groupName, replicas, minReplicas...)."""
    workers = [{"rayStartParams": {}, "template": template(), **group} for group in groups]
    spec = {
        "headGroupSpec": {"rayStartParams": {}, "template": template()},
        "workerGroupSpecs": workers,
    }
    return _object(RAY_API, "RayCluster", name, namespace, spec)


def rayjob(name: str, namespace: str) -> Obj:
    """A RayJob (its cluster is created from rayClusterSpec, owned by it)."""
    return _object(RAY_API, "RayJob", name, namespace, {"entrypoint": "python run.py"})


def ray_pod(cluster: Obj, group: str, index: int, *, replica: str | None = None) -> Obj:
    """A head or worker pod as KubeRay creates it (labelPod), the RayCluster as controller."""
    name = cluster["metadata"]["name"]
    head = group == "headgroup"
    labels = {
        "ray.io/is-ray-node": "yes",
        "ray.io/cluster": name,
        "ray.io/node-type": "head" if head else "worker",
        "ray.io/group": group,
        "ray.io/identifier": f"{name}-{'head' if head else 'worker'}",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    if replica is not None:
        labels["ray.io/worker-group-replica-name"] = replica
    pod_name = f"{name}-head" if head else f"{name}-{group}-worker-{index}"
    return pod(pod_name, cluster["metadata"]["namespace"], cluster, labels=labels)


# -- Spark -------------------------------------------------------------------------------------


def sparkapplication(name: str, namespace: str) -> Obj:
    """A SparkApplication (sparkoperator.k8s.io/v1beta2)."""
    spec = {
        "type": "Scala",
        "mode": "cluster",
        "sparkVersion": "3.5.0",
        "executor": {"instances": 2},
    }
    return _object("sparkoperator.k8s.io/v1beta2", "SparkApplication", name, namespace, spec)


def spark_driver(app: Obj, app_id: str) -> Obj:
    """The driver pod: Spark's labels, the operator's, the SparkApplication as controller."""
    name = app["metadata"]["name"]
    labels = {
        "spark-app-selector": app_id,
        "spark-role": "driver",
        "spark-version": "3.5.0",
        "sparkoperator.k8s.io/app-name": name,
        "sparkoperator.k8s.io/launched-by-spark-operator": "true",
    }
    return pod(f"{name}-driver", app["metadata"]["namespace"], app, labels=labels, restart="Never")


def spark_executor(app: Obj, driver: Obj, index: int) -> Obj:
    """An executor: owned by its driver pod (controller, set by Spark) and by the
    SparkApplication (not controller, set by the operator's executor template)."""
    labels = {
        "spark-app-selector": driver["metadata"]["labels"]["spark-app-selector"],
        "spark-role": "executor",
        "spark-exec-id": str(index),
        "sparkoperator.k8s.io/app-name": app["metadata"]["name"],
    }
    return pod(
        f"{app['metadata']['name']}-exec-{index}",
        app["metadata"]["namespace"],
        driver,
        labels=labels,
        restart="Never",
        others=(app,),
    )


def replicaset(name: str, namespace: str, *, annotations: dict[str, str] | None = None) -> Obj:
    """A ReplicaSet whose template its selector matches."""
    labels = {"app": name}
    spec = {"replicas": 1, "selector": {"matchLabels": labels}, "template": template(labels=labels)}
    return _object(
        "apps/v1", "ReplicaSet", name, namespace, spec, annotations=dict(annotations or {})
    )
