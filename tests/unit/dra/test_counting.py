"""The allocator's counted answers agree with its search: over randomized clusters, claims
and placements, an allocator that counts and one whose every answer is the search's give
the same answer for every pod on every node, pick the same devices, spend the same steps,
and commit the same AllocationResults; and an allocator whose inputs a DeviceMemo kept from
earlier sessions answers as one that found them afresh."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from scheduler.api import dra
from scheduler.dra import DeviceAllocator, DeviceMemo, PodClaims
from tests.unit.dra.devices import (
    DRIVER,
    allocator,
    claim,
    device_class,
    exactly,
    first_available,
    gpu,
    node_slice,
    on_node,
    pod,
    sub,
)

MODEL = f'device.attributes["{DRIVER}"].model'
NODES = ("n1", "n2", "n3", "n4")
MODELS = ("a100", "h100")


def _slices(rng: random.Random) -> list[dra.ResourceSlice]:
    slices = []
    for node in NODES:
        devices = [
            gpu(f"{node}-gpu-{index}", model=rng.choice(MODELS))
            for index in range(rng.randint(0, 6))
        ]
        slices.append(node_slice(node, *devices, name=f"{node}-slice"))
    if rng.random() < 0.5:
        shared = [gpu(f"shared-{index}", model=rng.choice(MODELS)) for index in range(3)]
        slices.append(node_slice(None, *shared, pool="shared", name="shared", allNodes=True))
    return slices


def _request(rng: random.Random, index: int) -> dict[str, Any]:
    name = f"r{index}"
    roll = rng.random()
    if roll < 0.6:
        return exactly("gpu", name=name, count=rng.choice((None, 1, 2)))
    if roll < 0.75:
        return exactly("h100s", name=name, count=rng.choice((1, 2)))
    if roll < 0.85:
        return exactly("gpu", f'{MODEL} == "a100"', name=name)
    if roll < 0.93:
        return first_available(name, sub("big", count=3), sub("small"))
    return exactly("gpu", name=name, all_devices=True)


def _claims(rng: random.Random, count: int) -> list[dra.ResourceClaim]:
    claims = []
    for index in range(count):
        requests = [_request(rng, position) for position in range(rng.choice((1, 1, 1, 2)))]
        if rng.random() < 0.1:
            node = rng.choice(NODES)
            claims.append(
                claim(
                    f"c{index}",
                    *requests,
                    allocated=[("r0", node, f"{node}-gpu-0")],
                    node_selector=on_node(node),
                )
            )
            continue
        constraints = [{"matchAttribute": f"{DRIVER}/model"}] if rng.random() < 0.1 else None
        claims.append(claim(f"c{index}", *requests, constraints=constraints))
    return claims


def _pods(rng: random.Random, claims: int) -> list[PodClaims]:
    pods = []
    for index in range(claims):
        names = [f"c{index}"]
        if rng.random() < 0.2:
            names.append(f"c{rng.randrange(claims)}")
        pods.append(pod(f"p{index}", *names))
    return pods


def _pair(rng: random.Random, claims: int) -> tuple[DeviceAllocator, DeviceAllocator]:
    slices = _slices(rng)
    objects = _claims(rng, claims)
    classes = [device_class("gpu"), device_class("h100s", f'{MODEL} == "h100"')]
    step_limit = rng.choice((3, 20_000))
    built = [
        allocator(slices, objects, classes=classes, counting=counting, step_limit=step_limit)
        for counting in (True, False)
    ]
    return built[0], built[1]


@pytest.mark.parametrize("seed", range(60))
def test_counted_answers_are_the_searchs(seed: int) -> None:
    rng = random.Random(seed)
    count = rng.randint(3, 12)
    counting, searching = _pair(rng, count)
    pods = _pods(rng, count)
    gangs = {item.key: f"g{rng.randrange(3)}" for item in pods}
    placed: list[PodClaims] = []
    for _ in range(40):
        action = rng.random()
        if action < 0.65:
            member = rng.choice(pods)
            gang = gangs[member.key]
            for node in NODES:
                answer = counting.fits(member, node, gang)
                assert answer == searching.fits(member, node, gang), (member, node)
            node = rng.choice(NODES)
            fits = counting.fits(member, node, gang).fits
            assert fits == searching.fits(member, node, gang).fits
            if fits and member not in placed:
                counting.take(member, node, gang)
                searching.take(member, node, gang)
                placed.append(member)
        elif action < 0.8 and placed:
            member = placed.pop()
            counting.give_back(member)
            searching.give_back(member)
        elif action < 0.9:
            gang = f"g{rng.randrange(3)}"
            assert counting.commit(gang) == searching.commit(gang)
            placed = [item for item in placed if gangs[item.key] != gang]
        else:
            member = rng.choice(pods)
            counting.release(member)
            searching.release(member)
        assert counting.state() == searching.state()
        assert counting.steps_left == searching.steps_left
    for gang in ("g0", "g1", "g2"):
        assert counting.tentative_results(gang) == searching.tentative_results(gang)


def test_a_gpu_gang_on_nodes_of_gpus_is_counted_as_the_search_places_it() -> None:
    slices = [node_slice(node, *(gpu(f"{node}-{i}") for i in range(4))) for node in NODES]
    claims = [claim(f"c{i}", exactly(count=2)) for i in range(8)]
    counting = allocator(slices, claims)
    searching = allocator(slices, claims, counting=False)
    for index in range(8):
        member = pod(f"p{index}", f"c{index}")
        answers = {node: counting.fits(member, node, "g") for node in NODES}
        assert answers == {node: searching.fits(member, node, "g") for node in NODES}
        node = next(n for n in NODES if answers[n].fits)
        counting.take(member, node, "g")
        searching.take(member, node, "g")
    assert counting.commit("g") == searching.commit("g")
    assert counting.steps_left == searching.steps_left


def _sessions_agree(
    slices: list[dra.ResourceSlice],
    claims: list[dra.ResourceClaim],
    classes: list[dra.DeviceClass],
    memo: DeviceMemo,
    pods: list[PodClaims],
) -> None:
    """A session through the memo and one without answer alike, take after take."""
    kept = allocator(slices, claims, classes=classes, memo=memo)
    fresh = allocator(slices, claims, classes=classes)
    for member in pods:
        answers = {node: kept.fits(member, node, "g") for node in NODES}
        assert answers == {node: fresh.fits(member, node, "g") for node in NODES}, member
        node = next((n for n in NODES if answers[n].fits), None)
        if node is not None:
            kept.take(member, node, "g")
            fresh.take(member, node, "g")
    assert kept.state() == fresh.state()
    assert kept.commit("g") == fresh.commit("g")


@pytest.mark.parametrize("seed", range(30))
def test_candidates_kept_across_sessions_are_those_found_afresh(seed: int) -> None:
    rng = random.Random(seed)
    count = rng.randint(3, 12)
    slices = _slices(rng)
    claims = _claims(rng, count)
    pods = _pods(rng, count)
    classes = [device_class("gpu"), device_class("h100s", f'{MODEL} == "h100"')]
    memo = DeviceMemo()
    for _ in range(2):
        _sessions_agree(slices, claims, classes, memo, pods)
    # A class changed: what its old selectors found is not kept.
    changed = [classes[0], device_class("h100s", f'{MODEL} == "a100"')]
    _sessions_agree(slices, claims, changed, memo, pods)
    # The slices changed (a new version of each): nor is what the old inventory held.
    newer = [
        msgspec.structs.replace(
            item, metadata=msgspec.structs.replace(item.metadata, resource_version="2")
        )
        for item in _slices(rng)
    ]
    _sessions_agree(newer, claims, changed, memo, pods)


def test_a_claims_spec_text_is_kept_while_its_object_is_the_same() -> None:
    memo = DeviceMemo()
    first = _claims(random.Random(1), 1)[0]
    spec = msgspec.json.encode(first.spec).decode()
    assert memo.specs.text("ns/c0", first) == f"spec ns {spec}"
    assert memo.specs.text("ns/c0", first) is memo.specs.text("ns/c0", first)
    changed = claim("c0", exactly("h100s", count=2))
    changed_spec = msgspec.json.encode(changed.spec).decode()
    assert memo.specs.text("ns/c0", changed) == f"spec ns {changed_spec}"
    # Claims no longer listed are forgotten with their text.
    memo.claims([], None)
    assert memo.specs.text("ns/c0", first) == f"spec ns {spec}"


def test_a_pods_entry_kept_across_sessions_is_read_again_when_a_claim_changed() -> None:
    memo = DeviceMemo()
    slices = [node_slice("n1", gpu("gpu-0"))]
    member = pod("p0", "c0")
    classes = [device_class("gpu")]
    first = allocator(slices, [claim("c0")], classes=classes, memo=memo)
    assert first.pod_problem(member, "g") is None
    assert first.fits(member, "n1", "g").fits
    # The same pod object, its claim now being deleted: the entry kept must not answer.
    deleting = allocator(slices, [claim("c0", deleting=True)], classes=classes, memo=memo)
    problem = deleting.pod_problem(member, "g")
    assert problem is not None and "is being deleted" in problem.reason
    assert not deleting.fits(member, "n1", "g").fits
    # Its claim now asks two devices where the node has one: counted afresh, not kept.
    bigger = allocator(slices, [claim("c0", exactly(count=2))], classes=classes, memo=memo)
    assert bigger.pod_problem(member, "g") is None
    assert not bigger.fits(member, "n1", "g").fits
    # Its claim gone: the pod waits for it.
    gone = allocator(slices, [], classes=classes, memo=memo)
    problem = gone.pod_problem(member, "g")
    assert problem is not None and "could not find ResourceClaim" in problem.reason


def test_claims_kept_across_sessions_follow_their_namespaces_admin_access_label() -> None:
    memo = DeviceMemo()
    admin = claim("c0", exactly(admin_access=True))
    objects = [admin]
    allowed = {"ns": {dra.ADMIN_ACCESS_LABEL: "true"}}
    assert memo.claims(objects, allowed).by_key["ns/c0"].refusal is None
    # The same objects, the label gone from the namespace: admin access is refused now.
    refused = memo.claims(objects, {"ns": {}}).by_key["ns/c0"].refusal
    assert refused is not None and "admin" in refused
    assert memo.claims(objects, allowed).by_key["ns/c0"].refusal is None
    # The very mapping the caller passed, changed in place, is a change too.
    allowed["ns"].clear()
    assert memo.claims(objects, allowed).by_key["ns/c0"].refusal is not None
