"""capacity: spec.deserved per resource, borrowing up to capability, reclaim back to deserved."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from scheduler.api.errors import ConfigError
from scheduler.api.job import JobInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.queue import QueueInfo, QueueState
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskStatus
from scheduler.engine import load_config, schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.decisions import SessionResult
from tests.unit.actions.eviction_helpers import evicted_by_job
from tests.unit.builders import gang, node, queue, resources, running_gang, snapshot, task

# Volcano's capacity plugin user guide (docs/user-guide/how_to_use_capacity_plugin.md),
# verbatim: the stock tiers with capacity in place of proportion and reclaim added.
VOLCANO_CAPACITY_GUIDE_CONF = """\
actions: "enqueue, allocate, backfill, reclaim" # add reclaim action.
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: capacity # add this field and remove proportion plugin.
  - name: nodeorder
  - name: binpack
"""

# The same guide's hierarchical example.
VOLCANO_CAPACITY_HIERARCHY_CONF = """\
actions: "enqueue, allocate, backfill, reclaim" # add reclaim action.
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: capacity # add this field and remove proportion plugin.
    enableHierarchy: true
    arguments:
      # Controls how far reclaim can cross queue hierarchy boundaries.
      # 0: no ancestor restriction (default behavior)
      # 1: adds parent-level deserved checks for cross-parent reclaim
      # 2: adds grandparent-level deserved checks, and so on for larger levels
      ancestorReclaimLevel: 1
  - name: nodeorder
  - name: binpack
"""


def capacity_config(*, hierarchy: bool = False) -> SchedulerConfig:
    return load_config(
        VOLCANO_CAPACITY_HIERARCHY_CONF if hierarchy else VOLCANO_CAPACITY_GUIDE_CONF
    )


def deserving(name: str, cpu: float = 0, **kwargs: object) -> QueueInfo:
    """A queue whose spec.deserved names cpu (and any extended resource given)."""
    scalars = {k: v for k, v in kwargs.items() if k == "gpu"}
    rest = {k: v for k, v in kwargs.items() if k != "gpu"}
    return queue(name, deserved=resources(cpu=cpu, **scalars), **rest)  # type: ignore[arg-type]


def one_pod_jobs(
    queue_name: str, count: int, *, cpu: float = 1, gpu: int = 0, running_on: Sequence[str] = ()
) -> list[JobInfo]:
    """One-pod gangs of the queue, oldest first; with `running_on`, each gang Running on
    those nodes in turn."""
    jobs = []
    for i in range(count):
        on = [running_on[i % len(running_on)]] if running_on else []
        jobs.append(
            gang(
                f"{queue_name}-{i}",
                1,
                cpu,
                queue=queue_name,
                gpu=gpu,
                created=f"2026-01-01T00:00:{i:02d}Z",
                phase=PodGroupPhase.RUNNING if on else PodGroupPhase.INQUEUE,
                status=TaskStatus.RUNNING if on else None,
                on=on,
            )
        )
    return jobs


def binds_per_queue(result: SessionResult) -> dict[str, int]:
    counts: dict[str, int] = {}
    for bind in result.binds:
        name = bind.job.split("/")[1].rsplit("-", 1)[0]
        counts[name] = counts.get(name, 0) + 1
    return counts


def borrowed_cluster(b_pending: int, *, b_deserved: float = 6) -> ClusterSnapshot:
    # queue a (deserved 2 cpu) runs eight one-cpu pods: it borrowed b's idle share.
    a_jobs = one_pod_jobs("a", 8, running_on=["n0", "n1"])
    return snapshot(
        [node("n0", cpu=4), node("n1", cpu=4)],
        [*a_jobs, *one_pod_jobs("b", b_pending)],
        [deserving("a", 2), deserving("b", b_deserved)],
    )


def conditions(result: SessionResult, name: str) -> dict[str, str]:
    update = next(u for u in result.podgroups if u.name == name)
    return {c.reason: c.message for c in update.conditions}


# Config --------------------------------------------------------------------------
def test_volcano_capacity_guide_configs_load_verbatim() -> None:
    flat = capacity_config()
    assert flat.actions == ["enqueue", "allocate", "backfill", "reclaim"]
    tree = capacity_config(hierarchy=True)
    (option,) = [p for t in tree.tiers for p in t.plugins if p.name == "capacity"]
    assert option.enable_hierarchy is True
    assert option.parsed_arguments.ancestor_reclaim_level == 1  # type: ignore[union-attr]


def test_config_enabling_both_proportion_and_capacity_is_refused_naming_both() -> None:
    text = VOLCANO_CAPACITY_GUIDE_CONF.replace(
        "  - name: nodeorder", "  - name: proportion\n  - name: nodeorder"
    )
    with pytest.raises(ConfigError, match="'proportion' and 'capacity' cannot be used together"):
        load_config(text)


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        ("{ancestorReclaimLevel: -1}", "ancestorReclaimLevel=-1"),
        ("{capacity.DRAConsumableCapacityEnable: true}", "consumable capacity"),
        ("{depth: 2}", "not an argument of plugin capacity"),
    ],
)
def test_capacity_arguments_muster_cannot_honour_are_refused_at_load(
    arguments: str, complaint: str
) -> None:
    text = VOLCANO_CAPACITY_GUIDE_CONF.replace(
        "  - name: capacity # add this field and remove proportion plugin.",
        f"  - name: capacity\n    arguments: {arguments}",
    )
    with pytest.raises(ConfigError, match=complaint):
        load_config(text)


# Deserved, borrowing, capability ----------------------------------------------------
def test_saturated_cluster_is_split_by_each_queues_deserved_cpu() -> None:
    snap = snapshot(
        [node("n0", cpu=4), node("n1", cpu=4)],
        [*one_pod_jobs("a", 10), *one_pod_jobs("b", 10)],
        [deserving("a", 2), deserving("b", 6)],
    )
    assert binds_per_queue(schedule(snap, capacity_config())) == {"a": 2, "b": 6}


def test_queue_borrows_idle_room_beyond_its_deserved() -> None:
    # the user guide's first step: queue2 is idle, so queue1 runs on the whole cluster
    snap = snapshot(
        [node("n0", cpu=4), node("n1", cpu=4)],
        one_pod_jobs("a", 10),
        [deserving("a", 2), deserving("b", 6)],
    )
    assert binds_per_queue(schedule(snap, capacity_config())) == {"a": 8}


def test_capability_caps_a_queue_even_when_the_cluster_is_idle() -> None:
    capped = deserving("a", 2, capability=resources(cpu=3))
    snap = snapshot([node("n0", cpu=8)], one_pod_jobs("a", 6), [capped])
    result = schedule(snap, capacity_config())
    assert binds_per_queue(result) == {"a": 3}
    held = conditions(result, "a-3")
    assert "cpu would exceed what it may hold" in held["QueueCapacityExceeded"]


def test_other_queues_guarantees_are_kept_out_of_reach() -> None:
    # b guarantees 3 cpu: a may hold at most 8 - 3 even while b is idle
    snap = snapshot(
        [node("n0", cpu=8)],
        one_pod_jobs("a", 8),
        [deserving("a", 2), deserving("b", 3, guarantee=resources(cpu=3))],
    )
    assert binds_per_queue(schedule(snap, capacity_config())) == {"a": 5}


def test_queue_below_its_deserved_is_served_before_a_best_effort_queue() -> None:
    # "free" has no deserved (best effort): it only gets what "paid" does not want
    snap = snapshot(
        [node("n0", cpu=4)],
        [*one_pod_jobs("free", 4), *one_pod_jobs("paid", 3)],
        [queue("free"), deserving("paid", 4)],
    )
    assert binds_per_queue(schedule(snap, capacity_config())) == {"paid": 3, "free": 1}


def test_gpu_dimension_unnamed_in_deserved_may_still_be_borrowed_while_idle() -> None:
    snap = snapshot(
        [node("g0", cpu=8, gpu=4)],
        one_pod_jobs("a", 3, gpu=1),
        [deserving("a", 4), deserving("b", 4)],
    )
    assert binds_per_queue(schedule(snap, capacity_config())) == {"a": 3}


# Reclaim ---------------------------------------------------------------------------
def test_queue_below_its_deserved_reclaims_exactly_back_to_it() -> None:
    result = schedule(borrowed_cluster(b_pending=8), capacity_config())
    # b deserves 6 of a's 8 borrowed cpu; a keeps its deserved 2
    assert len(result.evictions) == 6
    assert all(e.job.startswith("default/a-") for e in result.evictions)
    assert "reclaimed by queue 'b'" in result.evictions[0].reason


def test_reclaimer_takes_only_what_it_asks_for_within_its_deserved() -> None:
    result = schedule(borrowed_cluster(b_pending=2), capacity_config())
    assert len(result.evictions) == 2


def test_queue_at_its_deserved_reclaims_nothing() -> None:
    a_jobs = one_pod_jobs("a", 2, running_on=["n0"])
    b_jobs = one_pod_jobs("b", 2, running_on=["n1"])
    snap = snapshot(
        [node("n0", cpu=2), node("n1", cpu=2)],
        [*a_jobs, *b_jobs, *one_pod_jobs("b-more", 2)],
        [deserving("a", 2), deserving("b", 2), deserving("b-more", 0)],
    )
    assert schedule(snap, capacity_config()).evictions == []


def test_lender_keeps_its_guarantee_when_reclaimed_from() -> None:
    a_jobs = one_pod_jobs("a", 8, running_on=["n0", "n1"])
    lender = deserving("a", 2, guarantee=resources(cpu=5))
    snap = snapshot(
        [node("n0", cpu=4), node("n1", cpu=4)],
        [*a_jobs, *one_pod_jobs("b", 8)],
        [lender, deserving("b", 6)],
    )
    # b deserves 6 but a's guarantee of 5 leaves only 3 to take
    assert len(schedule(snap, capacity_config()).evictions) == 3


def test_gpu_pods_of_a_queue_that_deserves_no_gpu_are_reclaimed_for_one_that_does() -> None:
    # a deserves cpu only and borrowed every GPU; b deserves 2 GPUs
    a_jobs = one_pod_jobs("a", 4, cpu=0, gpu=1, running_on=["g0"])
    snap = snapshot(
        [node("g0", cpu=8, gpu=4)],
        [*a_jobs, *one_pod_jobs("b", 4, cpu=0, gpu=1)],
        [deserving("a", 4), deserving("b", 0, gpu=2)],
    )
    result = schedule(snap, capacity_config())
    assert len(result.evictions) == 2
    assert set(evicted_by_job(result)) <= {j.key for j in a_jobs}


def test_queue_that_deserves_no_gpu_cannot_reclaim_gpus() -> None:
    b_jobs = one_pod_jobs("b", 4, cpu=0, gpu=1, running_on=["g0"])
    snap = snapshot(
        [node("g0", cpu=8, gpu=4)],
        [*b_jobs, *one_pod_jobs("a", 2, cpu=0, gpu=1)],
        [deserving("a", 4), deserving("b", 0, gpu=2)],
    )
    assert schedule(snap, capacity_config()).evictions == []


def test_pods_of_one_victim_job_add_up_against_the_lenders_deserved() -> None:
    # a runs one elastic job of eight one-cpu pods and deserves 7: it can lend only one
    # cpu, so a two-cpu pod of b finds no node where two of a's pods may go
    elastic = running_gang("a-elastic", 8, min_member=1, queue="a", on=["n0"])
    snap = snapshot(
        [node("n0", cpu=8)],
        [elastic, gang("b-0", 1, cpu=2, queue="b")],
        [deserving("a", 7), deserving("b", 2)],
    )
    assert schedule(snap, capacity_config()).evictions == []


def test_victim_sharing_no_resource_with_the_reclaimer_is_not_evicted() -> None:
    # the node is at its pod limit: evicting a cpu pod would free a slot, but b asks
    # for a GPU only, and Volcano never reclaims a pod that shares no resource with it
    a_jobs = one_pod_jobs("a", 8, running_on=["g0"])
    snap = snapshot(
        [node("g0", cpu=16, gpu=1, max_pods=8)],
        [*a_jobs, *one_pod_jobs("b", 1, cpu=0, gpu=1)],
        [deserving("a", 2), deserving("b", 0, gpu=1)],
    )
    assert schedule(snap, capacity_config()).evictions == []


def test_queue_that_is_not_reclaimable_keeps_what_it_borrowed() -> None:
    snap = borrowed_cluster(b_pending=4)
    snap.queues["a"].reclaimable = False
    assert schedule(snap, capacity_config()).evictions == []


# Admission and queue state ----------------------------------------------------------
def test_enqueue_checks_capability_not_deserved() -> None:
    # Volcano's case: past its deserved cpu, a job within the capability is admitted
    within = gang("fits", 2, queue="a", phase=PodGroupPhase.PENDING, min_resources=resources(cpu=4))
    over = gang(
        "too-big", 2, queue="c", phase=PodGroupPhase.PENDING, min_resources=resources(cpu=4)
    )
    snap = snapshot(
        [node("n0", cpu=8)],
        [within, over],
        [deserving("a", 1), deserving("c", 1, capability=resources(cpu=3))],
    )
    result = schedule(snap, load_config('actions: "enqueue"\n' + _tiers()))
    assert result.admitted == [within.key]
    assert "insufficient cpu" in conditions(result, "too-big")["QueueCapacityExceeded"]


def test_podgroup_naming_an_unknown_queue_is_not_admitted_and_says_so() -> None:
    job = gang("lost", 1, queue="nope", phase=PodGroupPhase.PENDING)
    result = schedule(snapshot([node("n0")], [job]), capacity_config())
    assert result.admitted == [] and result.binds == []
    assert "queue 'nope' does not exist" in conditions(result, "lost")["QueueNotFound"]


def test_closing_queue_admits_nothing_and_places_nothing_not_even_for_a_running_gang() -> None:
    shut = deserving("shut", 4, state=QueueState.CLOSING)
    pending = gang("new", 1, queue="shut", phase=PodGroupPhase.PENDING)
    elastic = running_gang("elastic", 1, queue="shut", on=["n0"])
    elastic.add_task(task("elastic-more", job=elastic.key))
    result = schedule(snapshot([node("n0")], [pending, elastic], [shut]), capacity_config())
    assert result.admitted == [] and result.binds == []
    assert "'shut' is Closing" in conditions(result, "new")["QueueNotOpen"]
    (message,) = [m for m in result.unschedulable if m.name == "elastic-more"]
    assert "the capacity plugin places no pod in it" in message.message


# Hierarchy -------------------------------------------------------------------------
def test_hierarchy_caps_a_leaf_by_its_parents_capability() -> None:
    queues = [
        deserving("eng", 4, capability=resources(cpu=3)),
        deserving("ml", 4, parent="eng"),
    ]
    snap = snapshot([node("n0", cpu=8)], one_pod_jobs("ml", 6), queues)
    result = schedule(snap, capacity_config(hierarchy=True))
    # ml names no capability of its own: it gets its parent's
    assert binds_per_queue(result) == {"ml": 3}
    assert "may hold, cpu 3," in conditions(result, "ml-3")["QueueCapacityExceeded"]


def test_hierarchy_splits_by_deserved_between_subtrees() -> None:
    queues = [
        deserving("eng", 6),
        deserving("ops", 2),
        deserving("ml", 3, parent="eng"),
        deserving("web", 3, parent="eng"),
    ]
    jobs = [*one_pod_jobs("ml", 8), *one_pod_jobs("web", 8), *one_pod_jobs("ops", 8)]
    result = schedule(snapshot([node("n0", cpu=8)], jobs, queues), capacity_config(hierarchy=True))
    assert binds_per_queue(result) == {"ml": 3, "web": 3, "ops": 2}


def test_hierarchy_refuses_podgroups_in_a_queue_with_children() -> None:
    queues = [deserving("eng", 4), deserving("ml", 4, parent="eng")]
    job = gang("at-parent", 1, queue="eng", phase=PodGroupPhase.PENDING)
    result = schedule(snapshot([node("n0")], [job], queues), capacity_config(hierarchy=True))
    assert result.admitted == []
    assert (
        "set spec.queue to one of its leaves (ml)"
        in conditions(result, "at-parent")["QueueNotLeaf"]
    )


def test_hierarchy_refuses_a_queue_whose_parent_does_not_exist() -> None:
    orphan = deserving("ml", 4, parent="gone")
    job = gang("a", 1, queue="ml", phase=PodGroupPhase.PENDING)
    result = schedule(snapshot([node("n0")], [job], [orphan]), capacity_config(hierarchy=True))
    assert result.admitted == []
    assert (
        "spec.parent 'gone', which does not exist" in conditions(result, "a")["QueueParentInvalid"]
    )


def parent_at_its_deserved() -> ClusterSnapshot:
    # eng deserves 4 and holds 4, all in ml (which deserves 1); ops holds 3 of its 4
    queues = [
        deserving("eng", 4),
        deserving("ml", 1, parent="eng"),
        deserving("web", 3, parent="eng"),
        deserving("ops", 4),
    ]
    ml = one_pod_jobs("ml", 4, running_on=["n0"])
    ops = one_pod_jobs("ops", 3, running_on=["n0"])
    more = gang("ops-more", 1, queue="ops", created="2026-01-02T00:00:00Z")
    return snapshot([node("n0", cpu=7)], [*ml, *ops, more], queues)


def test_ancestor_reclaim_level_keeps_a_parent_at_its_deserved_from_being_reclaimed() -> None:
    result = schedule(parent_at_its_deserved(), capacity_config(hierarchy=True))
    assert result.evictions == []


def test_without_ancestor_reclaim_level_the_leaf_over_its_deserved_is_reclaimed() -> None:
    text = VOLCANO_CAPACITY_HIERARCHY_CONF.replace(
        "ancestorReclaimLevel: 1", "ancestorReclaimLevel: 0"
    )
    result = schedule(parent_at_its_deserved(), load_config(text))
    assert [e.job for e in result.evictions] == ["default/ml-3"]


# Fields capacity does not use are named ----------------------------------------------
def test_queue_weight_and_parent_unused_by_flat_capacity_get_warnings() -> None:
    queues = [queue("heavy", 3), deserving("child", 2, parent="heavy")]
    result = schedule(snapshot([node("n0")], [], queues), capacity_config())
    warned = {(r.name, r.reason): r.message for r in result.invalid}
    assert "spec.weight=3 is not used by the capacity plugin" in warned[("heavy", "NotHonouredYet")]
    assert "only with enableHierarchy: true" in warned[("child", "NotHonouredYet")]


def test_proportion_warns_that_spec_deserved_needs_the_capacity_plugin() -> None:
    result = schedule(snapshot([node("n0")], [], [deserving("q", 2), queue("plain")]))
    (report,) = [r for r in result.invalid if r.kind == "Queue"]
    assert (report.name, report.reason) == ("q", "NotHonouredYet")
    assert "spec.deserved is honoured only with the capacity plugin" in report.message
    assert "spec.weight" in report.message


def _tiers() -> str:
    return VOLCANO_CAPACITY_GUIDE_CONF[VOLCANO_CAPACITY_GUIDE_CONF.index("tiers:") :]


def test_parent_whose_children_deserve_more_than_it_does_gets_a_warning() -> None:
    queues = [
        deserving("eng", 4),
        deserving("ml", 3, parent="eng"),
        deserving("web", 3, parent="eng"),
    ]
    result = schedule(snapshot([node("n0", cpu=8)], [], queues), capacity_config(hierarchy=True))
    (report,) = [r for r in result.invalid if r.reason == "DeservedExceedsParent"]
    assert report.name == "eng" and "adds up to cpu 6" in report.message
