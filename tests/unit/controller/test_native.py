"""Pods that join a native PodGroup (spec.schedulingGroup): the controller makes no Volcano
PodGroup for them, and gives their PodGroup the top owner's queue when nothing nearer names
one."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from scheduler.controller.metrics import ControllerMetrics
from scheduler.controller.native import (
    needs_native_queue,
    needs_work,
    queue_native_podgroup,
    tend_pod,
)
from scheduler.controller.plan import podgroup_name
from scheduler.controller.podgroups import PodHead, ensure_podgroup, needs_podgroup
from tests.unit.controller import workloads as w
from tests.unit.controller.fakes import FakeObjects

NAMES = frozenset({"muster"})
NS = "ns"
QUEUE = "scheduling.volcano.sh/queue-name"
Obj = dict[str, Any]


def head(pod: Obj) -> PodHead:
    return msgspec.convert(pod, PodHead)


def indexed_job(queue: str = "") -> tuple[FakeObjects, Obj, list[Obj]]:
    """An Indexed Job of 2 (its annotation naming `queue`), the native Workload and PodGroup
    the Job controller makes for it, and its pods naming that PodGroup."""
    annotations = {QUEUE: queue} if queue else {}
    job = w.with_uid(
        w.job("train", NS, parallelism=2, completions=2, indexed=True, annotations=annotations)
    )
    workload = {"kind": "Workload", "metadata": {"name": "train-wl", "namespace": NS}}
    group = {
        "kind": "NativePodGroup",
        "metadata": {"name": "train-pg", "namespace": NS},
        "spec": {
            "podGroupTemplateRef": {
                "workload": {"workloadName": "train-wl", "podGroupTemplateName": "t"}
            },
            "schedulingPolicy": {"gang": {"minCount": 2}},
        },
    }
    objects = FakeObjects(job, workload, group)
    pods = []
    for index in range(2):
        pod = w.job_pod(job, index)
        pod["spec"]["schedulerName"] = "muster"
        pod["spec"]["schedulingGroup"] = {"podGroupName": "train-pg"}
        pods.append(pod)
    return objects, group, pods


def queue_of(pod: Obj, objects: FakeObjects) -> str | None:
    return asyncio.run(queue_native_podgroup(objects, pod, head(pod)))


def test_a_pod_naming_a_native_podgroup_gets_no_volcano_podgroup() -> None:
    _, _, pods = indexed_job()
    assert not needs_podgroup(head(pods[0]), NAMES)
    assert needs_native_queue(head(pods[0]), NAMES) and needs_work(head(pods[0]), NAMES)


def test_a_pod_naming_both_groups_is_the_volcano_ones_and_needs_nothing() -> None:
    _, _, pods = indexed_job()
    pods[0]["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "volcano"}
    assert not needs_work(head(pods[0]), NAMES)


def test_the_top_owners_queue_is_written_on_a_native_podgroup_that_names_none() -> None:
    objects, group, pods = indexed_job(queue="team-a")

    assert queue_of(pods[0], objects) == "team-a"
    assert objects.native_patches == [("train-pg", {QUEUE: "team-a"})]
    assert group["metadata"]["annotations"] == {QUEUE: "team-a"}
    # The next pod of the gang finds it named: nothing is written twice.
    assert queue_of(pods[1], objects) is None
    assert len(objects.native_patches) == 1


def test_a_native_podgroup_or_workload_naming_a_queue_is_left_as_it_is() -> None:
    objects, group, pods = indexed_job(queue="team-a")
    group["metadata"]["labels"] = {QUEUE: "team-b"}
    assert queue_of(pods[0], objects) is None

    objects, _, pods = indexed_job(queue="team-a")
    objects.stored[("Workload", NS, "train-wl")]["metadata"]["annotations"] = {QUEUE: "team-c"}
    assert queue_of(pods[0], objects) is None
    assert objects.native_patches == []


def test_nothing_is_written_when_no_owner_names_a_queue_or_the_group_is_not_made_yet() -> None:
    objects, _, pods = indexed_job()
    assert queue_of(pods[0], objects) is None
    pods[0]["spec"]["schedulingGroup"] = {"podGroupName": "not-made-yet"}
    objects, _, _ = indexed_job(queue="team-a")
    assert queue_of(pods[0], objects) is None
    assert objects.native_patches == []


def test_a_pod_that_names_its_queue_needs_nothing_of_its_podgroup() -> None:
    _, _, pods = indexed_job(queue="team-a")
    pods[0]["metadata"]["annotations"][QUEUE] = "team-z"
    assert not needs_native_queue(head(pods[0]), NAMES)


def test_the_loop_gives_a_native_pod_its_queue_and_makes_no_podgroup() -> None:
    objects, _, pods = indexed_job(queue="team-a")

    asyncio.run(tend_pod(objects, pods[0], NAMES, None, ControllerMetrics()))

    assert objects.podgroups == {} and objects.annotations == {}
    assert objects.native_patches == [("train-pg", {QUEUE: "team-a"})]


def jobset_with_native_workers() -> tuple[FakeObjects, list[Obj], Obj]:
    """A JobSet of a driver Job (parallelism 1) and a workers Job (2 ranks) whose pods
    Kubernetes' Job controller gangs itself (a native PodGroup controlled by that Job)."""
    js = w.with_uid(w.jobset("train", NS, [("driver", 1, 1, 1), ("workers", 1, 2, 2)]))
    objects = FakeObjects(js)
    driver = objects.add(w.with_uid(w.jobset_job(js, "driver", 0)))
    workers = objects.add(w.with_uid(w.jobset_job(js, "workers", 0)))
    objects.add(
        {
            "kind": "NativePodGroup",
            "metadata": {
                "name": "train-workers-0-pg",
                "namespace": NS,
                "ownerReferences": [w.reference(workers)],
            },
        }
    )
    return objects, [w.job_pod(driver, 0)], js


def test_a_workload_whose_jobs_kubernetes_gangs_has_its_other_pods_grouped_by_their_job() -> None:
    objects, (driver_pod,), js = jobset_with_native_workers()

    name = asyncio.run(ensure_podgroup(objects, driver_pod, NAMES))

    driver_job = objects.stored[("Job", NS, "train-driver-0")]
    assert name == podgroup_name(driver_job["metadata"]["uid"], "")
    assert objects.podgroups[name]["spec"]["minMember"] == 1
    assert name != podgroup_name(js["metadata"]["uid"], "")


def test_without_native_podgroups_the_workload_is_one_gang_as_before() -> None:
    objects, (driver_pod,), js = jobset_with_native_workers()
    del objects.stored[("NativePodGroup", NS, "train-workers-0-pg")]

    name = asyncio.run(ensure_podgroup(objects, driver_pod, NAMES))

    assert name == podgroup_name(js["metadata"]["uid"], "")
    assert objects.podgroups[name]["spec"]["minMember"] == 3
