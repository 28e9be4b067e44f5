"""bench/session_bench.py --dra: its GPU gangs are placed as the plain ones are, every bind
writes its claim's allocation, and a bind without its devices is caught."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from msgspec.structs import replace

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from dra_workload import gpu_world, unallocated_binds
from session_bench import EPOCH, MisleadingFigure, measure_dra

from scheduler.engine import schedule
from scheduler.framework.decisions import Bind, DeviceBind


def test_gpu_gangs_are_all_placed_with_their_devices_as_the_plain_ones() -> None:
    (plain, plain_bound), (claimed, claimed_bound) = measure_dra(80, 20, 8, 8, 1)
    assert plain_bound == claimed_bound == 80
    assert plain > 0 and claimed > 0


def test_more_gangs_than_gpus_stops_the_comparison() -> None:
    # 2 nodes of 4 GPUs: 2 gangs of 8 fit in cpu, not both in devices.
    with pytest.raises(MisleadingFigure, match=r"[01] gangs placed with claims, 2 without"):
        measure_dra(16, 2, 8, 4, 1)


def test_a_bind_that_does_not_write_its_claim_is_caught() -> None:
    world = gpu_world(2, 8, 2, 8, claims=True)
    binds = schedule(world.snapshot(EPOCH)).binds
    assert len(binds) == 16
    assert unallocated_binds(world, binds) == []
    first = binds[0]
    assert isinstance(first, DeviceBind)
    stripped = Bind(first.namespace, first.name, first.uid, first.node, first.job)
    (wrong,) = unallocated_binds(world, [stripped, *binds[1:]])
    assert wrong.startswith(f"{first.name}: claims")


def test_a_device_given_twice_or_off_the_node_is_caught() -> None:
    world = gpu_world(2, 8, 1, 8, claims=True)
    binds = [b for b in schedule(world.snapshot(EPOCH)).binds if isinstance(b, DeviceBind)]
    first = binds[0]
    second = next(b for b in binds[1:] if b.node == first.node)
    (claim,) = second.devices
    twice = DeviceBind(
        second.namespace,
        second.name,
        second.uid,
        second.node,
        second.job,
        devices=(replace(claim, allocation=first.devices[0].allocation),),
    )
    (wrong,) = unallocated_binds(world, [first, twice])
    assert wrong.startswith(f"{second.name}: device") and wrong.endswith("given twice")
    elsewhere = next(b.node for b in binds if b.node != first.node)
    moved = replace(first, node=elsewhere)
    assert unallocated_binds(world, [moved]) == [
        f"{first.name}: claim {first.devices[0].name} not allocated on {elsewhere}"
    ]
