"""preempt: a starving gang of higher priority evicts the least that makes room, in its queue."""

from __future__ import annotations

from scheduler.api.errors import InvalidObject
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.snapshot import PriorityClassInfo
from scheduler.api.task import TaskStatus
from scheduler.engine import schedule
from scheduler.framework.job_status import phase_after
from tests.unit.actions.eviction_helpers import config, evicted_by_job
from tests.unit.builders import gang, node, queue, resources, running_gang, snapshot, task
from tests.unit.nodefit.topology_helpers import (
    HOST,
    anti_affinity,
    gang_topology,
    match,
    term,
    with_topology,
)


def test_high_priority_gang_evicts_exactly_enough_spare_pods_and_pipelines_onto_them() -> None:
    # 2 nodes x 4 cpu full of 8 one-pod low-priority jobs; a gang of 2 x 1 cpu arrives.
    low = [running_gang(f"low{i}", 1, priority=1, on=[f"n{i % 2}"]) for i in range(8)]
    high = gang("high", 2, priority=100)
    snap = snapshot([node("n0", cpu=4), node("n1", cpu=4)], [*low, high])
    result = schedule(snap, config())
    assert len(result.evictions) == 2
    assert result.binds == []
    assert result.nominated == ["default/high"]
    assert all("preempted by default/high (priority 100)" in e.reason for e in result.evictions)


def test_victims_are_the_lowest_priority_then_the_youngest() -> None:
    jobs = [
        running_gang("old-low", 1, priority=1, created="2026-01-01T00:00:00Z", on=["n0"]),
        running_gang("young-low", 1, priority=1, created="2026-01-01T00:00:09Z", on=["n0"]),
        running_gang("mid", 1, priority=5, created="2026-01-01T00:00:10Z", on=["n0"]),
        running_gang("mid2", 1, priority=5, created="2026-01-01T00:00:11Z", on=["n0"]),
    ]
    high = gang("high", 1, priority=100)
    result = schedule(snapshot([node("n0", cpu=4)], [*jobs, high]), config())
    assert evicted_by_job(result) == {"default/young-low": 1}


def test_running_gang_is_never_cut_below_min_member_its_spare_pod_goes_instead() -> None:
    # gang "g" runs 4 pods with minMember 3: one spare; "pair" runs 2 of minMember 2.
    g = running_gang("g", 4, min_member=3, priority=1, on=["n0"])
    pair = running_gang("pair", 2, priority=1, cpu=2, on=["n1"])
    high = gang("high", 1, priority=100)
    result = schedule(snapshot([node("n0", cpu=4), node("n1", cpu=4)], [g, pair, high]), config())
    assert evicted_by_job(result) == {"default/g": 1}


def test_victim_gang_with_no_spare_is_not_evicted_by_default() -> None:
    # As in Volcano: a running gang is never cut below minMember, nor evicted whole.
    victim = running_gang("victim", 4, priority=1, on=["n0", "n1"])
    high = gang("high", 1, cpu=2, priority=100)
    snap = snapshot([node("n0", cpu=2), node("n1", cpu=2)], [victim, high])
    result = schedule(snap, config())
    assert result.evictions == []


def test_victim_gang_with_no_spare_is_evicted_whole_and_returns_to_pending() -> None:
    # one 4-pod gang (minMember 4) spread over two nodes; a 2-cpu preemptor needs 2 cpu on one
    victim = running_gang("victim", 4, priority=1, on=["n0", "n1"])
    high = gang("high", 1, cpu=2, priority=100)
    snap = snapshot([node("n0", cpu=2), node("n1", cpu=2)], [victim, high])
    result = schedule(snap, config(whole_gangs=True))
    assert evicted_by_job(result) == {"default/victim": 4}
    update = next(u for u in result.podgroups if u.name == "victim")
    assert update.phase is PodGroupPhase.PENDING


def test_phase_after_a_whole_gang_eviction_is_pending_not_unknown() -> None:
    victim = gang("victim", 2, phase=PodGroupPhase.RUNNING, status=TaskStatus.RELEASING, on=["n0"])
    assert phase_after(victim) is PodGroupPhase.PENDING


def test_nothing_is_evicted_when_the_whole_preemptor_gang_cannot_be_placed() -> None:
    low = [running_gang(f"low{i}", 1, priority=1, on=["n0"]) for i in range(4)]
    # 5 x 1 cpu on one 4-cpu node: even evicting everything leaves the gang short
    high = gang("high", 5, priority=100)
    result = schedule(snapshot([node("n0", cpu=4)], [*low, high]), config())
    assert result.evictions == []
    assert result.nominated == []


def test_equal_or_higher_priority_pods_are_never_victims() -> None:
    same = [running_gang(f"same{i}", 1, priority=100, on=["n0"]) for i in range(4)]
    high = gang("high", 1, priority=100)
    result = schedule(snapshot([node("n0", cpu=4)], [*same, high]), config())
    assert result.evictions == []


def test_preemption_policy_never_on_the_pod_or_its_priority_class_is_respected() -> None:
    low = [running_gang(f"low{i}", 1, priority=1, on=["n0"]) for i in range(4)]
    polite = gang("polite", 1, priority=100)
    for member in polite.tasks.values():
        member.preemption_policy = "Never"
    result = schedule(snapshot([node("n0", cpu=4)], [*low, polite]), config())
    assert result.evictions == []

    classy = gang("classy", 1, priority=100)
    classy.priority_class_name = "gentle"
    snap = snapshot([node("n0", cpu=4)], [*low, classy])
    snap.priority_classes["gentle"] = PriorityClassInfo("gentle", 100, False, "Never")
    assert schedule(snap, config()).evictions == []


def test_kube_system_and_system_critical_pods_are_never_victims() -> None:
    system = running_gang("dns", 1, namespace="kube-system", priority=1, on=["n0"])
    critical = running_gang("crit", 1, priority=1, on=["n0"])
    for member in critical.tasks.values():
        member.priority = 2_000_000_000
    filler = [running_gang(f"f{i}", 1, priority=1000, on=["n0"]) for i in range(2)]
    high = gang("high", 1, priority=100)
    result = schedule(snapshot([node("n0", cpu=4)], [system, critical, *filler, high]), config())
    assert result.evictions == []


def test_preempt_stays_inside_the_queue() -> None:
    other = [running_gang(f"o{i}", 1, queue="b", priority=1, on=["n0"]) for i in range(4)]
    high = gang("high", 1, queue="a", priority=100)
    snap = snapshot([node("n0", cpu=4)], [*other, high], [queue("a"), queue("b")])
    result = schedule(snap, config("enqueue, allocate, preempt, backfill"))
    assert result.evictions == []


def test_pipelined_preemptor_is_bound_next_session_before_anyone_else_takes_the_room() -> None:
    low = [running_gang(f"low{i}", 1, priority=1, on=["n0"]) for i in range(4)]
    high = gang("high", 2, priority=100, created="2026-01-01T00:00:09Z")
    first = schedule(snapshot([node("n0", cpu=4)], [*low, high]), config())
    gone = {e.uid for e in first.evictions}
    assert len(gone) == 2
    # Next session: victims are gone; an older rival of the same priority, which job
    # order alone would serve first, asks for the same room. The nominated preemptor wins.
    rival = gang("rival", 2, priority=100, created="2026-01-01T00:00:00Z")
    survivors = []
    for job in low:
        (member,) = job.tasks.values()
        if member.uid not in gone:
            survivors.append(job)
    fresh_high = gang("high", 2, priority=100, created="2026-01-01T00:00:09Z")
    nxt = snapshot([node("n0", cpu=4)], [*survivors, fresh_high, rival])
    nxt.nominated = frozenset(first.nominated)
    second = schedule(nxt, config())
    assert {b.job for b in second.binds} == {"default/high"}
    # Without the nomination the rival would have taken it: the test proves the ordering.
    nxt.nominated = frozenset()
    assert {b.job for b in schedule(nxt, config()).binds} == {"default/rival"}


def test_preemptor_stays_pipelined_while_victims_are_still_releasing() -> None:
    low = [
        gang(
            f"low{i}",
            1,
            priority=1,
            phase=PodGroupPhase.RUNNING,
            # the first two are being evicted already
            status=TaskStatus.RELEASING if i < 2 else TaskStatus.RUNNING,
            on=["n0"],
        )
        for i in range(4)
    ]
    high = gang("high", 2, priority=100)
    snap = snapshot([node("n0", cpu=4)], [*low, high])
    snap.nominated = frozenset({"default/high"})
    result = schedule(snap, config())
    assert result.evictions == [] and result.binds == []
    assert result.nominated == ["default/high"]


def test_pending_single_pod_of_lower_priority_is_not_a_victim() -> None:
    low = gang("low", 1, priority=1)
    waiting = task("x", job=low.key)
    assert waiting.status is TaskStatus.PENDING
    high = gang("high", 5, priority=100)
    result = schedule(snapshot([node("n0", cpu=4)], [low, high]), config())
    assert result.evictions == []


def test_preemption_on_a_node_at_its_pod_limit_evicts_one_pod_per_pod_it_places() -> None:
    low = [running_gang(f"low{i}", 1, priority=1, on=["n0"]) for i in range(2)]
    high = gang("high", 1, priority=100)
    result = schedule(snapshot([node("n0", cpu=8, max_pods=2)], [*low, high]), config())
    assert len(result.evictions) == 1


def test_podgroup_enqueue_has_not_admitted_preempts_nothing() -> None:
    low = [running_gang(f"low{i}", 1, priority=1, on=["n0"]) for i in range(4)]
    # minResources beyond the cluster: enqueue keeps it Pending
    high = gang(
        "high", 1, priority=100, phase=PodGroupPhase.PENDING, min_resources=resources(cpu=64)
    )
    result = schedule(snapshot([node("n0", cpu=4)], [*low, high]), config())
    assert result.evictions == []


def test_unusable_podgroup_preempts_nothing() -> None:
    low = [running_gang(f"low{i}", 1, priority=1, on=["n0"]) for i in range(4)]
    high = gang("high", 1, priority=100)
    high.invalid = InvalidObject("PodGroup", high.key, "spec.minMember", -1, "must be 0+")
    result = schedule(snapshot([node("n0", cpu=4)], [*low, high]), config())
    assert result.evictions == []


def test_preemption_never_places_a_pod_against_its_required_anti_affinity() -> None:
    # n0's room is held by a low-priority pod, beside a pod labelled app=db; the preemptor
    # is anti-affine to app=db on the hostname: evicting the low pod would free room on
    # the one node it must not go to, so nothing is evicted.
    db = with_topology(task("db-0", 0.1, node_name="n0", status=TaskStatus.RUNNING), {"app": "db"})
    low = running_gang("low", 1, cpu=3, priority=1, on=["n0"])
    high = gang("high", 1, cpu=2, priority=100)
    gang_topology(high, {"app": "web"}, anti_affinity(term(labelSelector=match(app="db"))))
    snap = snapshot([node("n0", cpu=4, labels={HOST: "n0"})], [low, high])
    snap.nodes["n0"].add_task(db)

    result = schedule(snap, config())

    assert result.evictions == []
    assert result.binds == []
