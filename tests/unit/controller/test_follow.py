"""PodGroups follow their owner's spec; the census says which queues' PodGroups remain."""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.controller.follow import OwnerFollower, follow_patch
from scheduler.controller.groupers import GROUPERS
from scheduler.controller.plan import MIN_MEMBER_ANNOTATION, desired_for_owner
from scheduler.controller.podgroups import ensure_podgroup
from scheduler.controller.queue_states import QueueStates
from scheduler.controller.queues import QueueView
from tests.unit.controller import workloads as w
from tests.unit.controller.fakes import FakeObjects, census_of, seen, stored

NS = "ns"
Obj = dict[str, Any]


def made_for(objects: FakeObjects, owner: Obj, pod: Obj) -> tuple[str, Any]:
    """Group the pod, then a census that has seen the PodGroups made."""
    census = census_of()
    name = asyncio.run(ensure_podgroup(objects, pod, frozenset({"muster"}), census=census)) or ""
    stored(census, objects)
    return name, census


def follow(objects: FakeObjects, census: Any, owner: Obj) -> None:
    follower = OwnerFollower(None, objects, census)  # type: ignore[arg-type]
    grouper = GROUPERS[(owner["apiVersion"].rpartition("/")[0], owner["kind"])]
    asyncio.run(follower.follow(grouper, owner))


def test_a_jobset_scaled_up_moves_its_podgroups_min_member_and_resources() -> None:
    js = w.with_uid(w.jobset("train", NS, [("workers", 2, 2, 2)]))
    objects = FakeObjects(js)
    job = objects.add(w.with_uid(w.jobset_job(js, "workers", 0)))
    name, census = made_for(objects, js, w.job_pod(job, 0))
    assert objects.podgroups[name]["spec"]["minMember"] == 4
    js["spec"]["replicatedJobs"][0]["replicas"] = 3
    follow(objects, census, js)
    made = objects.podgroups[name]
    assert made["spec"]["minMember"] == 6
    assert made["spec"]["minResources"] == {"cpu": "6", "memory": "768Mi"}
    assert (
        "workers 3 x min(parallelism 2, completions 2)"
        in made["metadata"]["annotations"]["muster.dev/grouping-rule"]
    )


def test_an_unchanged_owner_replayed_writes_nothing() -> None:
    cluster = w.with_uid(w.raycluster("demo", NS, [{"groupName": "cpu", "replicas": 2}]))
    objects = FakeObjects(cluster)
    _, census = made_for(objects, cluster, w.ray_pod(cluster, "headgroup", 0))
    for _ in range(3):
        follow(objects, census, cluster)
    assert objects.patches == []


def test_ray_scaling_a_worker_group_down_moves_min_member_and_subgroups() -> None:
    cluster = w.with_uid(w.raycluster("demo", NS, [{"groupName": "cpu", "replicas": 4}]))
    objects = FakeObjects(cluster)
    name, census = made_for(objects, cluster, w.ray_pod(cluster, "headgroup", 0))
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = 1
    follow(objects, census, cluster)
    spec = objects.podgroups[name]["spec"]
    assert spec["minMember"] == 2
    assert [sub["subGroupSize"] for sub in spec["subGroupPolicy"]] == [1, 1]


def test_a_min_member_an_annotation_set_stays_when_the_owner_scales() -> None:
    cluster = w.with_uid(w.raycluster("demo", NS, [{"groupName": "cpu", "replicas": 4}]))
    cluster["metadata"]["annotations"] = {MIN_MEMBER_ANNOTATION: "2"}
    objects = FakeObjects(cluster)
    name, census = made_for(objects, cluster, w.ray_pod(cluster, "headgroup", 0))
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = 8
    follow(objects, census, cluster)
    assert objects.patches == []
    assert objects.podgroups[name]["spec"]["minMember"] == 2


def test_an_mpijob_counts_its_launcher_once_the_launcher_job_exists() -> None:
    mpi = w.with_uid(w.mpijob("allreduce", NS, workers=2, wait_for_workers=True))
    objects = FakeObjects(mpi)
    name, census = made_for(objects, mpi, w.mpi_worker_pod(mpi, 0))
    assert objects.podgroups[name]["spec"]["minMember"] == 2
    objects.add(w.with_uid(w.mpi_launcher_job(mpi)))
    follow(objects, census, mpi)
    assert objects.podgroups[name]["spec"]["minMember"] == 3


def test_follow_patch_drops_a_resource_the_owner_no_longer_asks_for() -> None:
    cluster = w.with_uid(w.raycluster("demo", NS, [{"groupName": "gpu", "replicas": 1}]))
    worker = cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    worker["resources"]["requests"]["nvidia.com/gpu"] = "1"
    objects = FakeObjects(cluster)
    name, census = made_for(objects, cluster, w.ray_pod(cluster, "headgroup", 0))
    del worker["resources"]["requests"]["nvidia.com/gpu"]
    follow(objects, census, cluster)
    ((_, patch),) = objects.patches
    assert patch["spec"]["minResources"]["nvidia.com/gpu"] is None
    assert "nvidia.com/gpu" not in objects.podgroups[name]["spec"]["minResources"]


def test_follow_patch_is_none_when_in_step() -> None:
    cluster = w.with_uid(w.raycluster("demo", NS, [{"groupName": "cpu", "replicas": 2}]))
    objects = FakeObjects(cluster)
    name, census = made_for(objects, cluster, w.ray_pod(cluster, "headgroup", 0))
    desired = desired_for_owner(GROUPERS[("ray.io", "RayCluster")], cluster, "", frozenset())
    current = census.managed(NS, name)
    assert current is not None
    assert follow_patch(desired, current) is None


# -- the census and queue state -------------------------------------------------------------------


def podgroup(name: str, queue: str, phase: str) -> Obj:
    return {
        "metadata": {"name": name, "namespace": NS},
        "spec": {"queue": queue},
        "status": {"phase": phase},
    }


class QueueWrites(FakeObjects):
    def __init__(self) -> None:
        super().__init__()
        self.states: list[tuple[str, str]] = []

    async def set_queue_state(self, name: str, state: str) -> None:
        self.states.append((name, state))


def test_a_closing_queue_closes_when_the_census_sees_its_last_admitted_podgroup_go() -> None:
    census = census_of(podgroup("a", "team", "Running"), podgroup("b", "team", "Pending"))
    objects = QueueWrites()
    states = QueueStates(objects, census)
    census.on_queue_change = states.podgroup_changed

    async def scenario() -> None:
        await states.queue_changed(QueueView("team", "Open", "Closed", ""))
        assert objects.states == [("team", "Closing")]
        worker = asyncio.create_task(states.run())
        seen(census, podgroup("a", "team", "Completed"))
        for _ in range(10):
            await asyncio.sleep(0)
        worker.cancel()

    asyncio.run(scenario())
    assert objects.states == [("team", "Closing"), ("team", "Closed")]


def test_a_queue_asked_to_close_waits_for_the_census_to_be_complete() -> None:
    census = census_of(podgroup("a", "team", "Running"))
    census.reflectors[0].synced.clear()
    objects = QueueWrites()
    asyncio.run(QueueStates(objects, census).queue_changed(QueueView("team", "Open", "Closed", "")))
    assert objects.states == [], "admitted PodGroups not all seen yet"


def test_the_census_knows_the_podgroups_of_each_queue_and_forgets_deleted_ones() -> None:
    census = census_of(podgroup("a", "team", "Running"), podgroup("b", "", "Pending"))
    assert [view.name for view in census.in_queue("team")] == ["a"]
    assert [view.name for view in census.in_queue("default")] == ["b"], "no queue: the default"
    census.reflectors[0].kind.delete(f"{NS}/a")
    assert census.in_queue("team") == []
