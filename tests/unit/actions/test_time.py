"""Time rules: an admitted gang that cannot start gives its reservation back; a failing gang
backs off and never blocks the gangs behind it."""

from __future__ import annotations

from scheduler.api import wire
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.queue import QueueInfo
from scheduler.api.snapshot import PlacementFailures, build_snapshot
from scheduler.api.task import TaskStatus
from scheduler.api.timestamps import format_rfc3339
from scheduler.cache.world import World
from scheduler.engine import load_config, schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.decisions import SessionResult
from tests.unit.builders import gang, node, resources, snapshot

NOW = 1_800_000_000.0


def timeout_config(seconds: float = 60, base: float = 1, cap: float = 8) -> SchedulerConfig:
    return load_config(
        f"""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
- plugins: [{{name: drf}}, {{name: predicates}}, {{name: proportion}}, {{name: nodeorder}}]
configurations:
- name: enqueue
  arguments: {{inqueue-timeout: {seconds}}}
- name: allocate
  arguments: {{backoff-base: {base}, backoff-max: {cap}}}
"""
    )


def test_inqueue_gang_that_did_not_start_in_time_returns_to_pending_and_says_so() -> None:
    stuck = gang("stuck", 8, min_resources=resources(cpu=8))
    snap = snapshot([node("n0", cpu=4)], [stuck])
    snap.now = NOW
    snap.admitted_at = {stuck.key: NOW - 61}
    result = schedule(snap, timeout_config())
    (update,) = result.podgroups
    assert update.phase is PodGroupPhase.PENDING
    conditions = {c.type: c for c in update.conditions}
    assert conditions["Unschedulable"].reason == "InqueueTimeout"
    assert "could not start within 60s" in conditions["Unschedulable"].message
    # Recorded on the object, so that a restarted scheduler keeps the backoff.
    assert (conditions["Admitted"].status, conditions["Admitted"].reason) == (
        "False",
        "InqueueTimeout",
    )
    assert conditions["Admitted"].last_transition_time == format_rfc3339(NOW)
    assert result.dequeued == [stuck.key]


def test_gang_admitted_recently_keeps_its_reservation() -> None:
    stuck = gang("stuck", 8, min_resources=resources(cpu=8))
    snap = snapshot([node("n0", cpu=4)], [stuck])
    snap.now = NOW
    snap.admitted_at = {stuck.key: NOW - 59}
    result = schedule(snap, timeout_config())
    assert result.dequeued == []
    assert all(u.phase is PodGroupPhase.INQUEUE for u in result.podgroups)


def test_released_reservation_admits_the_next_gang_and_the_late_one_waits_its_turn() -> None:
    stuck = gang("stuck", 8, min_resources=resources(cpu=4), created="2026-01-01T00:00:00Z")
    waiting = gang(
        "next",
        2,
        phase=PodGroupPhase.PENDING,
        min_resources=resources(cpu=2),
        created="2026-01-01T00:00:01Z",
    )
    snap = snapshot([node("n0", cpu=4)], [stuck, waiting])
    snap.now = NOW
    snap.admitted_at = {stuck.key: NOW - 120}
    result = schedule(snap, timeout_config())
    assert {b.job for b in result.binds} == {waiting.key}
    assert result.admitted == [waiting.key]

    again = snapshot([node("n0", cpu=4)], [gang("stuck", 8, phase=PodGroupPhase.PENDING)])
    again.now = NOW + 30
    again.timed_out_at = {"default/stuck": NOW}
    assert schedule(again, timeout_config()).admitted == []
    again.now = NOW + 61
    assert schedule(again, timeout_config()).admitted == ["default/stuck"]


def test_big_unplaceable_gang_at_the_head_of_a_queue_does_not_block_the_gangs_behind_it() -> None:
    big = gang("big", 10, created="2026-01-01T00:00:00Z", priority=10)
    small = [gang(f"s{i}", 2, created=f"2026-01-01T00:00:0{i + 1}Z") for i in range(2)]
    result = schedule(snapshot([node("n0", cpu=4)], [big, *small]))
    assert {b.job for b in result.binds} == {"default/s0", "default/s1"}
    assert result.attempts["default/big"] is False


def test_failing_gang_is_retried_with_exponential_backoff() -> None:
    cfg = timeout_config(base=1, cap=8)
    for count, wait, due in (
        (1, 0.5, False),
        (1, 1.0, True),
        (3, 3.9, False),
        (3, 4.0, True),
        (10, 7.9, False),
        (10, 8.0, True),
    ):
        job = gang("g", 2)
        snap = snapshot([node("n0", cpu=4)], [job])
        snap.now = NOW + wait
        snap.failures = {job.key: PlacementFailures(count, NOW)}
        result = schedule(snap, cfg)
        assert bool(result.binds) is due, (count, wait)


def test_gang_waiting_out_its_backoff_still_counts_as_pending() -> None:
    # Not tried this session, so it gets no message; its pods wait all the same
    # (muster_pending_pods read 0 between two attempts of a gang that cannot fit).
    job = gang("g", 2, cpu=8)
    snap = snapshot([node("n0", cpu=4)], [job])
    snap.now = NOW + 0.5
    snap.failures = {job.key: PlacementFailures(1, NOW)}
    result = schedule(snap, timeout_config())
    assert result.attempts == {}
    assert result.unschedulable == []
    assert result.pending == 2


def test_nominated_gang_ignores_its_backoff() -> None:
    job = gang("g", 2)
    snap = snapshot([node("n0", cpu=4)], [job])
    snap.now = NOW
    snap.failures = {job.key: PlacementFailures(5, NOW)}
    snap.nominated = frozenset({job.key})
    assert len(schedule(snap, timeout_config()).binds) == 2


def test_cache_counts_failures_clears_them_on_success_and_when_room_frees() -> None:
    world = World()
    failed = SessionResult(attempts={"ns/a": False, "ns/b": False})
    world.record_session(failed, NOW)
    world.record_session(SessionResult(attempts={"ns/a": False, "ns/b": True}), NOW + 1)
    snap = world.snapshot(NOW + 2)
    assert snap.failures == {"ns/a": PlacementFailures(2, NOW + 1)}
    assert snap.now == NOW + 2
    world.room_freed()
    assert world.snapshot().failures == {}


def test_cache_times_admissions_and_timeouts() -> None:
    world = World()
    world.record_session(SessionResult(admitted=["ns/a"]), NOW)
    world.record_session(SessionResult(admitted=["ns/a"]), NOW + 5)
    assert world.snapshot().admitted_at == {"ns/a": NOW}
    world.record_session(SessionResult(dequeued=["ns/a"]), NOW + 9)
    snap = world.snapshot()
    assert snap.admitted_at == {} and snap.timed_out_at == {"ns/a": NOW + 9}


def podgroup(phase: str, admitted: str, reason: str, seconds_ago: float) -> wire.PodGroup:
    """A PodGroup as the API server holds it after a restart, with its Admitted condition."""
    return wire.from_dict(
        {
            "metadata": {"name": "stuck", "namespace": "default", "uid": "pg-1"},
            "spec": {"minMember": 8, "minResources": {"cpu": "2"}},
            "status": {
                "phase": phase,
                "conditions": [
                    {
                        "type": "Admitted",
                        "status": admitted,
                        "reason": reason,
                        "lastTransitionTime": format_rfc3339(NOW - seconds_ago),
                    }
                ],
            },
        },
        wire.PodGroup,
    )


def after_restart(group: wire.PodGroup, now: float) -> SessionResult:
    nodes = [
        wire.from_dict(
            {
                "metadata": {"name": "n0"},
                "status": {
                    "allocatable": {"cpu": "4", "memory": "16Gi"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            },
            wire.Node,
        )
    ]
    snap = build_snapshot(podgroups=[group], nodes=nodes)
    snap.queues.setdefault("default", QueueInfo("default"))
    snap.now = now
    return schedule(snap, timeout_config())


def test_admission_time_read_back_from_the_podgroup_times_out_at_the_right_moment() -> None:
    # The process restarted: it knows nothing of the admission but what the object says.
    assert after_restart(podgroup("Inqueue", "True", "Enqueued", 59), NOW).dequeued == []
    assert after_restart(podgroup("Inqueue", "True", "Enqueued", 61), NOW).dequeued == [
        "default/stuck"
    ]


def test_timed_out_podgroup_read_back_after_a_restart_waits_out_its_backoff() -> None:
    late = podgroup("Pending", "False", "InqueueTimeout", 30)
    assert after_restart(late, NOW).admitted == []
    assert after_restart(late, NOW + 31).admitted == ["default/stuck"]


def test_admitted_condition_keeps_its_time_while_the_gang_stays_admitted() -> None:
    group = podgroup("Inqueue", "True", "Enqueued", 10)
    result = after_restart(group, NOW)
    for update in result.podgroups:
        admitted = next(c for c in update.conditions if c.type == "Admitted")
        assert admitted.last_transition_time == format_rfc3339(NOW - 10)


def test_admission_records_the_session_time_on_the_podgroup() -> None:
    job = gang("fresh", 2, phase=PodGroupPhase.PENDING, min_resources=resources(cpu=2))
    snap = snapshot([node("n0", cpu=4)], [job])
    snap.now = NOW
    (update,) = schedule(snap, timeout_config()).podgroups
    admitted = next(c for c in update.conditions if c.type == "Admitted")
    assert (admitted.status, admitted.last_transition_time) == ("True", format_rfc3339(NOW))


def test_inqueue_timeout_of_zero_never_sends_an_admitted_gang_back() -> None:
    stuck = gang("stuck", 8, min_resources=resources(cpu=8))
    snap = snapshot([node("n0", cpu=4)], [stuck])
    snap.now = NOW
    snap.admitted_at = {stuck.key: NOW - 100_000}
    result = schedule(snap, timeout_config(seconds=0))
    assert result.dequeued == []


def test_admission_expires_exactly_inqueue_timeout_seconds_after_it_and_a_started_gang_never() -> (
    None
):
    started = gang(
        "started", 1, min_resources=resources(cpu=1), status=TaskStatus.RUNNING, on=["n0"]
    )
    stuck = gang("stuck", 8, min_resources=resources(cpu=8))
    snap = snapshot([node("n0", cpu=4)], [started, stuck])
    snap.now = NOW
    snap.admitted_at = {started.key: NOW - 600, stuck.key: NOW - 60}
    result = schedule(snap, timeout_config(seconds=60))
    assert result.dequeued == [stuck.key]


def test_gang_sent_back_is_admitted_again_exactly_inqueue_timeout_seconds_later() -> None:
    late = gang("late", 2, phase=PodGroupPhase.PENDING, min_resources=resources(cpu=2))
    snap = snapshot([node("n0", cpu=4)], [late])
    snap.now = NOW
    snap.timed_out_at = {late.key: NOW - 60}
    result = schedule(snap, timeout_config(seconds=60))
    assert result.admitted == [late.key]


def test_every_admission_that_ran_out_expires_not_only_the_first_and_says_what_happened() -> None:
    started = gang("a-started", 2, statuses=[TaskStatus.RUNNING], on=["n0"])
    late = [gang(f"b-late-{i}", 8, min_resources=resources(cpu=8)) for i in range(2)]
    snap = snapshot([node("n0", cpu=4)], [started, *late])
    snap.now = NOW
    snap.admitted_at = {job.key: NOW - 2 for job in (started, *late)}

    result = schedule(snap, timeout_config(seconds=1))

    assert sorted(result.dequeued) == sorted(job.key for job in late)
    for update in (u for u in result.podgroups if u.name.startswith("b-late")):
        message = {c.reason: c.message for c in update.conditions}["InqueueTimeout"]
        assert message == (
            "the gang could not start within 1s of being admitted; it returned to Pending "
            "and released its reservation of minResources"
        )


def test_gang_sent_back_whose_write_was_lost_is_sent_back_again() -> None:
    # The session sent it back; the PodGroup's write failed (a 429), so the object still
    # says Inqueue and the cache no longer times its admission: it must not stay Inqueue.
    stuck = gang("stuck", 8, min_resources=resources(cpu=8))
    snap = snapshot([node("n0", cpu=4)], [stuck])
    snap.now = NOW
    snap.timed_out_at = {stuck.key: NOW - 1}
    result = schedule(snap, timeout_config())
    assert result.dequeued == [stuck.key]
    (update,) = result.podgroups
    assert update.phase is PodGroupPhase.PENDING


def test_inqueue_gang_with_no_known_admission_is_timed_from_now() -> None:
    # Inqueue, and neither this process nor an Admitted condition says since when: the
    # timeout starts now rather than never.
    stuck = gang("stuck", 8, min_resources=resources(cpu=8))
    snap = snapshot([node("n0", cpu=4)], [stuck])
    snap.now = NOW
    result = schedule(snap, timeout_config())
    assert result.dequeued == [] and result.admitted == [stuck.key]
    world = World()
    world.record_session(result, NOW)
    later = snapshot([node("n0", cpu=4)], [gang("stuck", 8, min_resources=resources(cpu=8))])
    later.now = NOW + 61
    later.admitted_at = dict(world.snapshot().admitted_at)
    assert schedule(later, timeout_config()).dequeued == [stuck.key]
