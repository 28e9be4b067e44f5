"""Queues as Volcano reads them: unnamed dimensions unlimited, priority, closing states."""

from __future__ import annotations

from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.queue import QueueState
from scheduler.api.resources import Resource, limit_from_list
from scheduler.api.task import TaskStatus
from scheduler.engine import default_config, schedule
from scheduler.framework.cycle import open_cycle
from scheduler.plugins import PLUGINS
from tests.unit.builders import gang, node, queue, resources, running_gang, snapshot


def capped(**values: str) -> Resource:
    limit = limit_from_list(values, kind="Queue", name="q", field="spec.capability")
    assert limit is not None
    return limit


def test_queue_capped_in_cpu_and_memory_admits_and_runs_a_gpu_gang() -> None:
    team = queue("team", capability=capped(cpu="16", memory="64Gi"))
    job = gang(
        "train",
        2,
        cpu=2,
        gpu=1,
        queue="team",
        phase=PodGroupPhase.PENDING,
        min_resources=resources(4, gpu=2),
    )
    result = schedule(snapshot([node("n1", cpu=8, gpu=4)], [job], [team]))
    assert len(result.binds) == 2
    assert result.podgroups[0].phase is PodGroupPhase.RUNNING


def test_queue_capped_in_cpu_alone_does_not_hold_a_gpu_gang_back_by_its_share() -> None:
    team = queue("team", capability=capped(cpu="100"))
    job = gang("train", 2, cpu=1, gpu=2, queue="team")
    result = schedule(snapshot([node("n1", cpu=8, gpu=4)], [job], [team]))
    assert len(result.binds) == 2


def test_queue_capped_in_cpu_alone_runs_pods_asking_ephemeral_storage() -> None:
    team = queue("team", capability=capped(cpu="100"))
    job = gang("scratch", 2, cpu=1, queue="team")
    for member in job.tasks.values():
        member.request.add(Resource(scalars={"ephemeral-storage": 10 * 2**30}))
    disk = node("n1", cpu=8)
    disk.allocatable.add(Resource(scalars={"ephemeral-storage": 100 * 2**30}))
    disk.idle.add(Resource(scalars={"ephemeral-storage": 100 * 2**30}))
    result = schedule(snapshot([disk], [job], [team]))
    assert len(result.binds) == 2


def test_capability_naming_a_gpu_count_still_caps_gpus() -> None:
    team = queue("team", capability=capped(cpu="100", **{"nvidia.com/gpu": "1"}))
    job = gang(
        "train", 2, gpu=1, queue="team", phase=PodGroupPhase.PENDING, min_resources=resources(gpu=2)
    )
    result = schedule(snapshot([node("n1", cpu=8, gpu=4)], [job], [team]))
    assert result.binds == []
    assert result.podgroups[0].conditions[0].reason == "QueueCapacityExceeded"


def test_child_queue_under_a_cpu_capped_parent_runs_a_gpu_gang() -> None:
    parent = queue("org", capability=capped(cpu="8"))
    child = queue("org-ml", parent="org")
    job = gang("train", 2, cpu=1, gpu=1, queue="org-ml", phase=PodGroupPhase.PENDING)
    job.min_resources = resources(2, gpu=2)
    result = schedule(snapshot([node("n1", cpu=8, gpu=4)], [job], [parent, child]))
    assert len(result.binds) == 2


def test_queue_of_higher_priority_is_served_before_a_queue_with_a_smaller_share() -> None:
    # "low" holds nothing (share 0) and "high" already holds 2 cpu, yet "high" goes first.
    low = queue("low")
    high = queue("high", priority=10)
    running = running_gang("held", 2, queue="high", on=["n1"])
    waiting = gang("low-job", 2, queue="low")
    session = open_cycle(
        snapshot([node("n1", cpu=8)], [running, waiting], [low, high]), default_config(), PLUGINS
    ).session
    assert session.compare_queues(high, low) < 0
    assert session.compare_queues(low, high) > 0
    # Equal priorities fall back to the share: the empty queue first.
    session.queues["high"].priority = 0
    assert session.compare_queues(low, high) < 0


def test_closing_queue_starts_no_gang_it_had_admitted() -> None:
    closing = queue("shut", state=QueueState.CLOSING)
    job = gang("admitted", 2, queue="shut", phase=PodGroupPhase.INQUEUE)
    result = schedule(snapshot([node("n1")], [job], [closing]))
    assert result.binds == []
    (condition,) = result.podgroups[0].conditions
    assert condition.reason == "QueueNotOpen"
    assert "'shut' is Closing" in condition.message


def test_closing_queue_lets_a_running_gang_place_its_replacement_pod() -> None:
    closing = queue("shut", state=QueueState.CLOSING)
    job = gang(
        "running",
        3,
        min_member=2,
        queue="shut",
        phase=PodGroupPhase.RUNNING,
        statuses=[TaskStatus.RUNNING] * 2,
        on=["n1"],
    )
    result = schedule(snapshot([node("n1", cpu=8)], [job], [closing]))
    assert len(result.binds) == 1


def test_closed_queue_keeps_a_pending_podgroup_with_no_pods_pending() -> None:
    closed = queue("shut", state=QueueState.CLOSED)
    job = gang("tfjob", 0, min_member=4, queue="shut", phase=PodGroupPhase.PENDING)
    result = schedule(snapshot([node("n1")], [job], [closed]))
    (update,) = result.podgroups
    assert update.phase is PodGroupPhase.PENDING
    assert update.conditions[0].reason == "QueueNotOpen"
