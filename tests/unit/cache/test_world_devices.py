"""The World keeps DRA's kinds: what each event of a class, slice or claim invalidates, the
pods' claims read from their spec and status, and the binder's assumptions about claims."""

from __future__ import annotations

from typing import Any

import msgspec

from scheduler.api import dra, wire
from scheduler.api.snapshot import PlacementFailures
from scheduler.cache.kinds import deviceclasses, pods, queues, resourceclaims, resourceslices
from scheduler.cache.world import World
from tests.unit.dra.devices import claim, device_class, gpu, node_slice


def ready_world() -> World:
    world = World()
    queues.upsert(world, wire.from_dict({"metadata": {"name": "default"}}, wire.Queue))
    return world


def pod(name: str, *claims: str, made: dict[str, str] | None = None) -> wire.Pod:
    """A pod of ours using named claims, and claims from templates named in `made`
    (pod claim name -> the claim the controller made, "" for not made yet)."""
    sources: list[dict[str, Any]] = [{"name": c, "resourceClaimName": c} for c in claims]
    statuses = []
    for claim_name, made_name in (made or {}).items():
        sources.append({"name": claim_name, "resourceClaimTemplateName": "t"})
        if made_name:
            statuses.append({"name": claim_name, "resourceClaimName": made_name})
    body = {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {
            "schedulerName": "muster",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "resourceClaims": sources,
        },
        "status": {"phase": "Pending", "resourceClaimStatuses": statuses},
    }
    return wire.decode_pod(msgspec.json.encode(body))


def allocated(name: str, device: str = "gpu-0", *reserved: str) -> dra.ResourceClaim:
    obj = claim(name)
    obj.status = dra.ResourceClaimStatus(
        allocation=dra.AllocationResult(
            devices=dra.DeviceAllocationResult(
                results=[
                    dra.DeviceRequestAllocationResult(
                        request="gpu", driver="gpu.example.com", pool="n1", device=device
                    )
                ]
            )
        ),
        reserved_for=[
            dra.ResourceClaimConsumerReference(resource="pods", name=uid, uid=uid)
            for uid in reserved
        ],
    )
    return obj


def test_a_pods_claims_are_read_from_its_spec_and_the_controllers_status() -> None:
    world = ready_world()
    pods.upsert(world, pod("p", "shared", made={"gpu": ""}))
    task = world.tasks["uid-p"]
    assert task.devices is not None
    assert task.devices.waiting == 'pod "ns/p": ResourceClaim not created yet'
    generation = world.generation
    pods.upsert(world, pod("p", "shared", made={"gpu": "p-gpu-x"}))
    task = world.tasks["uid-p"]
    assert task.devices is not None and task.devices.claims == ("ns/shared", "ns/p-gpu-x")
    assert world.generation > generation, "the claim made for the pod asks for a session"
    assert {key: set(uids) for key, uids in world.claim_users.items()} == {
        "ns/shared": {"uid-p"},
        "ns/p-gpu-x": {"uid-p"},
    }


def test_a_claim_shared_by_pods_knows_each_user_until_the_last_is_gone() -> None:
    world = ready_world()
    for name in ("p", "q", "r"):
        pods.upsert(world, pod(name, "shared"))
    assert set(world.claim_users["ns/shared"]) == {"uid-p", "uid-q", "uid-r"}
    pods.upsert(world, pod("q", "shared"))  # the same pod again: still one user of three
    assert set(world.claim_users["ns/shared"]) == {"uid-p", "uid-q", "uid-r"}
    for name, left in (("q", {"uid-p", "uid-r"}), ("p", {"uid-r"})):
        world.remove_task(f"uid-{name}")
        assert set(world.claim_users["ns/shared"]) == left
    world.remove_task("uid-r")
    assert "ns/shared" not in world.claim_users
    pods.upsert(world, pod("p", "shared"))
    pods.upsert(world, pod("p", "shared"))
    assert set(world.claim_users["ns/shared"]) == {"uid-p"}
    world.remove_task("uid-p")
    assert "ns/shared" not in world.claim_users


def test_a_claim_event_touches_the_gangs_of_the_pods_that_use_it() -> None:
    world = ready_world()
    pods.upsert(world, pod("p", "c"))
    world.settled.settle({}, world.live.jobs, frozenset())
    generation = world.generation
    resourceclaims.upsert(world, claim("c"))
    assert world.generation > generation
    assert world.devices().claims["ns/c"].metadata.name == "c"


def test_a_finalizer_added_to_a_claim_asks_for_no_session() -> None:
    world = ready_world()
    resourceclaims.upsert(world, claim("c"))
    generation = world.generation
    protected = claim("c")
    protected.metadata.finalizers = [dra.DELETE_PROTECTION_FINALIZER]
    resourceclaims.upsert(world, protected)
    assert world.generation == generation


def test_a_deallocated_claim_frees_devices_and_retries_failed_gangs() -> None:
    world = ready_world()
    resourceclaims.upsert(world, allocated("c"))
    world.live.failures["ns/g"] = PlacementFailures(1, 0.0)
    resourceclaims.upsert(world, claim("c"))
    assert world.live.failures == {}


def test_slices_and_classes_change_the_room_unless_only_their_metadata_moved() -> None:
    world = ready_world()
    resourceslices.upsert(world, node_slice("n1", gpu("gpu-0"), name="s1"))
    deviceclasses.upsert(world, device_class("gpu"))
    generation = world.generation
    again = node_slice("n1", gpu("gpu-0"), name="s1")
    again.metadata.resource_version = "2"
    resourceslices.upsert(world, again)
    assert world.generation == generation
    resourceslices.upsert(world, node_slice("n1", gpu("gpu-0"), gpu("gpu-1"), name="s1"))
    assert world.generation > generation
    view = world.devices()
    assert list(view.slices) == ["s1"] and list(view.classes) == ["gpu"]
    assert view.memo is world.selector_memo
    resourceslices.delete(world, "s1")
    assert not world.devices().slices


def test_the_binders_allocation_counts_until_its_echo_and_the_echo_asks_for_nothing() -> None:
    world = ready_world()
    resourceclaims.upsert(world, claim("c"))
    result = allocated("c").status.allocation
    world.assume_claimed("ns/c", result, "uid-p", "p")
    seen = world.devices().claims["ns/c"].status
    assert seen.allocation == result
    assert [ref.uid for ref in seen.reserved_for] == ["uid-p"]
    generation = world.generation
    resourceclaims.upsert(world, allocated("c", "gpu-0", "uid-p"))
    assert world.generation == generation
    assert world.assumed_claims == {}


def test_a_failed_claim_write_gives_the_devices_back() -> None:
    world = ready_world()
    resourceclaims.upsert(world, claim("c"))
    world.assume_claimed("ns/c", allocated("c").status.allocation, "uid-p", "p")
    world.forget_claimed("ns/c", "uid-p")
    assert world.devices().claims["ns/c"].status.allocation is None
