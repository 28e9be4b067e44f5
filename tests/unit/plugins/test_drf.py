"""drf: within a queue, the job with the smallest dominant share is served first."""

from __future__ import annotations

import pytest

from scheduler.api.task import TaskStatus
from scheduler.engine import schedule
from tests.unit.builders import gang, node, queue, snapshot, task


def holding(name: str, created: str, **held: object) -> object:
    """A one-pod-wide job that already runs a pod holding `held`, and wants one more pod."""
    job = gang(name, 1, 0.5, min_member=1, created=created)
    job.add_task(
        task(f"{name}-held", job=job.key, status=TaskStatus.RUNNING, node_name="n0", **held)  # type: ignore[arg-type]
    )
    return job


@pytest.mark.parametrize(
    ("old_holds", "young_holds", "served"),
    [
        # cpu share 2/8 is below memory share 8Gi/16Gi: the cpu holder is served first
        ({"cpu": 2}, {"cpu": 0, "memory": "8Gi"}, "old"),
        # memory share 2Gi/16Gi is below cpu share 2/8: the memory holder is served first
        ({"cpu": 0, "memory": "2Gi"}, {"cpu": 2}, "old"),
        # GPU share 3/4 is dominant over cpu share 2/8: the cpu holder is served first
        ({"cpu": 0, "gpu": 3}, {"cpu": 2}, "young"),
        # GPU share 1/4 is below cpu share 4/8: the GPU holder is served first
        ({"cpu": 0, "gpu": 1}, {"cpu": 4}, "old"),
    ],
)
def test_dominant_share_compares_jobs_across_resource_kinds(
    old_holds: dict[str, object], young_holds: dict[str, object], served: str
) -> None:
    old = holding("old", "2026-01-01T00:00:00Z", **old_holds)
    young = holding("young", "2026-01-01T00:00:09Z", **young_holds)
    # The cluster has 8 cpu, 16Gi and 4 GPUs; another queue's pod fills the cpu so that
    # exactly one more half-cpu pod fits.
    held = float(old_holds.get("cpu", 0)) + float(young_holds.get("cpu", 0))  # type: ignore[arg-type]
    filler = gang("filler", 1, 8 - held - 0.5, queue="other", status=TaskStatus.RUNNING, on=["n0"])
    cluster = node("n0", cpu=8, memory="16Gi", gpu=4)
    result = schedule(snapshot([cluster], [old, young, filler], [queue("other")]))  # type: ignore[list-item]
    assert [bind.job for bind in result.binds] == [f"default/{served}"]
