"""Starving gangs: past their waiting time they are served first and hold the room that
frees on the nodes where they fit best, until they fit whole (framework/holds.py)."""

from __future__ import annotations

from scheduler.api.job import JobInfo
from scheduler.api.node import NodeInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.resources import Resource
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskStatus
from scheduler.api.timestamps import format_rfc3339
from scheduler.engine import load_config, schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.decisions import SessionResult
from tests.unit.builders import binds_per_job, gang, node, queue, resources, running_gang, snapshot

NOW = 1_800_000_000.0
# Created long enough ago to starve under the default waiting time (60 s), or just now.
LONG_AGO = format_rfc3339(NOW - 600)
JUST_NOW = format_rfc3339(NOW - 1)

DEFAULT = load_config(
    """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""
)


def sla_config(**arguments: object) -> SchedulerConfig:
    listed = ", ".join(f"{key}: {value}" for key, value in arguments.items())
    return load_config(
        f"""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - {{name: priority}}
  - {{name: gang}}
  - {{name: conformance}}
  - {{name: sla, arguments: {{{listed}}}}}
- plugins: [{{name: drf}}, {{name: predicates}}, {{name: proportion}}, {{name: nodeorder}}]
"""
    )


def busy_cluster(*jobs: JobInfo, free_on_n0: int = 2) -> ClusterSnapshot:
    """Four nodes of 4 cpu, full but for `free_on_n0` cpu on n0, with the given jobs."""
    busy = [
        running_gang("busy-a", 4 - free_on_n0, on=["n0"], created=LONG_AGO),
        running_gang("busy-b", 4, on=["n1"], created=LONG_AGO),
        running_gang("busy-c", 4, on=["n2"], created=LONG_AGO),
        running_gang("busy-d", 4, on=["n3"], created=LONG_AGO),
    ]
    snap = snapshot([node(f"n{i}", cpu=4) for i in range(4)], [*busy, *jobs])
    snap.now = NOW
    return snap


def starving_condition(result: SessionResult, job: JobInfo) -> tuple[str, str, str] | None:
    for update in result.podgroups:
        if update.name != job.name:
            continue
        for condition in update.conditions:
            if condition.type == "Starving":
                return condition.reason, condition.message, condition.last_transition_time
    return None


def held(result: SessionResult, job: JobInfo) -> dict[str, Resource]:
    return next((room.nodes for room in result.holds if room.job == job.key), {})


def test_a_starving_gang_holds_the_room_that_frees_and_a_small_gang_does_not_get_it() -> None:
    big = gang("big", 8, created=LONG_AGO)
    small = gang("small", 2, created=JUST_NOW)
    result = schedule(busy_cluster(big, small), DEFAULT)
    assert binds_per_job(result) == {}
    assert held(result, big) == {"n0": resources(cpu=2)}
    reason, message, since = starving_condition(result, big) or ("", "", "")
    assert reason == "HoldingResources"
    assert "holds cpu 2 on n0" in message
    # Since when it starves: created + the default waiting time of 60 s.
    assert since == format_rfc3339(NOW - 600 + 60)
    (waiting,) = [u for u in result.podgroups if u.name == "small"]
    unschedulable = next(c for c in waiting.conditions if c.type == "Unschedulable")
    assert "held for starving gangs: default/big" in unschedulable.message


def test_before_its_waiting_time_a_gang_holds_nothing_and_small_gangs_go() -> None:
    big = gang("big", 8, created=JUST_NOW)
    small = gang("small", 2, created=JUST_NOW)
    result = schedule(busy_cluster(big, small), DEFAULT)
    assert binds_per_job(result) == {small.key: 2}
    assert result.holds == []
    assert starving_condition(result, big) is None


def test_the_podgroup_annotation_sets_its_own_waiting_time() -> None:
    big = gang("big", 8, created=format_rfc3339(NOW - 20))
    big.settings = _waiting(10)
    small = gang("small", 2, created=JUST_NOW)
    result = schedule(busy_cluster(big, small), DEFAULT)
    assert binds_per_job(result) == {}
    assert held(result, big) == {"n0": resources(cpu=2)}


def test_the_sla_plugin_sets_the_waiting_time_for_every_gang() -> None:
    big = gang("big", 8, created=format_rfc3339(NOW - 20))
    small = gang("small", 2, created=JUST_NOW)
    starving = schedule(busy_cluster(big, small), sla_config(**{"sla-waiting-time": "10s"}))
    assert held(starving, big) == {"n0": resources(cpu=2)}
    patient = schedule(busy_cluster(big, small), sla_config(**{"sla-waiting-time": "5m"}))
    assert binds_per_job(patient) == {small.key: 2}


def test_holding_turned_off_lets_the_small_gang_go_and_says_so() -> None:
    big = gang("big", 8, created=LONG_AGO)
    small = gang("small", 2, created=JUST_NOW)
    result = schedule(busy_cluster(big, small), sla_config(holdResources="false"))
    assert binds_per_job(result) == {small.key: 2}
    assert (starving_condition(result, big) or ("",))[0] == "HoldingTurnedOff"


def test_once_enough_is_free_the_starving_gang_is_placed_whole_before_others() -> None:
    big = gang("big", 4, created=LONG_AGO)
    small = gang("small", 2, created=JUST_NOW)
    result = schedule(busy_cluster(big, small, free_on_n0=4), DEFAULT)
    assert binds_per_job(result) == {big.key: 4}
    assert starving_condition(result, big) is None


def test_a_gang_larger_than_the_cluster_holds_nothing_and_says_it_never_fits() -> None:
    huge = gang("huge", 20, created=LONG_AGO)
    small = gang("small", 2, created=JUST_NOW)
    result = schedule(busy_cluster(huge, small), DEFAULT)
    assert binds_per_job(result) == {small.key: 2}
    reason, message, _ = starving_condition(result, huge) or ("", "", "")
    assert reason == "CannotEverFit"
    assert "do not fit the cluster's nodes even if they were empty" in message


def test_a_gang_over_its_queue_capability_holds_nothing_and_says_so() -> None:
    capped = gang("capped", 8, queue="team", created=LONG_AGO)
    small = gang("small", 2, queue="team", created=JUST_NOW)
    snap = busy_cluster(capped, small)
    snap.queues["team"] = queue("team", capability=resources(cpu=6))
    result = schedule(snap, DEFAULT)
    reason, message, _ = starving_condition(result, capped) or ("", "", "")
    assert reason == "CannotEverFit"
    assert "capability" in message
    assert binds_per_job(result) == {small.key: 2}


def test_a_gang_whose_queue_is_over_its_share_holds_nothing() -> None:
    # team-a holds 14 cpu of 16 while team-b, of equal weight, asks 6: team-a deserves 10
    # and is over it, so its starving gang holds nothing and team-b's gang gets the room.
    busy = [
        running_gang("a1", 4, queue="team-a", on=["n0"], created=LONG_AGO),
        running_gang("a2", 4, queue="team-a", on=["n1"], created=LONG_AGO),
        running_gang("a3", 4, queue="team-a", on=["n2"], created=LONG_AGO),
        running_gang("a4", 2, queue="team-a", on=["n3"], created=LONG_AGO),
    ]
    starving = gang("more", 4, queue="team-a", created=LONG_AGO)
    other = gang("other", 2, queue="team-b", created=JUST_NOW)
    later = gang("later", 4, queue="team-b", created=JUST_NOW)
    snap = snapshot(
        [node(f"n{i}", cpu=4) for i in range(4)],
        [*busy, starving, other, later],
        [queue("team-a"), queue("team-b")],
    )
    snap.now = NOW
    result = schedule(snap, DEFAULT)
    assert (starving_condition(result, starving) or ("",))[0] == "QueueOverDeservedShare"
    assert binds_per_job(result) == {other.key: 2}


def test_two_starving_gangs_never_hold_the_same_room_and_the_oldest_holds_first() -> None:
    older = gang("older", 8, created=format_rfc3339(NOW - 900))
    younger = gang("younger", 8, created=format_rfc3339(NOW - 600))
    # Both may hold (holdingGangs 2): the younger lays out on what the older left.
    result = schedule(busy_cluster(older, younger, free_on_n0=3), sla_config(holdingGangs=2))
    assert held(result, older) == {"n0": resources(cpu=3)}
    assert (starving_condition(result, younger) or ("",))[0] == "HoldingResources"
    assert not any(not amount.is_empty() for amount in held(result, younger).values())


def test_a_gang_of_higher_priority_may_take_held_room() -> None:
    big = gang("big", 8, created=LONG_AGO)
    urgent = gang("urgent", 2, created=JUST_NOW, priority=100)
    result = schedule(busy_cluster(big, urgent), DEFAULT)
    assert binds_per_job(result) == {urgent.key: 2}


def test_best_effort_pods_may_use_a_held_node() -> None:
    big = gang("big", 8, created=LONG_AGO)
    idle = gang("idle", 1, cpu=0, created=JUST_NOW)
    result = schedule(busy_cluster(big, idle), DEFAULT)
    assert binds_per_job(result) == {idle.key: 1}
    assert held(result, big) == {"n0": resources(cpu=2)}


def test_held_room_grows_until_the_gang_fits_over_sessions() -> None:
    # A stream: each session one busy gang ends and a small gang arrives; the starving
    # gang holds what frees and is placed whole once its 8 cpu are free.
    nodes = [node(f"n{i}", cpu=4) for i in range(4)]
    running = [running_gang(f"busy-{i}", 2, on=[f"n{i // 2}"], created=LONG_AGO) for i in range(8)]
    big = gang("big", 8, created=LONG_AGO)
    jobs: dict[str, JobInfo] = {job.key: job for job in (*running, big)}
    placed_at = None
    for step in range(8):
        finished = running[step]
        for member in finished.tasks.values():
            member.status = TaskStatus.SUCCEEDED
        finished.phase = PodGroupPhase.COMPLETED
        small = gang(f"small-{step}", 2, created=format_rfc3339(NOW + step))
        jobs[small.key] = small
        snap = _rebuild(nodes, list(jobs.values()))
        snap.now = NOW + step
        result = schedule(snap, DEFAULT)
        assert binds_per_job(result).get(small.key, 0) == 0, f"step {step}: small gang placed"
        if binds_per_job(result).get(big.key):
            placed_at = step
            break
    assert placed_at == 3  # after the 4th of 8 busy gangs (2 cpu each) ended


def _waiting(seconds: float) -> object:
    from scheduler.api.annotations import GroupSettings

    return GroupSettings(waiting_time=seconds)


def _rebuild(nodes: list[NodeInfo], jobs: list[JobInfo]) -> ClusterSnapshot:
    fresh_nodes = [node(n.name, cpu=4) for n in nodes]
    return snapshot(fresh_nodes, [job for job in jobs if job.phase is not PodGroupPhase.COMPLETED])


def test_only_the_gangs_starving_longest_hold_room_the_others_wait_their_turn() -> None:
    oldest = gang("oldest", 8, created=format_rfc3339(NOW - 900))
    middle = gang("middle", 8, created=format_rfc3339(NOW - 800))
    youngest = gang("youngest", 8, created=format_rfc3339(NOW - 700))
    result = schedule(
        busy_cluster(oldest, middle, youngest, free_on_n0=3), sla_config(holdingGangs=1)
    )
    assert [room.job for room in result.holds] == [oldest.key]
    for waiting in (middle, youngest):
        reason, message, _ = starving_condition(result, waiting) or ("", "", "")
        assert reason == "OlderGangsHoldFirst"
        assert "the 1 gangs starving longest hold room first" in message


def test_holding_gangs_below_one_is_refused_at_load() -> None:
    import pytest

    from scheduler.api.errors import ConfigError

    with pytest.raises(ConfigError, match="plugin sla: argument holdingGangs=0"):
        sla_config(holdingGangs=0)


def test_a_starving_pending_gang_is_admitted_whatever_the_cluster_has_free_now() -> None:
    waiting = gang(
        "waiting",
        8,
        created=LONG_AGO,
        phase=PodGroupPhase.PENDING,
        min_resources=resources(cpu=8),
    )
    fresh = gang(
        "fresh", 8, created=JUST_NOW, phase=PodGroupPhase.PENDING, min_resources=resources(cpu=8)
    )
    result = schedule(busy_cluster(waiting, fresh), DEFAULT)
    phases = {update.name: update.phase for update in result.podgroups}
    assert phases["waiting"] is PodGroupPhase.INQUEUE
    assert "fresh" not in phases or phases["fresh"] is PodGroupPhase.PENDING
    assert held(result, waiting) == {"n0": resources(cpu=2)}


def test_a_starving_gang_the_cluster_could_never_hold_is_not_admitted_and_says_so() -> None:
    huge = gang(
        "huge", 20, created=LONG_AGO, phase=PodGroupPhase.PENDING, min_resources=resources(cpu=40)
    )
    result = schedule(busy_cluster(huge), DEFAULT)
    (update,) = [u for u in result.podgroups if u.name == "huge"]
    unschedulable = next(c for c in update.conditions if c.type == "Unschedulable")
    assert update.phase is PodGroupPhase.PENDING
    assert "the cluster can never hold minResources" in unschedulable.message
