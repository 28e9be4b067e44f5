"""The metrics endpoint: the key series exist and agree with what the API shows."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import Cluster, Metrics, bound, http_get, make_gang, wait_for

KEY_SERIES = {
    "muster_binds_total",
    "muster_schedule_attempts_total",
    "muster_session_duration_seconds_count",
    "muster_is_leader",
    "muster_cache_objects",
    "muster_pending_pods",
    "muster_podgroups",
    "muster_queue_allocated",
    "muster_asyncio_tasks",
}


def by_kind(metrics: Metrics, kind: str) -> float:
    """muster_cache_objects for `kind`, however the label spells it (pods, Pod, pod)."""
    return sum(
        value
        for labels, value in metrics.series("muster_cache_objects")
        if labels.get("kind", "").lower() in (kind, kind + "s")
    )


@pytest.mark.nodes(2, "4")
def test_metrics_agree_with_the_cluster(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler()
    cluster.submit(namespace, *make_gang("fits", 3, cpu="1"))
    cluster.submit(namespace, *make_gang("too-big", 2, cpu="5"))  # no node has 5 cpu
    wait_for(
        lambda: len(bound(cluster.placements(namespace))) == 3,
        timeout=10,
        message=lambda: f"gang fits bound\n{cluster.describe(namespace)}",
    )
    pods_bound = len(bound(cluster.placements(namespace)))

    def consistent() -> Metrics | None:
        m = scheduler.metrics()
        settled = (
            m.value("muster_binds_total", result="success") == pods_bound
            and m.value("muster_pending_pods") == 2
            and m.value("muster_podgroups", phase="Running") == 1
        )
        return m if settled else None

    # The collector policy (scheduler/gc_policy.py) is the running process's, not only
    # session_bench's: the log says what it froze and the young generation it set.
    synced = [line for line in scheduler.process.tail(200).splitlines() if "cache synced" in line]
    assert synced, scheduler.process.tail()
    assert "young generation every 20000 allocations" in synced[0]
    frozen = int(re.search(r"(\d+) objects loaded", synced[0]).group(1))  # type: ignore[union-attr]
    assert frozen > 10_000  # at least the interpreter's and muster's own modules

    metrics = wait_for(
        consistent,
        timeout=5,
        message=lambda: (
            "binds_total == pods bound, 2 pending, 1 Running gang:\n"
            + "\n".join(
                f"{n} {labels} {v}"
                for n, labels, v in scheduler.metrics().samples
                if n.startswith(("muster_binds", "muster_pending", "muster_podgroups"))
            )
        ),
    )
    missing = KEY_SERIES - metrics.names()
    assert not missing, f"series missing from /metrics: {sorted(missing)}"
    assert sum(v for _, v in metrics.series("muster_podgroups")) == 2
    assert metrics.value("muster_schedule_attempts_total", result="unschedulable") >= 2
    assert metrics.value("muster_session_duration_seconds_count") > 0
    assert metrics.value("muster_is_leader") == 1
    if cluster.sim is not None:  # a real cluster has other nodes and pods
        assert by_kind(metrics, "podgroup") == 2, metrics.series("muster_cache_objects")
        assert by_kind(metrics, "node") == 2, metrics.series("muster_cache_objects")
        assert by_kind(metrics, "pod") == 5, metrics.series("muster_cache_objects")
    # the unit is not fixed by the contract: cores or millicores
    allocated = metrics.value("muster_queue_allocated", queue="default", resource="cpu")
    assert allocated in (3, 3000), f"default queue allocated cpu {allocated}, expected 3 cores"
    assert http_get(scheduler.base + "/healthz")[0] == 200
    assert cluster.queue("default") is not None, "the default queue was not created"
