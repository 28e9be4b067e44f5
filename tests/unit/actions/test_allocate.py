"""allocate: gangs place whole or not at all, in queue, job and task order."""

from __future__ import annotations

import pytest

from scheduler.api.node import NodeInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.resources import Resource
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.engine import load_config, schedule
from scheduler.framework.job_status import SCHEDULED, UNSCHEDULABLE
from scheduler.plugins.nodeorder import NodeOrderPlugin
from tests.unit.builders import binds_per_job as bound_jobs
from tests.unit.builders import gang, node, queue, resources, snapshot, task


def test_two_gangs_on_room_for_one_place_exactly_one() -> None:
    nodes = [node(f"n{i}", cpu=1) for i in range(6)]
    result = schedule(snapshot(nodes, [gang("a", 4), gang("b", 4)]))
    assert list(bound_jobs(result).values()) == [4]
    placed = next(iter(bound_jobs(result)))
    other = "default/b" if placed == "default/a" else "default/a"
    assert all(bind.job != other for bind in result.binds)
    waiting = next(u for u in result.podgroups if f"default/{u.name}" == other)
    assert waiting.phase is not PodGroupPhase.RUNNING


def test_gang_of_three_on_two_fitting_nodes_places_nothing_and_says_insufficient_cpu() -> None:
    result = schedule(snapshot([node("n1", cpu=1), node("n2", cpu=1)], [gang("c", 3)]))
    assert result.binds == []
    (update,) = result.podgroups
    (condition,) = update.conditions
    assert condition.type == UNSCHEDULABLE and condition.status == "True"
    assert condition.message.startswith("3/3 tasks in gang unschedulable: ")
    assert "0/2 nodes are available: 2 Insufficient cpu." in condition.message
    assert {u.name for u in result.unschedulable} == {"c-0", "c-1", "c-2"}


def test_ready_gang_goes_running_with_scheduled_condition() -> None:
    result = schedule(snapshot([node("n1", cpu=4)], [gang("a", 3)]))
    (update,) = result.podgroups
    assert update.phase is PodGroupPhase.RUNNING
    assert [c.type for c in update.conditions] == [SCHEDULED]
    assert {b.node for b in result.binds} == {"n1"}


def test_pending_podgroup_is_enqueued_then_placed_in_one_session() -> None:
    job = gang("a", 2, phase=PodGroupPhase.PENDING)
    result = schedule(snapshot([node("n1", cpu=4)], [job]))
    assert len(result.binds) == 2
    assert result.podgroups[0].phase is PodGroupPhase.RUNNING


def test_members_beyond_min_member_of_running_gang_place_one_by_one() -> None:
    job = gang(
        "ray",
        3,
        min_member=2,
        phase=PodGroupPhase.RUNNING,
        statuses=[TaskStatus.RUNNING] * 2,
        on=["n1"],
    )
    result = schedule(snapshot([node("n1", cpu=3)], [job]))
    assert [b.name for b in result.binds] == ["ray-2"]


def test_higher_priority_job_is_placed_first_when_room_for_one() -> None:
    low = gang("low", 2, priority=1, created="2026-01-01T00:00:00Z")
    high = gang("high", 2, priority=100, created="2026-01-01T00:00:05Z")
    result = schedule(snapshot([node("n1", cpu=2)], [low, high]))
    assert set(bound_jobs(result)) == {"default/high"}


def test_older_job_first_at_equal_priority() -> None:
    old = gang("old", 2, created="2026-01-01T00:00:00Z")
    new = gang("new", 2, created="2026-01-01T00:01:00Z")
    result = schedule(snapshot([node("n1", cpu=2)], [new, old]))
    assert set(bound_jobs(result)) == {"default/old"}


def test_min_task_member_holds_the_gang_until_every_role_fits() -> None:
    # One head that needs a GPU node, two workers; no GPU anywhere: nothing goes.
    job = gang("ray", 3, roles={"head": 1, "worker": 2}, min_task_member={"head": 1, "worker": 2})
    next(t for t in job.tasks.values() if t.role == "head").request.add(
        Resource(scalars={"nvidia.com/gpu": 1})
    )
    result = schedule(snapshot([node("n1", cpu=8)], [job]))
    assert result.binds == []
    assert "Insufficient nvidia.com/gpu" in result.podgroups[0].conditions[0].message


def test_gang_short_of_pods_waits_and_says_how_many_are_missing() -> None:
    job = gang("a", 2, min_member=4)
    result = schedule(snapshot([node("n1", cpu=8)], [job]))
    assert result.binds == []
    (condition,) = result.podgroups[0].conditions
    assert condition.reason == "NotEnoughTasks"
    assert "has 2 pods but minMember is 4" in condition.message


def test_gang_with_no_pods_yet_says_it_waits_for_them() -> None:
    # Admitted before its pods exist (KubeRay, Kubeflow): its condition names minMember,
    # so a minMember of a million is not left unexplained (found by the chaos fuzz).
    job = gang("a", 0, min_member=1_000_000)
    result = schedule(snapshot([node("n1", cpu=8)], [job]))
    (update,) = result.podgroups
    assert update.phase.value == "Inqueue"
    unschedulable = [c for c in update.conditions if c.type == "Unschedulable"]
    assert [c.reason for c in unschedulable] == ["NotEnoughTasks"]
    assert "has 0 pods but minMember is 1000000" in unschedulable[0].message


def test_gang_placed_on_resources_being_released_is_pipelined_not_bound() -> None:
    leaving = task("old", cpu=2, status=TaskStatus.RELEASING, node_name="n1")
    holder = gang("holder", 1, phase=PodGroupPhase.RUNNING)
    holder.add_task(leaving)
    leaving.job = holder.key
    job = gang("next", 2)
    snap = snapshot([node("n1", cpu=2)], [job])
    snap.nodes["n1"].add_task(leaving)
    result = schedule(snap)
    # The room is promised, not bound, and the gang is not reported unschedulable.
    assert result.binds == []
    assert [u for u in result.podgroups if u.name == "next"] == []
    assert not any(m.job == "default/next" for m in result.unschedulable)


def test_best_effort_pods_are_backfilled() -> None:
    job = gang("be", 2, cpu=0)
    result = schedule(snapshot([node("n1", cpu=1)], [job]))
    assert len(result.binds) == 2


def test_gated_pod_is_not_placed_and_says_it_waits_for_gates() -> None:
    job = gang("g", 1)
    only = next(iter(job.tasks.values()))
    only.gated = True
    result = schedule(snapshot([node("n1", cpu=4)], [job]))
    assert result.binds == []
    (message,) = result.unschedulable
    assert message.reason == "SchedulingGated"
    assert "scheduling gates" in message.message


def test_large_cluster_scores_a_sample_not_every_node(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    config = load_config(
        """
actions: "allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: nodeorder
"""
    )
    original = NodeOrderPlugin.node_score

    def counting(self: NodeOrderPlugin, task: TaskInfo, node: NodeInfo) -> float:
        calls.append(1)
        return original(self, task, node)

    monkeypatch.setattr(NodeOrderPlugin, "node_score", counting)
    nodes = [node(f"n{i:04d}", cpu=8) for i in range(1000)]
    result = schedule(snapshot(nodes, [gang("a", 4)]), config)
    assert len(result.binds) == 4
    assert 0 < len(calls) < 500


def test_unschedulable_message_counts_every_node_of_a_large_cluster() -> None:
    nodes = [node(f"n{i:04d}", cpu=1) for i in range(300)]
    result = schedule(snapshot(nodes, [gang("big", 1, cpu=2)]))
    assert "0/300 nodes are available: 300 Insufficient cpu." in result.unschedulable[0].message


def test_pod_of_missing_queue_waits_with_a_message_naming_the_queue() -> None:
    result = schedule(snapshot([node("n1")], [gang("a", 1, queue="nope")]))
    assert result.binds == []
    assert "queue 'nope' does not exist" in result.podgroups[0].conditions[0].message


def test_every_queue_is_served() -> None:
    jobs = [gang("a", 1, queue="qa"), gang("b", 1, queue="qb")]
    result = schedule(snapshot([node("n1", cpu=2)], jobs, [queue("qa"), queue("qb")]))
    assert set(bound_jobs(result)) == {"default/a", "default/b"}


def test_gang_kept_for_pipelining_is_not_reported_running_while_nothing_is_bound() -> None:
    # minMember 2 of workers fits now, but the one ps (minTaskMember) waits for released room
    leaving = task("old", cpu=1, status=TaskStatus.RELEASING, node_name="n1")
    holder = gang("holder", 1, phase=PodGroupPhase.RUNNING)
    holder.add_task(leaving)
    leaving.job = holder.key
    job = gang(
        "tf",
        3,
        min_member=2,
        roles={"worker": 2, "ps": 1},
        min_task_member={"ps": 1},
        created="2026-01-01T00:00:00Z",
    )
    # a younger job that would fit on the idle room the workers hold for this session
    later = gang("later", 1, cpu=2, created="2026-01-01T00:00:09Z")
    snap = snapshot([node("n0", cpu=2), node("n1", cpu=1)], [job, later])
    snap.nodes["n1"].add_task(leaving)
    result = schedule(snap)
    assert result.binds == []
    assert result.nominated == [job.key]
    assert all(u.phase is not PodGroupPhase.RUNNING for u in result.podgroups if u.name == "tf")


def test_without_the_enqueue_action_pending_podgroups_are_scheduled() -> None:
    config = load_config(
        'actions: "allocate, backfill"\ntiers:\n- plugins: [{name: gang}, {name: proportion}]\n'
    )
    job = gang("direct", 2, phase=PodGroupPhase.PENDING)
    result = schedule(snapshot([node("n1", cpu=4)], [job]), config)
    assert len(result.binds) == 2


def test_with_the_enqueue_action_a_podgroup_it_did_not_admit_is_not_placed() -> None:
    # minResources larger than the cluster: enqueue keeps it Pending, so nothing binds
    # even though its pods alone would fit
    job = gang("ask-big", 1, phase=PodGroupPhase.PENDING, min_resources=resources(cpu=64))
    result = schedule(snapshot([node("n1", cpu=4)], [job]))
    assert result.binds == []


def test_jobs_that_cannot_be_scheduled_do_not_stop_the_jobs_after_them() -> None:
    done = gang("done", 1, status=TaskStatus.SUCCEEDED)
    lost = gang("lost", 1, queue="nope")
    short = gang("short", 1, min_member=3)
    ok = gang("ok", 1)
    snap = snapshot([node("n1", cpu=4)], [done, lost, short, ok])
    assert [b.job for b in schedule(snap).binds] == ["default/ok"]


def test_a_gang_left_part_bound_is_completed_before_a_higher_priority_gang_takes_its_room() -> None:
    # A previous leader bound 3 of 4 members and died; the room for the 4th is the only room
    # left. A higher-priority gang would otherwise take it and leave the first gang short.
    cut = gang(
        "cut",
        4,
        cpu=1,
        phase=PodGroupPhase.RUNNING,
        statuses=[TaskStatus.RUNNING] * 3,
        on=["n1", "n1", "n1"],
    )
    eager = gang("eager", 1, cpu=1, priority=1000)
    result = schedule(snapshot([node("n1", cpu=4)], [cut, eager]))
    assert bound_jobs(result) == {cut.key: 1}
