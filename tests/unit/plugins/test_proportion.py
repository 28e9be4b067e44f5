"""proportion: queues share the cluster by weight, within capability, above guarantee."""

from __future__ import annotations

from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.queue import QueueState
from scheduler.engine import schedule
from tests.unit.actions.eviction_helpers import config
from tests.unit.builders import binds_per_queue as per_queue
from tests.unit.builders import gang, node, queue, resources, running_gang, snapshot


def saturating(queues: dict[str, int], jobs_per_queue: int = 40) -> tuple[list, dict[str, str]]:
    jobs = []
    owner = {}
    for name in queues:
        for index in range(jobs_per_queue):
            job = gang(f"{name}-{index}", 1, queue=name, created=f"2026-01-01T00:00:{index:02d}Z")
            jobs.append(job)
            owner[job.key] = name
    return jobs, owner


def test_weights_one_and_three_split_a_saturated_cluster_within_one_pod_of_one_to_three() -> None:
    jobs, owner = saturating({"small": 1, "big": 3})
    nodes = [node(f"n{i}", cpu=4) for i in range(10)]  # 40 cpu, 80 one-cpu pods asking
    result = schedule(snapshot(nodes, jobs, [queue("small", 1), queue("big", 3)]))
    counts = per_queue(result, owner)
    assert abs(counts["small"] - 10) <= 1 and abs(counts["big"] - 30) <= 1
    assert sum(counts.values()) == 40


def test_capability_caps_a_queue_even_when_the_cluster_has_room() -> None:
    jobs, owner = saturating({"capped": 1})
    capped = queue("capped", capability=resources(cpu=5))
    result = schedule(snapshot([node(f"n{i}", cpu=4) for i in range(10)], jobs, [capped]))
    assert per_queue(result, owner) == {"capped": 5}


def test_guarantee_is_deserved_even_against_a_heavier_queue() -> None:
    jobs, owner = saturating({"light": 1, "heavy": 9})
    light = queue("light", 1, guarantee=resources(cpu=6))
    result = schedule(
        snapshot([node(f"n{i}", cpu=4) for i in range(5)], jobs, [light, queue("heavy", 9)])
    )
    counts = per_queue(result, owner)
    assert counts["light"] >= 6
    assert sum(counts.values()) == 20


def test_unused_share_flows_to_the_queue_that_asks() -> None:
    jobs, owner = saturating({"busy": 1}, jobs_per_queue=30)
    result = schedule(
        snapshot(
            [node(f"n{i}", cpu=4) for i in range(5)], jobs, [queue("busy", 1), queue("idle", 3)]
        )
    )
    assert per_queue(result, owner) == {"busy": 20}


def test_closed_queue_admits_no_pending_podgroup_and_says_so() -> None:
    closed = queue("shut", state=QueueState.CLOSED)
    job = gang("a", 1, queue="shut", phase=PodGroupPhase.PENDING)
    result = schedule(snapshot([node("n1")], [job], [closed]))
    assert result.binds == []
    (condition,) = result.podgroups[0].conditions
    assert condition.reason == "QueueNotOpen"
    assert "'shut' is Closed" in condition.message


def test_pending_gang_larger_than_queue_capability_is_not_enqueued() -> None:
    small = queue("small", capability=resources(cpu=2))
    job = gang("a", 4, queue="small", phase=PodGroupPhase.PENDING, min_resources=resources(cpu=4))
    result = schedule(snapshot([node("n1", cpu=8)], [job], [small]))
    assert result.binds == []
    (update,) = result.podgroups
    assert update.phase is PodGroupPhase.PENDING
    assert update.conditions[0].reason == "QueueCapacityExceeded"


def test_queue_status_reports_allocated_deserved_and_podgroup_counts() -> None:
    result = schedule(snapshot([node("n1", cpu=4)], [gang("a", 2), gang("b", 8)]))
    (status,) = [q for q in result.queues if q.name == "default"]
    assert status.allocated.cpu == 2000
    assert status.deserved is not None and status.deserved.cpu == 4000
    assert status.podgroups["running"] == 1 and status.podgroups["inqueue"] == 1


def test_jobs_held_back_by_a_queue_at_its_share_say_so() -> None:
    jobs, owner = saturating({"small": 1, "big": 3})
    nodes = [node(f"n{i}", cpu=4) for i in range(10)]
    result = schedule(snapshot(nodes, jobs, [queue("small", 1), queue("big", 3)]))
    waiting = {u.name for u in result.podgroups for c in u.conditions if c.type == "Unschedulable"}
    placed = {bind.job.split("/")[1] for bind in result.binds}
    assert waiting == {owner_key.split("/")[1] for owner_key in owner} - placed
    held = next(u for u in result.podgroups if u.name in waiting)
    assert held.conditions[0].reason == "QueueShareExceeded"
    assert "deserved share" in held.conditions[0].message


def test_memory_capability_caps_a_queue_asking_for_memory() -> None:
    jobs = [gang(f"m{i}", 1, 0, "1Gi", queue="mem") for i in range(8)]
    capped = queue("mem", capability=resources(memory="4Gi"))
    result = schedule(snapshot([node("n0", cpu=8, memory="64Gi")], jobs, [capped]))
    assert len(result.binds) == 4


def test_two_gangs_admitted_in_one_session_add_up_against_the_queue_capability() -> None:
    capped = queue("small", capability=resources(cpu=4))
    first, second = (
        gang(name, 3, queue="small", phase=PodGroupPhase.PENDING, min_resources=resources(cpu=3))
        for name in ("first", "second")
    )
    result = schedule(snapshot([node("n1", cpu=16)], [first, second], [capped]))
    assert result.admitted == [first.key]


def test_gang_admitted_earlier_and_not_started_still_holds_the_queue_capability() -> None:
    capped = queue("small", capability=resources(cpu=4))
    held = gang("held", 3, queue="small", min_resources=resources(cpu=3))
    held.tasks.clear()  # its pods are not created yet (an operator waits for Inqueue)
    new = gang("new", 3, queue="small", phase=PodGroupPhase.PENDING, min_resources=resources(cpu=3))
    result = schedule(snapshot([node("n1", cpu=16)], [held, new], [capped]))
    assert result.admitted == []
    assert "QueueCapacityExceeded" in {c.reason for u in result.podgroups for c in u.conditions}


def test_queue_is_not_reclaimed_below_its_deserved_by_a_pod_bigger_than_its_surplus() -> None:
    # a deserves 4 of 8 and holds 5: its youngest pod (2 cpu) would be the first victim,
    # but taking it would leave a at 3, below its deserved; a 1-cpu pod goes instead
    a_jobs = [
        running_gang(f"a{i}", 1, queue="a", created=f"2026-01-01T00:00:0{i}Z", on=["n0"])
        for i in range(3)
    ]
    a_jobs.append(running_gang("a-big", 1, 2, queue="a", created="2026-01-01T00:00:09Z", on=["n0"]))
    b_jobs = [running_gang(f"b{i}", 1, queue="b", on=["n1"]) for i in range(3)]
    wants = gang("b-more", 1, queue="b")
    snap = snapshot(
        [node("n0", cpu=5), node("n1", cpu=3)], [*a_jobs, *b_jobs, wants], [queue("a"), queue("b")]
    )
    result = schedule(snap, config())
    assert [e.job for e in result.evictions] == ["default/a2"]
