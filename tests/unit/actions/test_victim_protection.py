"""What spares a running pod from preempt and reclaim: PodDisruptionBudgets, minimum
runtimes and cooldowns, and volcano.sh/preemptable (actions/protection.py)."""

from __future__ import annotations

from scheduler.api.annotations import PodProtection
from scheduler.api.budgets import DisruptionBudget
from scheduler.api.job import JobInfo
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.timestamps import format_rfc3339
from scheduler.engine import load_config, schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.decisions import SessionResult
from tests.unit.actions.eviction_helpers import TIERS, config, evicted_by_job
from tests.unit.builders import budget, gang, node, queue, running_gang, snapshot

NOW = 1_800_000_000.0
STARTED_LONG_AGO = format_rfc3339(NOW - 3600)
CREATED = format_rfc3339(NOW - 5)


def one_node(*jobs: JobInfo, budgets: tuple[DisruptionBudget, ...] = ()) -> ClusterSnapshot:
    """One node of 4 cpu holding the jobs' running pods, and the budgets."""
    snap = snapshot([node("n0", cpu=4)], list(jobs))
    snap.now = NOW
    snap.budgets = {"default": budgets} if budgets else {}
    return snap


def low(name: str, priority: int = 1, **kwargs: object) -> JobInfo:
    """A one-pod low-priority job running on n0 for an hour, labelled app=<name>."""
    values: dict[str, object] = {
        "priority": priority,
        "on": ["n0"],
        "labels": {"app": name},
        "started": STARTED_LONG_AGO,
        "created": STARTED_LONG_AGO,
        "cpu": 2,
    }
    values.update(kwargs)
    return running_gang(name, 1, **values)  # type: ignore[arg-type]


def preemptor(cpu: float = 2) -> JobInfo:
    return gang("high", 1, cpu=cpu, priority=100, created=CREATED)


def condition_message(result: SessionResult, name: str) -> str:
    update = next(u for u in result.podgroups if u.name == name)
    return next(c.message for c in update.conditions if c.type == "Unschedulable")


def test_the_victim_whose_budget_allows_it_goes_before_a_lower_priority_one_whose_does_not() -> (
    None
):
    guarded = low("guarded", priority=1)
    allowed = low("allowed", priority=5)
    snap = one_node(
        guarded,
        allowed,
        preemptor(),
        budgets=(
            budget("guarded", {"app": "guarded"}, 0),
            budget("allowed", {"app": "allowed"}, 1),
        ),
    )
    result = schedule(snap, config())
    assert evicted_by_job(result) == {allowed.key: 1}
    (eviction,) = result.evictions
    assert eviction.preemptor == "default/high"


def test_with_every_victim_guarded_nothing_is_evicted_and_the_preemptor_says_which_budget() -> None:
    snap = one_node(low("a"), low("b"), preemptor(), budgets=(budget("apps", {"tier": "x"}, 0),))
    for job in snap.jobs.values():
        for member in job.tasks.values():
            if job.name != "high":
                member.labels = {"tier": "x"}
    result = schedule(snap, config())
    assert result.evictions == []
    message = condition_message(result, "high")
    assert "2 pod(s): PodDisruptionBudget default/apps allows no disruption now" in message


def test_a_budget_counts_every_victim_of_the_session() -> None:
    # One budget over both pods allows one disruption: a preemptor needing both evicts none.
    a, b = low("a"), low("b")
    snap = one_node(a, b, preemptor(cpu=4), budgets=(budget("both", {"team": "t"}, 1),))
    for job in (a, b):
        for member in job.tasks.values():
            member.labels = {"team": "t"}
    result = schedule(snap, config())
    assert result.evictions == []
    assert "allows 1 disruption(s) now" in condition_message(result, "high")


def test_a_budget_the_disruption_controller_has_not_processed_allows_nothing() -> None:
    snap = one_node(
        low("a", cpu=4), preemptor(), budgets=(budget("a", {"app": "a"}, 3, processed=False),)
    )
    result = schedule(snap, config())
    assert result.evictions == []
    assert "is kube-controller-manager running?" in condition_message(result, "high")


def test_a_pod_two_budgets_cover_is_never_a_victim() -> None:
    snap = one_node(
        low("a", cpu=4),
        preemptor(),
        budgets=(budget("one", {"app": "a"}, 1), budget("two", {"app": "a"}, 1)),
    )
    result = schedule(snap, config())
    assert result.evictions == []
    assert "more than one PodDisruptionBudget covers it" in condition_message(result, "high")


def runtime_config(action: str, argument: str, value: str) -> SchedulerConfig:
    return load_config(
        f'actions: "enqueue, allocate, preempt, reclaim, backfill"\n{TIERS}'
        f"configurations:\n- name: {action}\n  arguments: {{{argument}: {value}}}\n"
    )


def test_preempt_spares_pods_under_its_minimum_runtime_and_takes_older_ones() -> None:
    young = low("young", started=format_rfc3339(NOW - 30))
    old = low("old", priority=5)
    snap = one_node(young, old, preemptor())
    result = schedule(snap, runtime_config("preempt", "preemptMinRuntime", "5m"))
    assert evicted_by_job(result) == {old.key: 1}
    without = schedule(
        one_node(
            low("young", started=format_rfc3339(NOW - 30)), low("old", priority=5), preemptor()
        ),
        config(),
    )
    assert evicted_by_job(without) == {"default/young": 1}


def test_a_pod_with_no_start_time_yet_has_run_for_no_time() -> None:
    unstarted = low("unstarted", started="", cpu=4)
    result = schedule(
        one_node(unstarted, preemptor()), runtime_config("preempt", "preemptMinRuntime", "1s")
    )
    assert result.evictions == []
    assert "under its minimum runtime of 1s" in condition_message(result, "high")


def test_the_cooldown_annotation_spares_a_pod_for_its_duration() -> None:
    cooling = low(
        "cooling", started=format_rfc3339(NOW - 60), protection=PodProtection(cooldown=600)
    )
    cooled = low(
        "cooled",
        priority=5,
        started=format_rfc3339(NOW - 700),
        protection=PodProtection(cooldown=600),
    )
    result = schedule(one_node(cooling, cooled, preemptor()), config())
    assert evicted_by_job(result) == {cooled.key: 1}


def test_a_pod_that_says_it_is_not_preemptable_is_spared() -> None:
    kept = low("kept", protection=PodProtection(preemptable=False))
    taken = low("taken", priority=5)
    result = schedule(one_node(kept, taken, preemptor()), config())
    assert evicted_by_job(result) == {taken.key: 1}


def test_a_podgroup_that_says_it_is_not_preemptable_keeps_all_its_pods() -> None:
    from scheduler.api.annotations import GroupSettings

    kept = low("kept")
    kept.settings = GroupSettings(preemptable=False)
    taken = low("taken", priority=5)
    result = schedule(one_node(kept, taken, preemptor()), config())
    assert evicted_by_job(result) == {taken.key: 1}


def test_reclaim_has_its_own_minimum_runtime() -> None:
    def cluster() -> ClusterSnapshot:
        # Queue "other" holds the whole node; "default" deserves half and wants 2 cpu.
        young = low("young", queue="other", created=CREATED, started=format_rfc3339(NOW - 30))
        old = low("old", queue="other")
        snap = one_node(young, old, gang("want", 1, cpu=2, created=CREATED))
        snap.queues["other"] = queue("other")
        return snap

    assert evicted_by_job(schedule(cluster(), config())) == {"default/young": 1}
    spared = schedule(cluster(), runtime_config("reclaim", "reclaimMinRuntime", "120"))
    assert evicted_by_job(spared) == {"default/old": 1}
    # preempt's minimum does not bind reclaim.
    other = schedule(cluster(), runtime_config("preempt", "preemptMinRuntime", "120"))
    assert evicted_by_job(other) == {"default/young": 1}


def test_the_eviction_apis_last_refusal_is_said_on_the_preemptor() -> None:
    snap = one_node(low("a", cpu=4), preemptor())
    snap.eviction_refusals = {"default/high": "the Eviction API refused default/a-0: budget"}
    snap.budgets = {"default": (budget("a", {"app": "a"}, 0),)}
    result = schedule(snap, config())
    assert "the Eviction API refused default/a-0: budget" in condition_message(result, "high")


def test_a_pod_bound_but_not_started_is_evicted_whatever_its_budget_says() -> None:
    from scheduler.api.podgroup import PodGroupPhase
    from scheduler.api.task import TaskStatus

    waiting = gang(
        "waiting",
        1,
        cpu=4,
        priority=1,
        phase=PodGroupPhase.RUNNING,
        status=TaskStatus.BOUND,
        on=["n0"],
        labels={"app": "waiting"},
        created=STARTED_LONG_AGO,
    )
    snap = one_node(waiting, preemptor(), budgets=(budget("waiting", {"app": "waiting"}, 0),))
    result = schedule(snap, config())
    assert evicted_by_job(result) == {waiting.key: 1}
