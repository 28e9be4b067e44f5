"""reclaim: a queue below its deserved share takes back room, gang-aware, with no ping-pong."""

from __future__ import annotations

from scheduler.api.job import JobInfo
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.engine import schedule
from tests.unit.actions.eviction_helpers import config, evicted_by_job
from tests.unit.builders import gang, node, queue, running_gang, snapshot


def greedy_cluster(*, b_pending: int = 4, reclaimable: bool = True) -> ClusterSnapshot:
    # queue a took both 4-cpu nodes with eight one-pod jobs; queue b (equal weight) waits.
    a_jobs = [running_gang(f"a{i}", 1, queue="a", on=[f"n{i % 2}"]) for i in range(8)]
    b_jobs = [gang(f"b{i}", 1, queue="b") for i in range(b_pending)]
    return snapshot(
        [node("n0", cpu=4), node("n1", cpu=4)],
        [*a_jobs, *b_jobs],
        [queue("a", reclaimable=reclaimable), queue("b")],
    )


def test_starved_queue_reclaims_exactly_up_to_its_deserved_share() -> None:
    result = schedule(greedy_cluster(), config())
    assert len(result.evictions) == 4
    assert all(e.job.startswith("default/a") for e in result.evictions)
    assert "reclaimed by queue 'b'" in result.evictions[0].reason
    assert len(result.nominated) == 4


def test_reclaimer_never_takes_more_than_its_deserved_share() -> None:
    # b asks for 6 but deserves 4 of 8: only 4 pods of a go.
    result = schedule(greedy_cluster(b_pending=6), config())
    assert len(result.evictions) == 4


def test_queue_that_is_not_reclaimable_keeps_its_pods() -> None:
    result = schedule(greedy_cluster(reclaimable=False), config())
    assert result.evictions == []


def test_steady_state_at_deserved_shares_evicts_nothing() -> None:
    a_jobs = [running_gang(f"a{i}", 1, queue="a", on=[f"n{i % 2}"]) for i in range(4)]
    b_jobs = [running_gang(f"b{i}", 1, queue="b", on=[f"n{i % 2}"]) for i in range(4)]
    # both queues still want more: neither may take from the other
    more = [gang("a-more", 1, queue="a"), gang("b-more", 1, queue="b")]
    snap = snapshot(
        [node("n0", cpu=4), node("n1", cpu=4)], [*a_jobs, *b_jobs, *more], [queue("a"), queue("b")]
    )
    result = schedule(snap, config())
    assert result.evictions == [] and result.binds == []


def test_reclaim_evicts_a_whole_victim_gang_or_nothing_of_it() -> None:
    # a runs one 8-pod gang (minMember 8) over the whole cluster; b deserves half.
    whole = running_gang("wide", 8, queue="a", on=["n0", "n1"])
    b_job = gang("b0", 4, queue="b")
    snap = snapshot(
        [node("n0", cpu=4), node("n1", cpu=4)], [whole, b_job], [queue("a"), queue("b")]
    )
    result = schedule(snap, config())
    # taking the whole gang would leave queue a with nothing, below its deserved share
    assert result.evictions == []


def test_reclaim_takes_a_whole_small_gang_when_that_keeps_the_victim_queue_at_its_share() -> None:
    pairs: list[JobInfo] = [running_gang(f"p{i}", 2, queue="a", on=[f"n{i % 2}"]) for i in range(4)]
    b_job = gang("b0", 2, queue="b")
    snap = snapshot(
        [node("n0", cpu=4), node("n1", cpu=4)], [*pairs, b_job], [queue("a"), queue("b")]
    )
    counts = evicted_by_job(schedule(snap, config(whole_gangs=True)))
    assert sorted(counts.values()) == [2]


def test_after_reclaim_the_victim_queue_does_not_reclaim_back() -> None:
    # the state reclaim leaves: 4 and 4, both queues with more pending
    a_jobs = [running_gang(f"a{i}", 1, queue="a", on=[f"n{i % 2}"]) for i in range(4)]
    b_jobs = [running_gang(f"b{i}", 1, queue="b", on=[f"n{i % 2}"]) for i in range(4)]
    again = [gang(f"a-back{i}", 1, queue="a") for i in range(4)]
    snap = snapshot(
        [node("n0", cpu=4), node("n1", cpu=4)], [*a_jobs, *b_jobs, *again], [queue("a"), queue("b")]
    )
    assert schedule(snap, config()).evictions == []


def test_a_gang_whose_pods_or_podgroup_say_preemption_policy_never_reclaims_nothing() -> None:
    polite = greedy_cluster()
    for job in polite.jobs.values():
        if job.queue == "b":
            for member in job.tasks.values():
                member.preemption_policy = "Never"
    assert schedule(polite, config()).evictions == []

    # a native PodGroup's own preemptionPolicy: Never (v1beta1) says the same for its gang
    native = greedy_cluster()
    for job in native.jobs.values():
        if job.queue == "b":
            job.preemption_policy = "Never"
    assert schedule(native, config()).evictions == []
