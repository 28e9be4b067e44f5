"""VolumeRestrictions (ReadWriteOncePod) and NodeVolumeLimits (CSINode counts) give
kube-scheduler's verdicts and reasons, and follow the session's placements."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import wire
from scheduler.api.node import NodeInfo
from scheduler.api.snapshot import StorageView, storage_view
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.framework.status import Code, Status
from scheduler.nodefit.nodevolumelimits import REASON_MAX_VOLUME_COUNT, CSIVolumeLimits
from scheduler.nodefit.volumerestrictions import REASON_RWOP_CONFLICT, ReadWriteOncePod
from tests.unit.builders import node
from tests.unit.nodefit.test_volumebinding import claim, pod, storage_class

DRIVER = "csi.example.com"


def csi_volume(name: str, handle: str) -> wire.PersistentVolume:
    return wire.from_dict(
        {
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "csi": {"driver": DRIVER, "volumeHandle": handle},
            },
            "status": {"phase": "Bound"},
        },
        wire.PersistentVolume,
    )


def csinode(name: str, count: int | None) -> wire.CSINode:
    driver: dict[str, Any] = {"name": DRIVER}
    if count is not None:
        driver["allocatable"] = {"count": count}
    return wire.from_dict({"metadata": {"name": name}, "spec": {"drivers": [driver]}}, wire.CSINode)


def placed(task: TaskInfo, where: NodeInfo) -> TaskInfo:
    task.status, task.node_name = TaskStatus.RUNNING, where.name
    where.add_task(task)
    return task


# ReadWriteOncePod ---------------------------------------------------------------


def rwop_view() -> StorageView:
    return storage_view(
        [claim("solo", modes=("ReadWriteOncePod",), volume="pv", bound=True), claim("shared")],
        [],
        [],
        [],
    )


def test_a_read_write_once_pod_claim_in_use_elsewhere_is_unschedulable() -> None:
    n1, n2 = node("n1"), node("n2")
    placed(pod("holder", "solo"), n1)
    subject = ReadWriteOncePod(rwop_view(), {"n1": n1, "n2": n2})
    assert subject.fits(pod("second", "solo")) == Status(
        Code.UNSCHEDULABLE, (REASON_RWOP_CONFLICT,)
    )


def test_a_claim_without_read_write_once_pod_may_be_shared() -> None:
    n1 = node("n1")
    placed(pod("holder", "shared"), n1)
    assert ReadWriteOncePod(rwop_view(), {"n1": n1}).fits(pod("second", "shared")).ok


def test_evicting_the_user_frees_the_claim_and_undoing_it_takes_it_back() -> None:
    n1 = node("n1")
    holder = placed(pod("holder", "solo"), n1)
    subject = ReadWriteOncePod(rwop_view(), {"n1": n1})
    second = pod("second", "solo")
    assert not subject.fits(second).ok
    subject.unplaced(holder)  # preempt marks it releasing
    assert subject.fits(second).ok
    subject.placed(holder)  # the statement is discarded
    assert not subject.fits(second).ok


def test_a_gang_member_placed_in_the_session_holds_the_claim() -> None:
    n1 = node("n1")
    subject = ReadWriteOncePod(rwop_view(), {"n1": n1})
    first, second = pod("first", "solo"), pod("second", "solo")
    assert subject.fits(first).ok
    first.status, first.node_name = TaskStatus.ALLOCATED, "n1"
    subject.placed(first)
    assert subject.fits(first).ok  # not in conflict with itself
    assert not subject.fits(second).ok


# NodeVolumeLimits -------------------------------------------------------------------

LIMIT_CASES = [
    pytest.param(2, ["a"], ["b"], True, id="under-the-limit"),
    pytest.param(1, ["a"], ["b"], False, id="over-the-limit"),
    pytest.param(1, ["a"], ["a2"], True, id="same-volume-counted-once"),
    pytest.param(None, ["a"], ["b"], True, id="driver-without-a-count"),
    pytest.param(1, [], ["b", "c"], False, id="two-new-volumes-over-one"),
    pytest.param(1, ["a"], ["lazy"], False, id="unbound-claim-counts-by-its-class-provisioner"),
]


@pytest.mark.parametrize(("count", "running", "new", "fits"), LIMIT_CASES)
def test_csi_volumes_on_a_node_against_its_csinode_count(
    count: int | None, running: list[str], new: list[str], fits: bool
) -> None:
    claims = [
        claim("a", volume="pv-a", bound=True),
        claim("a2", volume="pv-a-again", bound=True),
        claim("b", volume="pv-b", bound=True),
        claim("c", volume="pv-c", bound=True),
        claim("lazy"),
    ]
    volumes = [
        csi_volume("pv-a", "h-a"),
        csi_volume("pv-a-again", "h-a"),
        csi_volume("pv-b", "h-b"),
        csi_volume("pv-c", "h-c"),
    ]
    view = storage_view(
        claims, volumes, [storage_class("wfc", provisioner=DRIVER)], [csinode("n1", count)]
    )
    n1 = node("n1")
    if running:
        placed(pod("old", *running), n1)
    verdict = CSIVolumeLimits(view).fits(pod("new", *new), n1)
    expected = (
        Status(Code.SUCCESS) if fits else Status(Code.UNSCHEDULABLE, (REASON_MAX_VOLUME_COUNT,))
    )
    assert verdict == expected


def test_a_node_without_a_csinode_has_no_volume_limit() -> None:
    view = storage_view([claim("b", volume="pv-b", bound=True)], [csi_volume("pv-b", "h")], [], [])
    assert CSIVolumeLimits(view).fits(pod("new", "b"), node("n1")).ok


def test_a_pod_placed_in_the_session_counts_on_its_node() -> None:
    view = storage_view(
        [claim("a", volume="pv-a", bound=True), claim("b", volume="pv-b", bound=True)],
        [csi_volume("pv-a", "h-a"), csi_volume("pv-b", "h-b")],
        [],
        [csinode("n1", 1)],
    )
    n1 = node("n1")
    limits = CSIVolumeLimits(view)
    second = pod("second", "b")
    assert limits.fits(second, n1).ok
    first = pod("first", "a")
    first.status, first.node_name = TaskStatus.ALLOCATED, "n1"
    n1.add_task(first)
    assert not limits.fits(second, n1).ok
    assert limits.fits(first, n1).ok  # a pod does not count against itself
