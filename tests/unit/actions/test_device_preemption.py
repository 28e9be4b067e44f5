"""Preemption and starvation know devices: a victim's devices count as freed only when no pod
that stays uses its claims, nothing is evicted for devices a victim would not free, and a
starving gang holds devices as it holds cpu."""

from __future__ import annotations

from scheduler.api.timestamps import format_rfc3339
from scheduler.cache.kinds import pods, resourceclaims
from scheduler.engine import load_config, schedule
from tests.unit.actions.eviction_helpers import config, evicted_by_job
from tests.unit.dra.devices import claim, exactly, on_node
from tests.unit.dra.world import gang, pod, priority_class, queue, world_with_gpus

NOW = 1_800_000_000.0
# Created long enough ago to starve under the default waiting time (60 s), or just now.
LONG_AGO = format_rfc3339(NOW - 600)
JUST_NOW = format_rfc3339(NOW - 1)
STARVING = load_config(
    """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""
)


def test_a_gang_of_higher_priority_evicts_pods_whose_devices_it_needs() -> None:
    world = world_with_gpus(["n1"])
    queue(world, "default")
    priority_class(world, "low", 1)
    priority_class(world, "high", 100)
    gang(world, "old", 2, min_member=0, priority="low", value=1, on="n1")
    gang(world, "new", 2, priority="high", value=100)
    result = schedule(world.snapshot(), config())
    assert evicted_by_job(result) == {"ns/old": 2}
    assert result.binds == []
    assert result.nominated == ["ns/new"]


def test_nothing_is_evicted_for_devices_a_pod_that_stays_keeps() -> None:
    # The old gang's three pods share one claim of both GPUs; its minMember keeps two, so
    # its spare pod may go, but that frees nothing while the others keep the claim.
    world = world_with_gpus(["n1"])
    queue(world, "default")
    priority_class(world, "low", 1)
    priority_class(world, "high", 100)
    gang(world, "old", 0, min_member=2, priority="low", value=1, on="n1")
    members = ("a", "b", "c")
    resourceclaims.upsert(
        world,
        claim(
            "shared",
            exactly(count=2),
            allocated=[("gpu", "n1", "gpu-0"), ("gpu", "n1", "gpu-1")],
            node_selector=on_node("n1"),
            reserved_for=[f"{name}-uid" for name in members],
        ),
    )
    for name in members:
        pods.upsert(world, pod(name, "shared", group="old", templated=False, node="n1", priority=1))
    gang(world, "new", 1, priority="high", value=100)
    result = schedule(world.snapshot(), config())
    assert result.evictions == []
    (update,) = [u for u in result.podgroups if u.name == "new"]
    (condition,) = [c for c in update.conditions if c.type == "Unschedulable"]
    assert "cannot allocate all claims" in condition.message


def test_a_spare_pod_whose_claim_is_its_own_is_evicted_and_frees_its_device() -> None:
    # The same gang with a claim each: its spare pod's device comes free.
    world = world_with_gpus(["n1"], gpus=3)
    queue(world, "default")
    priority_class(world, "low", 1)
    priority_class(world, "high", 100)
    gang(world, "old", 3, min_member=2, priority="low", value=1, on="n1")
    gang(world, "new", 1, priority="high", value=100)
    result = schedule(world.snapshot(), config())
    assert evicted_by_job(result) == {"ns/old": 1}


def test_victims_are_chosen_until_their_devices_cover_the_preemptor() -> None:
    # The new pod needs both GPUs; each old pod frees one: both are evicted, as cpu alone
    # would have asked for one.
    world = world_with_gpus(["n1"])
    queue(world, "default")
    priority_class(world, "low", 1)
    priority_class(world, "high", 100)
    gang(world, "old", 2, min_member=0, priority="low", value=1, on="n1")
    gang(world, "new", 1, priority="high", value=100, gpus=2)
    result = schedule(world.snapshot(), config())
    assert evicted_by_job(result) == {"ns/old": 2}


def test_a_starving_gang_holds_the_free_devices_where_it_is_laid_out() -> None:
    # Four GPUs, two in use on n1 by a gang that runs on; a gang of three starves. It is
    # laid out on n2 (and n1) and holds n2's two free GPUs: the small gang that came
    # later does not take them.
    world = world_with_gpus(["n1", "n2"])
    queue(world, "default")
    gang(world, "busy", 2, on="n1", created=LONG_AGO)
    gang(world, "big", 3, created=LONG_AGO)
    gang(world, "small", 1, created=JUST_NOW)
    snapshot = world.snapshot(NOW)
    result = schedule(snapshot, STARVING)
    assert result.binds == []
    (hold,) = result.holds
    assert hold.job == "ns/big"
    (small,) = [u for u in result.podgroups if u.name == "small"]
    (condition,) = [c for c in small.conditions if c.type == "Unschedulable"]
    assert "cannot allocate all claims" in condition.message


def test_without_a_starving_gang_the_small_gang_takes_the_free_devices() -> None:
    world = world_with_gpus(["n1", "n2"])
    queue(world, "default")
    gang(world, "busy", 2, on="n1", created=LONG_AGO)
    gang(world, "big", 3, created=JUST_NOW)
    gang(world, "small", 1, created=JUST_NOW)
    result = schedule(world.snapshot(NOW), STARVING)
    assert [bind.name for bind in result.binds] == ["small-0"]
