"""PodGroups, Queues and the snapshot built from whole objects."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.job import JobInfo
from scheduler.api.pod_topology import PodTopologySpec
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.queue import QueueInfo, QueueState
from scheduler.api.resources import UNLIMITED, Resource
from scheduler.api.snapshot import build_snapshot
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.build import core
from tests.unit.builders import gang, node, snapshot, task

GIB = 2**30


def podgroup(name: str = "pg", namespace: str = "team", **spec: Any) -> wire.PodGroup:
    status = spec.pop("status", {})
    document = {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": spec,
        "status": status,
    }
    return wire.from_dict(document, wire.PodGroup)


def queue_object(name: str = "q", state: str = "", **spec: Any) -> wire.Queue:
    document = {"metadata": {"name": name}, "spec": spec, "status": {"state": state}}
    return wire.from_dict(document, wire.Queue)


def pod_object(
    name: str,
    *,
    group: str = "",
    scheduler: str = "muster",
    node_name: str = "",
    phase: str = "Pending",
    cpu: str = "1",
    annotations: dict[str, str] | None = None,
) -> wire.Pod:
    notes = dict(annotations or {})
    if group:
        notes["scheduling.k8s.io/group-name"] = group
    document = {
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}", "annotations": notes},
        "spec": {
            "schedulerName": scheduler,
            "nodeName": node_name,
            "containers": [{"resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": phase},
    }
    return wire.from_dict(document, wire.Pod)


def node_object(name: str, cpu: str = "4") -> wire.Node:
    document = {
        "metadata": {"name": name},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "16Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    return wire.from_dict(document, wire.Node)


# JobInfo.from_podgroup


def test_podgroup_spec_and_status_are_read() -> None:
    job = JobInfo.from_podgroup(
        podgroup(
            minMember=3,
            minTaskMember={"head": 1, "worker": 2},
            queue="research",
            minResources={"cpu": "3", "memory": "6Gi"},
            status={"phase": "Running", "running": 3, "succeeded": 1, "failed": 2},
        ),
        priority=50,
    )
    assert job.key == "team/pg"
    assert job.min_member == 3
    assert job.min_task_member == {"head": 1, "worker": 2}
    assert job.queue == "research"
    assert job.min_resources == Resource(3000, 6 * GIB)
    assert job.priority == 50
    assert job.phase is PodGroupPhase.RUNNING
    assert (job.running, job.succeeded, job.failed) == (3, 1, 2)


def test_podgroup_without_queue_goes_to_the_default_queue() -> None:
    assert JobInfo.from_podgroup(podgroup(minMember=1)).queue == "default"


def test_podgroup_without_a_status_phase_is_pending() -> None:
    assert JobInfo.from_podgroup(podgroup(minMember=1)).phase is PodGroupPhase.PENDING


def test_podgroup_without_min_resources_has_none() -> None:
    assert JobInfo.from_podgroup(podgroup(minMember=1)).min_resources is None


def test_negative_min_member_is_an_invalid_object_naming_the_field() -> None:
    with pytest.raises(InvalidObject) as raised:
        JobInfo.from_podgroup(podgroup(minMember=-1))
    assert (raised.value.kind, raised.value.name, raised.value.field, raised.value.value) == (
        "PodGroup",
        "team/pg",
        "spec.minMember",
        -1,
    )


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param({"minMember": 2**31}, "spec.minMember", id="min-member"),
        pytest.param(
            {"minMember": 1, "minTaskMember": {"worker": 2**40}},
            "spec.minTaskMember.worker",
            id="min-task-member",
        ),
    ],
)
def test_a_count_past_int32_is_an_invalid_object_naming_the_field(
    spec: dict[str, Any], field: str
) -> None:
    # Servers before kube 1.36 store such values in a CRD's int32 field.
    with pytest.raises(InvalidObject, match="must be at most 2147483647") as raised:
        JobInfo.from_podgroup(podgroup(**spec))
    assert raised.value.field == field


def test_int32_max_min_member_is_a_valid_gang() -> None:
    assert JobInfo.from_podgroup(podgroup(minMember=2**31 - 1)).min_member == 2**31 - 1


def test_negative_min_task_member_is_an_invalid_object_naming_the_role() -> None:
    with pytest.raises(InvalidObject, match=r"spec\.minTaskMember\.worker"):
        JobInfo.from_podgroup(podgroup(minMember=1, minTaskMember={"worker": -2}))


def test_malformed_min_resources_is_an_invalid_object_naming_the_field() -> None:
    with pytest.raises(InvalidObject) as raised:
        JobInfo.from_podgroup(podgroup(minMember=1, minResources={"cpu": "lots"}))
    assert raised.value.field == "spec.minResources.cpu"
    assert raised.value.value == "lots"


def test_job_indexes_members_by_status_and_totals_what_is_allocated() -> None:
    job = gang("g", 3, cpu=1)
    first, second, _ = job.tasks.values()
    job.set_task_status(first, TaskStatus.ALLOCATED)
    job.set_task_status(second, TaskStatus.SUCCEEDED)
    assert job.ready_count() == 2
    assert job.count(TaskStatus.PENDING) == 1
    assert job.allocated.cpu == 1000
    job.set_task_status(first, TaskStatus.PENDING)
    assert job.allocated.is_empty()
    assert sorted(t.name for t in job.pending_tasks()) == ["g-0", "g-2"]


# QueueInfo.from_queue


def test_queue_spec_is_read() -> None:
    info = QueueInfo.from_queue(
        queue_object(
            weight=3,
            capability={"cpu": "10"},
            guarantee={"resource": {"cpu": "2"}},
            reclaimable=False,
            state="Open",
        )
    )
    assert info.weight == 3
    assert info.capability == Resource(10_000, UNLIMITED)
    assert info.guarantee == Resource(2000)
    assert not info.reclaimable
    assert info.is_open


def test_queue_without_state_counts_as_open() -> None:
    info = QueueInfo.from_queue(queue_object())
    assert info.state is QueueState.OPEN
    assert info.is_open
    assert info.reclaimable


def test_closed_queue_does_not_admit() -> None:
    assert not QueueInfo.from_queue(queue_object(state="Closed")).is_open


def test_queue_with_an_unknown_state_does_not_admit() -> None:
    info = QueueInfo.from_queue(queue_object(state="Sleeping"))
    assert info.state is QueueState.UNKNOWN
    assert not info.is_open


def test_queue_without_capability_is_unlimited() -> None:
    assert QueueInfo.from_queue(queue_object()).capability is None


def test_guarantee_above_capability_is_refused_naming_both() -> None:
    with pytest.raises(InvalidObject) as raised:
        QueueInfo.from_queue(
            queue_object(capability={"cpu": "2"}, guarantee={"resource": {"cpu": "4"}})
        )
    assert raised.value.field == "spec.guarantee.resource"
    assert "exceeds spec.capability" in str(raised.value)


def test_guarantee_of_a_resource_the_capability_does_not_name_is_allowed() -> None:
    info = QueueInfo.from_queue(
        queue_object(capability={"cpu": "2"}, guarantee={"resource": {"memory": "4Gi"}})
    )
    assert info.guarantee == Resource(0, 4 * GIB)


@pytest.mark.parametrize("weight", [0, -1])
def test_weight_below_one_is_refused(weight: int) -> None:
    with pytest.raises(InvalidObject) as raised:
        QueueInfo.from_queue(queue_object(weight=weight))
    assert (raised.value.field, raised.value.value) == ("spec.weight", weight)


# build_snapshot


def test_pods_of_other_schedulers_use_their_node_but_join_no_job() -> None:
    snap = build_snapshot(
        nodes=[node_object("n1")],
        pods=[pod_object("system", scheduler="default-scheduler", node_name="n1", phase="Running")],
    )
    assert snap.nodes["n1"].used.cpu == 1000
    assert snap.nodes["n1"].pod_count == 1
    assert snap.jobs == {}
    assert snap.orphans == {}


def test_pending_pods_of_other_schedulers_are_ignored() -> None:
    snap = build_snapshot(
        nodes=[node_object("n1")], pods=[pod_object("theirs", scheduler="default-scheduler")]
    )
    assert snap.nodes["n1"].pod_count == 0
    assert snap.jobs == {}


def test_finished_pods_do_not_use_their_node() -> None:
    snap = build_snapshot(
        nodes=[node_object("n1")],
        pods=[pod_object("done", node_name="n1", phase="Succeeded")],
    )
    assert snap.nodes["n1"].pod_count == 0


def test_our_pods_join_the_podgroup_they_name() -> None:
    snap = build_snapshot(
        nodes=[node_object("n1")],
        podgroups=[podgroup("ray-pg", minMember=2)],
        pods=[
            pod_object("head", group="ray-pg"),
            pod_object("worker", group="ray-pg", node_name="n1", phase="Running"),
        ],
    )
    job = snap.jobs["team/ray-pg"]
    assert sorted(t.name for t in job.tasks.values()) == ["head", "worker"]
    assert job.count(TaskStatus.PENDING) == 1
    assert job.count(TaskStatus.RUNNING) == 1
    assert snap.nodes["n1"].pod_count == 1


def test_pod_without_a_group_gets_a_one_pod_shadow_job_in_its_annotated_queue() -> None:
    snap = build_snapshot(
        pods=[pod_object("bare", annotations={"scheduling.volcano.sh/queue-name": "research"})]
    )
    (job,) = snap.jobs.values()
    assert job.shadow
    assert job.min_member == 1
    assert job.queue == "research"
    assert [t.name for t in job.tasks.values()] == ["bare"]
    assert next(iter(job.tasks.values())).job == job.key


def test_shadow_job_without_a_queue_annotation_uses_the_default_queue() -> None:
    snap = build_snapshot(pods=[pod_object("bare")], default_queue="batch")
    (job,) = snap.jobs.values()
    assert job.queue == "batch"


def test_pod_naming_a_missing_podgroup_is_an_orphan() -> None:
    snap = build_snapshot(pods=[pod_object("early", group="not-yet")])
    assert [t.name for t in snap.orphans.values()] == ["early"]
    assert snap.jobs == {}


def test_any_of_the_scheduler_names_counts_as_ours() -> None:
    snap = build_snapshot(
        pods=[pod_object("a", scheduler="volcano"), pod_object("b", scheduler="muster")],
        scheduler_names=("muster", "volcano"),
    )
    assert len(snap.jobs) == 2


def test_podgroup_priority_comes_from_its_priority_class() -> None:
    classes = [
        wire.from_dict({"metadata": {"name": "high"}, "value": 1000}, wire.PriorityClass),
        wire.from_dict(
            {"metadata": {"name": "normal"}, "value": 10, "globalDefault": True},
            wire.PriorityClass,
        ),
    ]
    snap = build_snapshot(
        priority_classes=classes,
        podgroups=[
            podgroup("a", minMember=1, priorityClassName="high"),
            podgroup("b", minMember=1),
        ],
    )
    assert snap.jobs["team/a"].priority == 1000
    assert snap.jobs["team/b"].priority == 10


def test_invalid_objects_are_listed_and_the_rest_kept() -> None:
    bad_queue = queue_object("bad", weight=0)
    snap = build_snapshot(
        nodes=[node_object("n1"), node_object("broken", cpu="four")],
        queues=[queue_object("good"), bad_queue],
        podgroups=[podgroup("pg", minMember=1), podgroup("neg", minMember=-1)],
        pods=[pod_object("ok", group="pg"), pod_object("malformed", group="pg", cpu="x")],
    )
    assert sorted(snap.nodes) == ["n1"]
    assert sorted(snap.queues) == ["good"]
    assert sorted((e.kind, e.name) for e in snap.invalid) == [
        ("Node", "broken"),
        ("Pod", "team/malformed"),
        ("PodGroup", "team/neg"),
        ("Queue", "bad"),
    ]
    assert [t.name for t in snap.jobs["team/pg"].tasks.values()] == ["ok"]


def test_invalid_podgroup_keeps_a_job_marked_invalid_so_its_pods_are_not_orphans() -> None:
    snap = build_snapshot(
        podgroups=[podgroup("neg", minMember=-1, queue="research")],
        pods=[pod_object("member", group="neg")],
    )
    job = snap.jobs["team/neg"]
    assert job.invalid is not None
    assert job.invalid.field == "spec.minMember"
    assert job.queue == "research"
    assert len(job.tasks) == 1
    assert snap.orphans == {}


# ClusterSnapshot.clone


def test_clone_can_change_freely_without_touching_the_original() -> None:
    running = task("r", 1, job="default/g", status=TaskStatus.RUNNING, node_name="n1")
    job = gang("g", 2, cpu=1)
    job.add_task(running)
    original = snapshot([node("n1", cpu=4)], [job])
    copy = original.clone()

    pending = next(t for t in copy.jobs["default/g"].tasks.values() if t.name == "g-0")
    copy.jobs["default/g"].set_task_status(pending, TaskStatus.ALLOCATED)
    pending.node_name = "n1"
    copy.nodes["n1"].add_task(pending)

    assert original.nodes["n1"].idle.cpu == 3000
    assert original.nodes["n1"].pod_count == 1
    assert original.jobs["default/g"].count(TaskStatus.PENDING) == 2
    original_task = next(t for t in original.jobs["default/g"].tasks.values() if t.name == "g-0")
    assert original_task.status is TaskStatus.PENDING
    assert original_task.node_name == ""
    assert copy.nodes["n1"].idle.cpu == 2000


def test_clone_shares_one_task_copy_between_node_and_job() -> None:
    running = task("r", 1, job="default/g", status=TaskStatus.RUNNING, node_name="n1")
    job = gang("g", 0)
    job.add_task(running)
    copy = snapshot([node("n1", cpu=4)], [job]).clone()
    on_node = copy.nodes["n1"].tasks[running.uid]
    assert on_node is copy.jobs["default/g"].tasks[running.uid]
    assert on_node is not running


def test_a_clones_tasks_with_pod_terms_are_its_copies_each_once() -> None:
    # topology_tasks() of a copy comes from the copy's own pass: each pending or placed
    # task with pod-to-pod terms once, as the copy holds it; a pod on a node that no job
    # holds is the node's copy in the orphans too.
    terms = PodTopologySpec("default")
    running = task("r", 1, job="default/g", status=TaskStatus.RUNNING, node_name="n1")
    stray = task("s", 1, job="default/gone", status=TaskStatus.RUNNING, node_name="n1")
    job = gang("g", 1, cpu=1)
    job.add_task(running)
    original = snapshot([node("n1", cpu=4)], [job])
    original.nodes["n1"].add_task(stray)
    original.orphans[stray.uid] = stray
    for member in (*job.tasks.values(), stray):
        member.topology = terms
    copy = original.clone()
    members = copy.jobs["default/g"].tasks
    assert sorted(t.name for t in copy.topology_tasks()) == ["g-0", "r", "s"]
    assert all(
        t is members.get(t.uid, copy.nodes["n1"].tasks.get(t.uid)) for t in copy.topology_tasks()
    )
    assert copy.orphans[stray.uid] is copy.nodes["n1"].tasks[stray.uid] is not stray
    assert members[running.uid] is copy.nodes["n1"].tasks[running.uid]


def test_clone_copies_orphans_and_invalid_lists() -> None:
    original = build_snapshot(pods=[pod_object("early", group="missing")])
    copy = original.clone()
    copy.orphans.clear()
    extra = task("x")
    copy.orphans[extra.uid] = extra
    assert [t.name for t in original.orphans.values()] == ["early"]


def test_set_task_status_moves_a_task_from_no_node_or_from_another() -> None:
    # From no node (the way every placement goes, with no node to leave) and from one
    # node to another: the job's index, the totals and both nodes stay right.
    job = gang("g", 2, cpu=1)
    snap = snapshot([node("n1", cpu=4), node("n2", cpu=4)], [job])
    first, second = sorted(job.tasks.values(), key=lambda t: t.name)
    snap.set_task_status(first, TaskStatus.ALLOCATED, node_name="n1")
    snap.set_task_status(second, TaskStatus.PIPELINED, node_name="n1")
    snap.set_task_status(first, TaskStatus.ALLOCATED, node_name="n2")  # it has a node
    placed = snap.jobs["default/g"]
    assert placed.ready_count() == 1 and placed.pipelined_count() == 1
    assert placed.allocated.cpu == 1000
    assert snap.nodes["n1"].idle.cpu == 4000 and snap.nodes["n1"].pipelined_pods == 1
    assert snap.nodes["n2"].idle.cpu == 3000 and snap.nodes["n2"].pod_count == 1
    assert {t.name: t.node_name for t in placed.tasks.values()} == {"g-0": "n2", "g-1": "n1"}


def test_set_task_status_of_a_task_the_job_does_not_hold_adds_it_in_that_status() -> None:
    # Not a member yet, or a fresh record of a member (another object, the same uid): the
    # job holds the given object afterwards, indexed and totalled under the new status.
    job = gang("g", 2, cpu=1)
    member = next(iter(job.tasks.values()))
    newcomer = task("g-9", 1, job="default/g")
    job.set_task_status(newcomer, TaskStatus.ALLOCATED)
    assert newcomer.status is TaskStatus.ALLOCATED
    assert job.tasks[newcomer.uid] is newcomer
    assert job.allocated.cpu == 1000 and job.ready_count() == 1
    fresh = task(member.name, 1, job="default/g")
    fresh.uid = member.uid
    job.set_task_status(fresh, TaskStatus.PIPELINED)
    assert job.tasks[member.uid] is fresh
    assert [t.uid for t in job.tasks_in(TaskStatus.PIPELINED)] == [member.uid]
    assert job.count(TaskStatus.PENDING) == 1 and job.pipelined_count() == 1


def test_a_copied_job_counts_its_members_as_the_original_and_forgets_why_it_waited() -> None:
    job = gang("g", 5, cpu=1)
    statuses = [
        TaskStatus.ALLOCATED,
        TaskStatus.PIPELINED,
        TaskStatus.PIPELINED,
        TaskStatus.SUCCEEDED,
        TaskStatus.PENDING,
    ]
    for member, status in zip(
        sorted(job.tasks.values(), key=lambda t: t.name), statuses, strict=True
    ):
        job.set_task_status(member, status)
    job.wait("NotEnoughResources", "only 1 of 5")
    job.fit_errors["x"] = "0/1 nodes are available"
    copy = job.clone({}, [])
    assert copy.ready_count() == job.ready_count() == 2
    assert copy.pipelined_count() == job.pipelined_count() == 2
    assert copy.allocated == job.allocated and copy.allocated is not job.allocated
    assert {s: sorted(b) for s, b in copy.tasks_by_status.items()} == {
        s: sorted(b) for s, b in job.tasks_by_status.items()
    }
    assert (copy.wait_reason, copy.wait_message, copy.fit_errors) == ("", "", {})
    assert job.wait_reason == "NotEnoughResources"


def _fields(cls: type) -> list[str]:
    # The slots: the data descriptors that are not properties.
    return [
        name
        for name in dir(cls)
        if inspect.isdatadescriptor(attribute := getattr(cls, name))
        and not isinstance(attribute, property)
    ]


@pytest.mark.skipif(core() != "plain", reason="sentinels of any type need plain Python")
def test_a_copied_job_carries_every_field_a_session_does_not_recompute() -> None:
    # Clones go through the constructor (the compiled core needs it), so a field added to
    # JobInfo must be passed on there too; this fails when one is forgotten.
    original = JobInfo(namespace="ns", name="pg")
    recomputed = {
        "key",
        "tasks",
        "tasks_by_status",
        "allocated",
        "ready",
        "pipelined",
        "fit_errors",
        "wait_reason",
        "wait_message",
        "starving",
        "subgroup_waits",
        "placed_hypernode",
        "_pending_request",
        "scale_up",
        "disrupted",
        "completion",
    }
    sentinels = {}
    for name in _fields(JobInfo):
        if name not in recomputed | {"namespace", "name"}:
            sentinels[name] = object()
            setattr(original, name, sentinels[name])
    copy = original.clone({}, [])
    assert copy.key == "ns/pg"
    for name, sentinel in sentinels.items():
        assert getattr(copy, name) is sentinel, name
    assert set(_fields(JobInfo)) == set(sentinels) | recomputed | {"namespace", "name"}


@pytest.mark.skipif(core() != "plain", reason="sentinels of any type need plain Python")
def test_a_copied_task_carries_every_field() -> None:
    original = task("t")
    sentinels = {}
    for name in _fields(TaskInfo):
        sentinels[name] = object()
        setattr(original, name, sentinels[name])
    copy = original.clone()
    assert copy is not original
    for name, sentinel in sentinels.items():
        assert getattr(copy, name) is sentinel, name
