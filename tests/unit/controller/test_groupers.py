"""Each workload kind's gang rule, on the objects its operator creates (workloads.py)."""

from __future__ import annotations

import pytest

from scheduler.api.errors import InvalidObject
from scheduler.controller.groupers import GROUPERS, choose
from scheduler.controller.groupers.base import Grouping, Obj, Probe
from scheduler.controller.groupers.default import DefaultGrouper
from scheduler.controller.groupers.jobset import JobSetGrouper
from scheduler.controller.groupers.leaderworkerset import LeaderWorkerSetGrouper
from scheduler.controller.groupers.raycluster import RayClusterGrouper
from scheduler.controller.groupers.spark import SparkGrouper
from tests.unit.controller import workloads as w

NS = "ns"


def grouping(
    owner: Obj, pod: Obj | None = None, key: str = "", present: frozenset[Probe] = frozenset()
) -> Grouping:
    grouper = GROUPERS[(owner["apiVersion"].rpartition("/")[0], owner["kind"])]
    return grouper.grouping(owner, key, pod, present)


# -- JobSet ----------------------------------------------------------------------------------


def test_an_any_order_jobset_is_one_gang_of_replicas_times_parallelism_summed() -> None:
    js = w.with_uid(w.jobset("train", NS, [("driver", 1, 1, 1), ("workers", 2, 4, 4)]))
    found = grouping(js)
    assert found.min_member == 1 + 2 * 4
    assert [(role.name, role.count) for role in found.roles] == [("driver", 1), ("workers", 8)]
    assert "startupPolicyOrder AnyOrder" in found.rule
    assert "workers 2 x min(parallelism 4, completions 4)" in found.rule


def test_a_jobset_counts_completions_when_fewer_than_parallelism() -> None:
    js = w.with_uid(w.jobset("train", NS, [("workers", 3, 4, 2)]))
    assert grouping(js).min_member == 3 * 2


def test_an_in_order_jobset_has_one_group_per_replicated_job_keyed_by_its_pods_label() -> None:
    js = w.with_uid(
        w.jobset("train", NS, [("driver", 1, 1, 1), ("workers", 2, 4, 4)], order="InOrder")
    )
    job = w.with_uid(w.jobset_job(js, "workers", 1))
    pod = w.job_pod(job, 3)
    grouper = JobSetGrouper()
    assert grouper.key_of(js, pod) == "workers"
    assert grouper.keys(js) == ("driver", "workers")
    assert grouping(js, pod, "workers").min_member == 8
    assert grouping(js, pod, "driver").min_member == 1


def test_an_in_order_jobset_pod_without_its_replicated_job_label_is_refused_by_name() -> None:
    js = w.with_uid(w.jobset("train", NS, [("workers", 2, 4, 4)], order="InOrder"))
    bare = w.pod("lost", NS, js)
    with pytest.raises(
        InvalidObject, match=r"metadata.labels\[jobset.sigs.k8s.io/replicatedjob-name\]"
    ):
        JobSetGrouper().key_of(js, bare)


def test_a_jobset_with_a_negative_count_names_the_field() -> None:
    js = w.with_uid(w.jobset("train", NS, [("workers", 2, 4, 4)]))
    js["spec"]["replicatedJobs"][0]["replicas"] = -1
    with pytest.raises(InvalidObject, match=r"spec.replicatedJobs\[0\].replicas=-1"):
        grouping(js)


# -- LeaderWorkerSet ------------------------------------------------------------------------


def lws_objects(policy: str | None = None, size: int = 4) -> tuple[Obj, Obj, Obj]:
    lws = w.with_uid(w.leaderworkerset("serve", NS, replicas=2, size=size, policy=policy))
    leader_sts = w.with_uid(w.lws_leader_statefulset(lws))
    leader = w.with_uid(w.lws_leader_pod(lws, leader_sts, 1))
    return lws, leader_sts, leader


def test_a_leaderworkerset_group_is_its_size_with_leader_and_workers_as_subgroups() -> None:
    lws, _, leader = lws_objects()
    workers_sts = w.with_uid(w.lws_worker_statefulset(lws, leader))
    worker = w.lws_worker_pod(lws, workers_sts, 2)
    grouper = LeaderWorkerSetGrouper()
    assert grouper.key_of(lws, worker) == "1"
    found = grouper.grouping(lws, "1", worker, frozenset())
    assert found.min_member == 4
    subgroups = {sub.name: sub.manifest() for sub in found.sub_groups}
    assert subgroups["leader"] == {
        "name": "leader",
        "subGroupSize": 1,
        "minSubGroups": 1,
        "labelSelector": {
            "matchLabels": {
                "leaderworkerset.sigs.k8s.io/name": "serve",
                "leaderworkerset.sigs.k8s.io/group-index": "1",
                "leaderworkerset.sigs.k8s.io/worker-index": "0",
            }
        },
    }
    assert subgroups["workers"]["subGroupSize"] == 3
    assert subgroups["workers"]["labelSelector"]["matchExpressions"] == [
        {"key": "leaderworkerset.sigs.k8s.io/worker-index", "operator": "NotIn", "values": ["0"]}
    ]


def test_a_leader_ready_leaderworkerset_starts_its_leader_alone_then_the_whole_group() -> None:
    lws, _, leader = lws_objects(policy="LeaderReady")
    grouper = LeaderWorkerSetGrouper()
    assert grouper.grouping(lws, "1", leader, frozenset()).min_member == 1
    workers_sts = w.with_uid(w.lws_worker_statefulset(lws, leader))
    worker = w.lws_worker_pod(lws, workers_sts, 1)
    assert grouper.grouping(lws, "1", worker, frozenset()).min_member == 4
    assert grouper.keys(lws) == (), "the size depends on the pods: not followed from the spec"


def test_a_leaderworkerset_pods_size_annotation_is_its_revisions_size() -> None:
    lws, _, leader = lws_objects(size=4)
    leader["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/size"] = "6"
    found = LeaderWorkerSetGrouper().grouping(lws, "1", leader, frozenset())
    assert found.min_member == 6
    assert "annotation leaderworkerset.sigs.k8s.io/size" in found.rule


# -- Kubeflow ----------------------------------------------------------------------------------


def test_a_pytorchjob_is_the_sum_of_its_replicas() -> None:
    job = w.with_uid(w.pytorchjob("mnist", NS, masters=1, workers=3))
    found = grouping(job)
    assert found.min_member == 4
    assert [role.name for role in found.roles] == ["Master", "Worker"], "the master counts first"


def test_kubeflow_min_available_wins_over_every_other_count() -> None:
    job = w.with_uid(w.pytorchjob("mnist", NS, workers=3, min_available=2, elastic_min=1))
    found = grouping(job)
    assert found.min_member == 2
    assert "schedulingPolicy.minAvailable = 2" in found.rule


def test_an_elastic_pytorchjob_starts_with_its_minimum_workers_and_its_master() -> None:
    job = w.with_uid(w.pytorchjob("mnist", NS, masters=1, workers=8, elastic_min=2))
    found = grouping(job)
    assert found.min_member == 2 + 1
    assert "elasticPolicy.minReplicas 2 workers + Master 1" in found.rule


@pytest.mark.parametrize(
    ("kind", "field"),
    [
        ("TFJob", "tfReplicaSpecs"),
        ("XGBoostJob", "xgbReplicaSpecs"),
        ("JAXJob", "jaxReplicaSpecs"),
        ("PaddleJob", "paddleReplicaSpecs"),
    ],
)
def test_each_kubeflow_kind_sums_its_own_replica_specs(kind: str, field: str) -> None:
    job = w.with_uid(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": kind,
            "metadata": {"name": "j", "namespace": NS},
            "spec": {
                field: {
                    "Chief": {"template": w.template()},
                    "Worker": {"replicas": 3, "template": w.template()},
                }
            },
        }
    )
    assert grouping(job).min_member == 1 + 3, "replicas default to 1"


def test_an_mpijob_waiting_for_its_workers_counts_the_launcher_once_its_job_exists() -> None:
    mpi = w.with_uid(w.mpijob("allreduce", NS, workers=4, wait_for_workers=True))
    grouper = GROUPERS[("kubeflow.org", "MPIJob")]
    (probe,) = grouper.probes(mpi)
    assert (probe.kind, probe.name) == ("Job", "allreduce-launcher")
    before = grouper.grouping(mpi, "", None, frozenset())
    assert before.min_member == 4
    assert [role.name for role in before.roles] == ["Worker"]
    assert grouper.grouping(mpi, "", None, frozenset({probe})).min_member == 5


def test_an_mpijob_launched_at_startup_is_launcher_and_workers() -> None:
    mpi = w.with_uid(w.mpijob("allreduce", NS, workers=4))
    assert GROUPERS[("kubeflow.org", "MPIJob")].probes(mpi) == ()
    assert grouping(mpi).min_member == 5


# -- Ray -----------------------------------------------------------------------------------------


def test_a_raycluster_is_its_head_and_each_groups_minimum_or_replicas_times_hosts() -> None:
    cluster = w.with_uid(
        w.raycluster(
            "demo",
            NS,
            [
                {"groupName": "cpu", "replicas": 3, "minReplicas": 0, "maxReplicas": 10},
                {"groupName": "tpu", "replicas": 4, "minReplicas": 2, "numOfHosts": 4},
                {"groupName": "idle", "replicas": 5, "suspend": True},
            ],
        )
    )
    found = grouping(cluster)
    assert found.min_member == 1 + 3 + 2 * 4
    subgroups = {sub.name: sub.manifest() for sub in found.sub_groups}
    assert set(subgroups) == {"headgroup", "cpu", "tpu"}, "a suspended group has no pods"
    assert subgroups["tpu"] == {
        "name": "tpu",
        "subGroupSize": 4,
        "minSubGroups": 2,
        "labelSelector": {"matchLabels": {"ray.io/cluster": "demo", "ray.io/group": "tpu"}},
        "matchLabelKeys": ["ray.io/worker-group-replica-name"],
    }
    # A single-host group's minimum is one sub-group, whole: its pods carry no replica name.
    assert subgroups["cpu"] == {
        "name": "cpu",
        "subGroupSize": 3,
        "minSubGroups": 1,
        "labelSelector": {"matchLabels": {"ray.io/cluster": "demo", "ray.io/group": "cpu"}},
    }
    assert subgroups["headgroup"]["labelSelector"]["matchLabels"]["ray.io/group"] == "headgroup"


def test_a_rayjobs_cluster_names_the_group_not_the_rayjob() -> None:
    job = w.with_uid(w.rayjob("nightly", NS))
    cluster = w.with_uid(
        w.raycluster("nightly-raycluster", NS, [{"groupName": "cpu", "replicas": 2}])
    )
    cluster["metadata"]["ownerReferences"] = [w.reference(job)]
    head = w.ray_pod(cluster, "headgroup", 0)
    grouper, owner = choose(head, [cluster, job])
    assert isinstance(grouper, RayClusterGrouper)
    assert owner is cluster


# -- Spark, Jobs, the rest -------------------------------------------------------------------------


def test_spark_driver_and_executors_share_the_applications_group_of_one() -> None:
    app = w.with_uid(w.sparkapplication("etl", NS))
    driver = w.with_uid(w.spark_driver(app, "spark-0123"))
    executor = w.spark_executor(app, driver, 1)
    for pod, owners in ((driver, [app]), (executor, [driver, app])):
        grouper, owner = choose(pod, owners)
        assert isinstance(grouper, SparkGrouper) and owner is app
        assert grouper.key_of(owner, pod) == "spark-0123"
        assert grouper.grouping(owner, "spark-0123", pod, frozenset()).min_member == 1


def test_spark_submitted_without_the_operator_is_grouped_under_its_driver() -> None:
    driver = w.with_uid(w.spark_driver(w.with_uid(w.sparkapplication("x", NS)), "spark-9"))
    del driver["metadata"]["ownerReferences"]
    executor = w.spark_executor(w.with_uid(w.sparkapplication("x", NS)), driver, 1)
    grouper, owner = choose(executor, [driver])
    assert isinstance(grouper, SparkGrouper) and owner is driver


@pytest.mark.parametrize(
    ("parallelism", "completions", "indexed", "expected"),
    [
        pytest.param(4, 4, True, 4, id="indexed-parallelism-equals-completions"),
        pytest.param(2, 4, True, 1, id="indexed-a-few-at-a-time"),
        pytest.param(4, 4, False, 1, id="not-indexed"),
        pytest.param(3, None, False, 1, id="work-queue"),
    ],
)
def test_a_job_is_a_gang_only_when_indexed_with_parallelism_equal_to_completions(
    parallelism: int, completions: int | None, indexed: bool, expected: int
) -> None:
    job = w.with_uid(
        w.job("j", NS, parallelism=parallelism, completions=completions, indexed=indexed)
    )
    assert grouping(job).min_member == expected


def test_a_trainjob_is_grouped_through_the_jobset_it_creates() -> None:
    train = w.with_uid(w.trainjob("llm", NS))
    js = w.with_uid(w.trainjob_jobset(train, [("node", 1, 2, 2)]))
    job = w.with_uid(w.jobset_job(js, "node", 0))
    grouper, owner = choose(w.job_pod(job, 0), [job, js, train])
    assert isinstance(grouper, JobSetGrouper) and owner is js


def test_a_replicasets_pods_are_one_group_of_one_under_the_replicaset() -> None:
    rs = w.with_uid(w.replicaset("web", NS))
    deployment = w.with_uid(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NS},
            "spec": {},
        }
    )
    grouper, owner = choose(w.pod("web-1", NS, rs), [rs, deployment])
    assert isinstance(grouper, DefaultGrouper) and owner is rs
    assert grouper.grouping(owner, "", None, frozenset()).min_member == 1
