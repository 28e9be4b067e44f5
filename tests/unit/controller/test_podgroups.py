"""PodGroups for pods that name none: the owners walked, the plan, replays, 403s, following."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.api.errors import InvalidObject
from scheduler.controller.objects import ApiObjects, OwnerForbidden
from scheduler.controller.plan import MIN_MEMBER_ANNOTATION, podgroup_name
from scheduler.controller.podgroups import OWNER_FORBIDDEN, ensure_podgroup
from scheduler.kube.errors import StatusError
from tests.unit.controller import workloads as w
from tests.unit.controller.fakes import FakeObjects, census_of, stored

NAMES = frozenset({"muster"})
NS = "ns"
RULE = "muster.dev/grouping-rule"
Obj = dict[str, Any]


def group(objects: FakeObjects, pod: Obj, **kwargs: Any) -> str | None:
    return asyncio.run(ensure_podgroup(objects, pod, NAMES, **kwargs))


def jobset_world(order: str | None = None) -> tuple[FakeObjects, Obj, list[Obj]]:
    """A JobSet of a driver and 2 x 2 workers, its Jobs and all its pods."""
    js = w.with_uid(w.jobset("train", NS, [("driver", 1, 1, 1), ("workers", 2, 2, 2)], order=order))
    objects = FakeObjects(js)
    pods = []
    for rjob, replicas, count in (("driver", 1, 1), ("workers", 2, 2)):
        for index in range(replicas):
            job = objects.add(w.with_uid(w.jobset_job(js, rjob, index)))
            pods += [w.job_pod(job, i) for i in range(count)]
    return objects, js, pods


def test_a_jobsets_pods_all_join_one_podgroup_named_after_the_jobset() -> None:
    objects, js, pods = jobset_world()
    name = podgroup_name(js["metadata"]["uid"], "")
    for pod in pods:
        assert group(objects, pod) == name
    assert list(objects.podgroups) == [name]
    made = objects.podgroups[name]
    assert made["spec"]["minMember"] == 5
    assert made["spec"]["minResources"] == {"cpu": "5", "memory": "640Mi"}
    assert made["metadata"]["ownerReferences"] == [
        {
            "apiVersion": w.JOBSET_API,
            "kind": "JobSet",
            "name": "train",
            "uid": js["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert "JobSet ns/train (startupPolicyOrder AnyOrder)" in made["metadata"]["annotations"][RULE]
    assert set(objects.annotations) == {p["metadata"]["name"] for p in pods}


def test_an_in_order_jobsets_replicated_jobs_get_podgroups_of_their_own() -> None:
    objects, js, pods = jobset_world(order="InOrder")
    for pod in pods:
        group(objects, pod)
    uid = js["metadata"]["uid"]
    assert {name: g["spec"]["minMember"] for name, g in objects.podgroups.items()} == {
        podgroup_name(uid, "driver"): 1,
        podgroup_name(uid, "workers"): 4,
    }


def test_a_leaderworkerset_worker_is_grouped_through_its_leader_pod_up_to_the_lws() -> None:
    lws = w.with_uid(w.leaderworkerset("serve", NS, replicas=2, size=3))
    leader_sts = w.with_uid(w.lws_leader_statefulset(lws))
    objects = FakeObjects(lws, leader_sts)
    leader = objects.add(w.with_uid(w.lws_leader_pod(lws, leader_sts, 0)))
    workers = objects.add(w.with_uid(w.lws_worker_statefulset(lws, leader)))
    name = group(objects, w.lws_worker_pod(lws, workers, 1))
    assert name == podgroup_name(lws["metadata"]["uid"], "0")
    assert group(objects, leader) == name
    made = objects.podgroups[name]
    assert made["spec"]["minMember"] == 3
    assert [sub["name"] for sub in made["spec"]["subGroupPolicy"]] == ["leader", "workers"]


def test_replays_make_one_podgroup_per_owner_and_annotate_every_pod() -> None:
    rs = w.with_uid(w.replicaset("web", NS, annotations={MIN_MEMBER_ANNOTATION: "3"}))
    objects = FakeObjects(rs)
    created: list[str] = []
    name = podgroup_name(rs["metadata"]["uid"], "")
    for pod_name in ("a", "b", "c", "a", "b"):  # a restart replays every event
        assert group(objects, w.pod(pod_name, NS, rs), on_created=created.append) == name
    assert list(objects.podgroups) == [name]
    assert created == [name], "counted once, when it was made"
    assert objects.podgroups[name]["spec"]["minMember"] == 3
    assert objects.annotations == {
        pod_name: {"scheduling.k8s.io/group-name": name} for pod_name in ("a", "b", "c")
    }


def test_a_census_that_knows_the_podgroup_spares_the_create() -> None:
    objects, _, pods = jobset_world()
    census = census_of()
    group(objects, pods[0], census=census)
    stored(census, objects)
    for pod in pods[1:]:
        group(objects, pod, census=census)
    assert objects.creates == 1


def test_pods_that_are_not_ours_bound_grouped_or_finished_are_left_alone() -> None:
    objects = FakeObjects()
    theirs = w.pod("theirs", NS, None)
    theirs["spec"]["schedulerName"] = "default-scheduler"
    grouped = w.pod("grouped", NS, None, annotations={"scheduling.k8s.io/group-name": "mine"})
    bound = w.pod("bound", NS, None)
    bound["spec"]["nodeName"] = "n1"
    finished = w.pod("finished", NS, None)
    finished["status"] = {"phase": "Succeeded"}
    for candidate in (theirs, grouped, bound, finished):
        assert group(objects, candidate) is None
    assert objects.creates == 0 and objects.annotations == {}


# -- the plan: names, overrides, queue, requests ----------------------------------------------


def test_a_bare_pod_gets_a_group_of_its_own_owned_by_itself() -> None:
    objects = FakeObjects()
    bare = w.with_uid(w.pod("solo", NS, None))
    name = group(objects, bare)
    assert name == f"podgroup-{bare['metadata']['uid']}"
    reference = objects.podgroups[name]["metadata"]["ownerReferences"][0]
    assert (reference["kind"], reference["name"]) == ("Pod", "solo")


@pytest.mark.parametrize(
    ("on_pod", "on_top", "expected", "source"),
    [
        pytest.param(None, None, 5, "rule", id="the-rule"),
        pytest.param(None, "2", 2, "owner", id="the-top-owner"),
        pytest.param("3", "2", 3, "pod", id="the-pod-first"),
    ],
)
def test_group_min_member_on_the_pod_or_the_top_owner_overrides_the_rule(
    on_pod: str | None, on_top: str | None, expected: int, source: str
) -> None:
    objects, js, pods = jobset_world()
    if on_top is not None:
        js["metadata"]["annotations"] = {MIN_MEMBER_ANNOTATION: on_top}
    pod = pods[0]
    if on_pod is not None:
        pod["metadata"]["annotations"][MIN_MEMBER_ANNOTATION] = on_pod
    made = objects.podgroups[group(objects, pod) or ""]
    assert made["spec"]["minMember"] == expected
    assert made["metadata"]["annotations"]["muster.dev/min-member-from"] == source
    if source != "rule":
        assert (
            f"overridden by {MIN_MEMBER_ANNOTATION}={expected}"
            in made["metadata"]["annotations"][RULE]
        )


@pytest.mark.parametrize("value", ["four", "0", "-2"])
def test_an_unusable_min_member_annotation_names_the_object_and_the_field(value: str) -> None:
    rs = w.with_uid(w.replicaset("web", NS, annotations={MIN_MEMBER_ANNOTATION: value}))
    with pytest.raises(InvalidObject) as caught:
        group(FakeObjects(rs), w.pod("p", NS, rs))
    assert "ReplicaSet ns/web" in str(caught.value)
    assert "group-min-member" in str(caught.value)


def test_the_queue_comes_from_the_pod_then_the_top_owner_then_the_namespace() -> None:
    objects, _, pods = jobset_world()
    objects.ns_queue = "ns-queue"
    assert objects.podgroups[group(objects, pods[0]) or ""]["spec"]["queue"] == "ns-queue"
    objects, js, pods = jobset_world()
    js["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "team"}
    assert objects.podgroups[group(objects, pods[0]) or ""]["spec"]["queue"] == "team"
    objects, js, pods = jobset_world()
    pods[0]["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] = "mine"
    assert objects.podgroups[group(objects, pods[0]) or ""]["spec"]["queue"] == "mine"


def test_the_priority_class_is_the_pods() -> None:
    objects, _, pods = jobset_world()
    pods[0]["spec"]["priorityClassName"] = "high"
    assert objects.podgroups[group(objects, pods[0]) or ""]["spec"]["priorityClassName"] == "high"


def test_min_resources_sum_each_roles_template_with_limits_as_requests() -> None:
    job = w.with_uid(w.pytorchjob("mnist", NS, masters=1, workers=2))
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["resources"] = {"limits": {"cpu": "2", "nvidia.com/gpu": "1"}}
    objects = FakeObjects(job)
    made = objects.podgroups[group(objects, w.kubeflow_pod(job, "Worker", 0)) or ""]
    assert made["spec"]["minResources"] == {"cpu": "5", "memory": "128Mi", "nvidia.com/gpu": "2"}


def test_min_resources_count_a_templates_pod_level_requests_and_limits_as_its_pods_do() -> None:
    job = w.with_uid(w.pytorchjob("mnist", NS, masters=1, workers=2))
    specs = job["spec"]["pytorchReplicaSpecs"]
    # the master's pods ask cpu 3 at pod level; the workers' name only a pod-level limit,
    # which becomes their pods' request (their container names no cpu)
    specs["Master"]["template"]["spec"]["resources"] = {"requests": {"cpu": "3"}}
    worker = specs["Worker"]["template"]["spec"]
    worker["containers"][0]["resources"] = {"requests": {"memory": "128Mi"}}
    worker["resources"] = {"limits": {"cpu": "2", "memory": "1Gi"}}
    objects = FakeObjects(job)
    made = objects.podgroups[group(objects, w.kubeflow_pod(job, "Worker", 0)) or ""]
    assert made["spec"]["minResources"] == {"cpu": "7", "memory": "384Mi"}


def test_names_are_a_pure_function_of_owner_uid_and_key() -> None:
    assert podgroup_name("u-1", "") == "podgroup-u-1"
    assert podgroup_name("u-1", "workers") == "podgroup-u-1-workers"
    odd = podgroup_name("u-1", "Spark_App.7")
    assert odd == podgroup_name("u-1", "Spark_App.7") and odd.startswith(
        "podgroup-u-1-spark-app-7-"
    )
    assert len(podgroup_name("u-1", "x" * 400)) <= 253


# -- an owner the controller may not read -----------------------------------------------------


class ForbiddingClient:
    """A KubeClient whose API server serves apps/v1 but answers 403 on any object."""

    async def get_json(self, path: str) -> Any:
        if path == "/apis/apps/v1":
            return {
                "resources": [{"name": "replicasets", "kind": "ReplicaSet", "namespaced": True}]
            }
        raise StatusError(403, "Forbidden", "replicasets.apps is forbidden", "GET", path)


def test_an_owner_kind_rbac_does_not_grant_is_reported_with_the_rule_to_add() -> None:
    objects = ApiObjects(ForbiddingClient())  # type: ignore[arg-type]
    rs = w.with_uid(w.replicaset("web", NS))
    with pytest.raises(OwnerForbidden) as caught:
        asyncio.run(objects.owner(NS, w.reference(rs)))
    message = str(caught.value)
    assert "ReplicaSet ns/web" in message
    assert "ClusterRole muster-controller" in message
    assert '{apiGroups: ["apps"], resources: [replicasets], verbs: [get]}' in message
    assert "deploy/base/controller/rbac.yaml" in message


def test_a_forbidden_owner_still_gets_a_podgroup_of_one_and_one_warning_naming_the_rule() -> None:
    cluster = w.with_uid(w.raycluster("demo", NS, [{"groupName": "cpu", "replicas": 3}]))
    objects = FakeObjects(cluster, forbidden=("RayCluster",))
    name = podgroup_name(cluster["metadata"]["uid"], "")
    for index in range(2):
        assert group(objects, w.ray_pod(cluster, "cpu", index)) == name
    made = objects.podgroups[name]
    assert made["spec"]["minMember"] == 1
    assert made["metadata"]["ownerReferences"][0]["uid"] == cluster["metadata"]["uid"]
    assert len(objects.annotations) == 2
    (_, reason, message), *more = objects.events
    assert not more, "one warning per PodGroup, not one per pod"
    assert reason == OWNER_FORBIDDEN
    assert '{apiGroups: ["ray.io"], resources: [rayclusters], verbs: [get]}' in message
    assert name in message


def test_an_owner_forbidden_above_readable_ones_leaves_their_rule_in_force() -> None:
    train = w.with_uid(w.trainjob("llm", NS))
    js = w.with_uid(w.trainjob_jobset(train, [("node", 1, 3, 3)]))
    objects = FakeObjects(train, js, forbidden=("TrainJob",))
    job = objects.add(w.with_uid(w.jobset_job(js, "node", 0)))
    name = group(objects, w.job_pod(job, 0))
    assert name == podgroup_name(js["metadata"]["uid"], "")
    assert objects.podgroups[name]["spec"]["minMember"] == 3
    assert [reason for _, reason, _ in objects.events] == [OWNER_FORBIDDEN]


# -- following the owner -------------------------------------------------------------------------


def test_a_new_pod_of_a_scaled_owner_brings_its_podgroup_in_step() -> None:
    cluster = w.with_uid(w.raycluster("demo", NS, [{"groupName": "cpu", "replicas": 2}]))
    objects = FakeObjects(cluster)
    census = census_of()
    name = group(objects, w.ray_pod(cluster, "headgroup", 0), census=census) or ""
    stored(census, objects)
    assert objects.podgroups[name]["spec"]["minMember"] == 3
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = 4  # Ray's autoscaler scales up
    group(objects, w.ray_pod(cluster, "cpu", 3), census=census)
    assert objects.podgroups[name]["spec"]["minMember"] == 5
    assert objects.podgroups[name]["spec"]["minResources"]["cpu"] == "5"
    assert "replicas 4" in objects.podgroups[name]["metadata"]["annotations"][RULE]


def test_a_podgroup_the_controller_did_not_make_is_never_patched() -> None:
    cluster = w.with_uid(w.raycluster("demo", NS, [{"groupName": "cpu", "replicas": 2}]))
    name = podgroup_name(cluster["metadata"]["uid"], "")
    theirs = {"metadata": {"name": name, "namespace": NS}, "spec": {"minMember": 9}}
    objects = FakeObjects(cluster)
    objects.podgroups[name] = theirs
    group(objects, w.ray_pod(cluster, "cpu", 0), census=census_of(theirs))
    assert objects.patches == []
    assert objects.podgroups[name]["spec"]["minMember"] == 9


# A value for each pod field muster reads only for its presence (a Raw field of the wire
# types), as a workload would write it, and one for a field no Kubernetes version has yet.
_UNTYPED_FIELDS: dict[str, Any] = {
    "ephemeral volume": {
        "volumes": [
            {
                "name": "scratch",
                "ephemeral": {
                    "volumeClaimTemplate": {
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}},
                        }
                    }
                },
            }
        ]
    },
    "evictionResponders": {"evictionResponders": [{"name": "checkpointer"}]},
    "securityContext": {"securityContext": {"runAsNonRoot": True}},
    "dnsConfig": {"dnsConfig": {"nameservers": ["10.0.0.10"]}},
    "os": {"os": {"name": "linux"}},
    "a field no version has": {"fieldFromTheFuture": {"some": ["value"]}},
}


@pytest.mark.parametrize("fields", list(_UNTYPED_FIELDS.values()), ids=list(_UNTYPED_FIELDS))
def test_a_pod_with_a_field_muster_does_not_type_still_gets_its_podgroup(fields: Obj) -> None:
    rs = w.with_uid(w.replicaset("web", NS, annotations={MIN_MEMBER_ANNOTATION: "2"}))
    objects = FakeObjects(rs)
    name = podgroup_name(rs["metadata"]["uid"], "")
    for pod_name in ("a", "b"):
        pod = w.pod(pod_name, NS, rs)
        pod["spec"].update(fields)
        assert group(objects, pod) == name
    assert objects.podgroups[name]["spec"]["minMember"] == 2
    assert set(objects.annotations) == {"a", "b"}
