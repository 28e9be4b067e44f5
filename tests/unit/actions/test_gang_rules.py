"""Rules that a weaker scheduler would get wrong quietly: roles (minTaskMember), DRF job
order, victims of a gang already short of minMember, job priority, preemptor predicates."""

from __future__ import annotations

import pytest

from scheduler.api.resources import Resource
from scheduler.api.task import TaskStatus
from scheduler.engine import schedule
from tests.unit.actions.eviction_helpers import config, evicted_by_job
from tests.unit.builders import gang, node, queue, running_gang, snapshot, task

PORT_SPEC = {"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}


def test_gang_with_enough_pods_but_a_role_short_is_not_bound() -> None:
    # minMember 3 is met by three workers, but the head (needs a GPU nobody has) is not placed.
    job = gang("ray", 4, min_member=3, roles={"worker": 3, "head": 1}, min_task_member={"head": 1})
    next(t for t in job.tasks.values() if t.role == "head").request.add(
        Resource(scalars={"nvidia.com/gpu": 1})
    )
    result = schedule(snapshot([node("n1", cpu=8)], [job]))
    assert result.binds == []
    assert result.podgroups[0].phase.value == "Inqueue"


def test_gang_missing_a_role_it_needs_waits_naming_the_role() -> None:
    job = gang("ray", 3, min_member=2, roles={"worker": 3}, min_task_member={"head": 1})
    result = schedule(snapshot([node("n1", cpu=8)], [job]))
    assert result.binds == []
    (condition,) = result.podgroups[0].conditions
    assert condition.reason == "NotEnoughTasks"
    assert "task 'head'" in condition.message and "minTaskMember[head] is 1" in condition.message


def test_preemptor_gang_with_a_role_that_cannot_be_placed_evicts_nothing() -> None:
    low = [running_gang(f"low{i}", 1, priority=1, on=["n0"]) for i in range(4)]
    high = gang("high", 3, min_member=2, roles={"worker": 2, "head": 1}, priority=100)
    high.min_task_member = {"head": 1, "worker": 1}
    next(t for t in high.tasks.values() if t.role == "head").request.add(
        Resource(scalars={"nvidia.com/gpu": 1})
    )
    result = schedule(snapshot([node("n0", cpu=4)], [*low, high]), config())
    assert result.evictions == []


def test_drf_serves_the_job_with_the_smaller_share_before_an_older_one() -> None:
    old = gang(
        "old",
        4,
        min_member=1,
        created="2026-01-01T00:00:00Z",
        statuses=[TaskStatus.RUNNING] * 3,
        on=["n1"],
    )
    young = gang(
        "young",
        2,
        min_member=1,
        created="2026-01-01T00:00:09Z",
        statuses=[TaskStatus.RUNNING],
        on=["n1"],
    )
    # 5 cpu: 4 running, room for one more pod: the smaller share (young) gets it.
    result = schedule(snapshot([node("n1", cpu=5)], [old, young]))
    assert [bind.job for bind in result.binds] == ["default/young"]


def test_gang_already_below_min_member_loses_no_pod_to_preemption() -> None:
    # minMember 5 with 4 running: nothing to spare, and it is not evicted whole by default.
    short = gang("short", 5, priority=1, statuses=[TaskStatus.RUNNING] * 4, on=["n0"])
    high = gang("high", 1, priority=100)
    result = schedule(snapshot([node("n0", cpu=4)], [short, high]), config())
    assert result.evictions == []


def test_podgroup_priority_class_decides_preemption_even_with_pods_at_priority_zero() -> None:
    low = [running_gang(f"low{i}", 1, priority=0, on=["n0"]) for i in range(4)]
    high = gang("high", 1, priority=1000)
    for member in high.tasks.values():
        member.priority = 0  # the pods name no PriorityClass; the PodGroup does
    result = schedule(snapshot([node("n0", cpu=4)], [*low, high]), config())
    assert len(result.evictions) == 1


def test_pods_of_an_equal_priority_podgroup_are_not_victims_whatever_their_pod_priority() -> None:
    peers = [running_gang(f"peer{i}", 1, priority=1000, on=["n0"]) for i in range(4)]
    for job in peers:
        for member in job.tasks.values():
            member.priority = 0
    high = gang("high", 1, priority=1000)
    result = schedule(snapshot([node("n0", cpu=4)], [*peers, high]), config())
    assert result.evictions == []


def test_preemptor_is_not_placed_where_a_staying_pod_holds_its_host_port() -> None:
    # n0's victim is the cheaper one, but a pod that stays on n0 holds port 8080.
    holder = running_gang("holder", 1, priority=100, spec=PORT_SPEC, on=["n0"])
    cheap = running_gang("cheap", 1, priority=1, on=["n0"])
    dear = [running_gang(f"dear{i}", 1, priority=5, on=["n1"]) for i in range(2)]
    high = gang("high", 1, priority=100, spec=PORT_SPEC)
    nodes = [node("n0", cpu=2), node("n1", cpu=2)]
    result = schedule(snapshot(nodes, [holder, cheap, *dear, high]), config())
    assert [evict.node for evict in result.evictions] == ["n1"]


def test_preemptor_is_not_placed_on_a_node_whose_pod_count_stays_full() -> None:
    # n0 allows 2 pods; evicting its one victim frees cpu but a third pod never fits.
    keeper = running_gang("keeper", 1, cpu=0.5, priority=100, on=["n0"])
    cheap = running_gang("cheap", 1, priority=1, on=["n0"])
    pipelined = task("promised", 0.5, status=TaskStatus.PIPELINED, node_name="n0")
    dear = [running_gang(f"dear{i}", 1, priority=5, on=["n1"]) for i in range(2)]
    high = gang("high", 1, priority=100)
    nodes = [node("n0", cpu=2, max_pods=2), node("n1", cpu=2)]
    snap = snapshot(nodes, [keeper, cheap, *dear, high])
    snap.nodes["n0"].add_task(pipelined)
    result = schedule(snap, config())
    assert evicted_by_job(result) and all(evict.node == "n1" for evict in result.evictions)


@pytest.mark.parametrize(
    "status", [TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.SUCCEEDED]
)
def test_role_member_that_already_holds_its_node_counts_towards_min_task_member(
    status: TaskStatus,
) -> None:
    # the head is placed (or done); the workers may start without waiting for another head
    job = gang(
        "ray",
        3,
        min_member=2,
        roles={"head": 1, "worker": 2},
        min_task_member={"head": 1},
        statuses=[status],  # ray-0, the head
        on=["n1"],
    )
    result = schedule(snapshot([node("n1", cpu=8)], [job]))
    assert sorted(b.name for b in result.binds) == ["ray-1", "ray-2"]


def test_elastic_gang_that_has_its_min_member_reclaims_nothing_for_its_extra_pods() -> None:
    # queue b's job runs its minMember of 1 and wants a second, elastic pod
    greedy = [running_gang(f"a{i}", 1, queue="a", on=["n0"]) for i in range(3)]
    elastic = running_gang("b-elastic", 1, queue="b", on=["n0"])
    elastic.add_task(task("b-elastic-extra", job=elastic.key))
    snap = snapshot([node("n0", cpu=4)], [*greedy, elastic], [queue("a"), queue("b")])
    assert schedule(snap, config()).evictions == []


def test_gang_short_of_min_member_is_served_before_an_older_one_that_has_it() -> None:
    has_gang = running_gang("old", 1, created="2026-01-01T00:00:00Z", on=["n1"])
    has_gang.add_task(task("old-extra", job=has_gang.key, created="2026-01-01T00:00:00Z"))
    waiting = gang("young", 1, created="2026-01-01T00:00:09Z")
    result = schedule(snapshot([node("n1", cpu=2)], [has_gang, waiting]))
    assert [b.job for b in result.binds] == ["default/young"]


def test_higher_priority_pod_of_a_job_is_placed_first() -> None:
    job = gang("mixed", 0, min_member=1)
    for name, priority in (("low", 1), ("high", 9)):
        job.add_task(task(name, job=job.key, priority=priority))
    result = schedule(snapshot([node("n1", cpu=1)], [job]))
    assert [b.name for b in result.binds] == ["high"]
