"""How one session's result, the cache and the reflectors map onto muster's series."""

from __future__ import annotations

import pytest

from scheduler.api.resources import UNLIMITED, Resource
from scheduler.framework.decisions import PodUnschedulable, QueueStatusUpdate, SessionResult
from scheduler.metrics import Metrics

GPU = "nvidia.com/gpu"


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def pending(name: str, reason: str = "Unschedulable") -> PodUnschedulable:
    return PodUnschedulable("ml", name, f"uid-{name}", "ml/train", reason, "0/2 nodes fit")


def queue(
    name: str,
    *,
    allocated: Resource,
    deserved: Resource | None = None,
    podgroups: dict[str, int] | None = None,
    request: Resource | None = None,
    capability: Resource | None = None,
) -> QueueStatusUpdate:
    return QueueStatusUpdate(
        name, "Open", allocated, deserved, podgroups or {}, request, capability
    )


def test_a_session_is_timed_whole_per_action_and_per_plugin() -> None:
    metrics = Metrics()
    result = SessionResult(timings={"allocate": 0.02, "plugin:gang": 0.003})
    metrics.observe_session(result, decide_seconds=0.03, total_seconds=0.05)
    assert value(metrics, "muster_scheduling_attempt_duration_seconds_sum") == 0.03
    assert value(metrics, "muster_session_duration_seconds_sum") == 0.05
    assert value(metrics, "muster_action_duration_seconds_sum", action="allocate") == 0.02
    assert value(metrics, "muster_plugin_duration_seconds_sum", plugin="gang") == 0.003
    assert value(metrics, "muster_action_duration_seconds_count", action="plugin:gang") is None


def test_only_unschedulable_pods_count_as_attempts_but_every_pending_pod_is_pending() -> None:
    metrics = Metrics()
    result = SessionResult(
        unschedulable=[pending("a"), pending("b"), pending("gated", "SchedulingGated")],
        pending=3,
    )
    metrics.observe_session(result, decide_seconds=0.0, total_seconds=0.0)
    assert value(metrics, "muster_schedule_attempts_total", result="unschedulable") == 2
    assert value(metrics, "muster_pending_pods") == 3


def test_a_session_without_unschedulable_pods_adds_no_attempts() -> None:
    metrics = Metrics()
    metrics.observe_session(
        SessionResult(unschedulable=[pending("gated", "SchedulingGated")], pending=1),
        decide_seconds=0.0,
        total_seconds=0.0,
    )
    assert value(metrics, "muster_schedule_attempts_total", result="unschedulable") is None
    assert value(metrics, "muster_pending_pods") == 1


def test_podgroup_phases_are_summed_over_queues_with_the_phase_as_label() -> None:
    metrics = Metrics()
    result = SessionResult(
        queues=[
            queue("a", allocated=Resource(), podgroups={"running": 2, "pending": 1}),
            queue("b", allocated=Resource(), podgroups={"running": 3, "inqueue": 0}),
        ]
    )
    metrics.observe_session(result, decide_seconds=0.0, total_seconds=0.0)
    assert value(metrics, "muster_podgroups", phase="Running") == 5
    assert value(metrics, "muster_podgroups", phase="Pending") == 1
    assert value(metrics, "muster_podgroups", phase="Inqueue") == 0


def test_queue_figures_are_in_cores_and_units_and_share_is_dominant() -> None:
    metrics = Metrics()
    allocated = Resource(cpu=2000, memory=4 * 2**30, scalars={GPU: 1})
    deserved = Resource(cpu=8000, memory=8 * 2**30, scalars={GPU: 4})
    result = SessionResult(
        queues=[
            queue(
                "team",
                allocated=allocated,
                deserved=deserved,
                request=Resource(cpu=10_000, memory=16 * 2**30),
                capability=Resource(cpu=UNLIMITED, memory=32 * 2**30),
            )
        ]
    )
    metrics.observe_session(result, decide_seconds=0.0, total_seconds=0.0)

    def figure(name: str, resource: str) -> float | None:
        return value(metrics, name, queue="team", resource=resource)

    assert figure("muster_queue_allocated", "cpu") == 2.0
    assert figure("muster_queue_allocated", "memory") == 4 * 2**30
    assert figure("muster_queue_allocated", GPU) == 1
    assert figure("muster_queue_deserved", "cpu") == 8.0
    assert figure("muster_queue_deserved", GPU) == 4
    assert figure("muster_queue_request", "cpu") == 10.0
    assert figure("muster_queue_capability", "memory") == 32 * 2**30
    assert figure("muster_queue_capability", "cpu") is None, "an unlimited figure has no series"
    # memory 4/8 is the dominant share over cpu 2/8 and gpu 1/4
    assert value(metrics, "muster_queue_share", queue="team") == 0.5


def test_a_queue_without_deserved_request_or_capability_exports_only_allocated() -> None:
    metrics = Metrics()
    result = SessionResult(queues=[queue("plain", allocated=Resource(cpu=500))])
    metrics.observe_session(result, decide_seconds=0.0, total_seconds=0.0)
    assert value(metrics, "muster_queue_allocated", queue="plain", resource="cpu") == 0.5
    for name in ("muster_queue_deserved", "muster_queue_request", "muster_queue_capability"):
        assert value(metrics, name, queue="plain", resource="cpu") is None, name
    assert value(metrics, "muster_queue_share", queue="plain") is None


def test_cache_counts_are_set_per_kind() -> None:
    metrics = Metrics()
    metrics.observe_cache({"pod": 5, "node": 2})
    metrics.observe_cache({"pod": 4, "node": 2})
    assert value(metrics, "muster_cache_objects", kind="pod") == 4
    assert value(metrics, "muster_cache_objects", kind="node") == 2


@pytest.mark.parametrize(
    ("reason", "series"),
    [
        pytest.param("relist", "muster_relists_total", id="410-gone-relists"),
        pytest.param("error", "muster_watch_restarts_total", id="api-error-restarts-watch"),
        pytest.param("crash", "muster_reflector_crashes_total", id="bug-restarts-reflector"),
    ],
)
def test_a_reflector_restart_is_counted_by_its_reason(reason: str, series: str) -> None:
    metrics = Metrics()
    metrics.reflector_restarted("pod", reason)
    metrics.reflector_restarted("pod", reason)
    assert value(metrics, series, resource="pod") == 2
    others = {"muster_relists_total", "muster_watch_restarts_total"}
    others |= {"muster_reflector_crashes_total"}
    for other in others - {series}:
        assert value(metrics, other, resource="pod") is None, other
