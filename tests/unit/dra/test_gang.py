"""A gang's claims allocated together: earlier members' devices re-assigned when a later
member needs them, shared claims, the search's bound, exact undo for a Statement's
discard, commit, and the devices a victim frees."""

from __future__ import annotations

from scheduler.dra import CANNOT_ALLOCATE, Verdict
from scheduler.dra.requests import PodClaims
from tests.unit.dra.devices import (
    DRIVER,
    allocator,
    claim,
    devices_of,
    exactly,
    first_available,
    gpu,
    held,
    node_slice,
    on_node,
    pod,
    sub,
)

MODEL = f'device.attributes["{DRIVER}"].model'
DOMAIN = f"{DRIVER}/nvlinkDomain"


def a100_and_h100() -> list[object]:
    return [node_slice("n1", gpu("gpu-0", model="a100"), gpu("gpu-1", model="h100"))]


def test_pod_by_pod_the_first_member_takes_the_device_kube_scheduler_would_give_it() -> None:
    devices = allocator(a100_and_h100(), [claim("x")])  # type: ignore[arg-type]
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu=gpu-0"]}


def test_the_issue_example_x_gets_the_h100_and_y_the_a100() -> None:
    devices = allocator(
        a100_and_h100(),  # type: ignore[arg-type]
        [claim("x"), claim("y", exactly("gpu", f'{MODEL} == "a100"'))],
    )
    devices.take(pod("x", "x"), "n1", "g")
    assert devices.fits(pod("y", "y"), "n1", "g").fits
    devices.take(pod("y", "y"), "n1", "g")
    assert held(devices) == {"x": ["gpu=gpu-1"], "y": ["gpu=gpu-0"]}


def test_a_claim_another_gang_is_allocating_makes_the_pod_wait() -> None:
    devices = allocator([node_slice("n1", gpu("gpu-0"))], [claim("shared")])
    devices.take(pod("a", "shared"), "n1", "first")
    fit = devices.fits(pod("b", "shared"), "n1", "second")
    assert (fit.verdict, fit.reason) == (
        Verdict.POD,
        "resource claim ns/shared is in the process of being allocated",
    )
    # Asked before any node (the node picker's first question), it says the same.
    problem = devices.pod_problem(pod("b", "shared"), "second")
    assert problem is not None and problem.reason == fit.reason
    assert devices.pod_problem(pod("a2", "shared"), "first") is None
    devices.commit("first")
    assert devices.fits(pod("b", "shared"), "n1", "second").fits
    assert devices.pod_problem(pod("b", "shared"), "second") is None


def test_another_gangs_tentative_devices_are_not_re_assigned() -> None:
    devices = allocator(
        a100_and_h100(),  # type: ignore[arg-type]
        [claim("x"), claim("y", exactly("gpu", f'{MODEL} == "a100"'))],
    )
    devices.take(pod("x", "x"), "n1", "first")
    fit = devices.fits(pod("y", "y"), "n1", "second")
    assert (fit.verdict, fit.reason) == (Verdict.NODE, CANNOT_ALLOCATE)
    assert fit.detail.endswith("1 device matches its selectors on node n1, 0 of them free")


def three_types() -> list[object]:
    return [
        node_slice("n1", gpu("gpu-a", model="a"), gpu("gpu-b", model="b"), gpu("gpu-c", model="c"))
    ]


def test_three_members_and_three_device_types_with_one_assignment_only() -> None:
    # p1 takes anything, p2 only a, p3 a or b: the only assignment is p1=c, p2=a, p3=b,
    # reached by moving p1 twice (a -> b when p2 comes, b -> c when p3 comes).
    devices = allocator(
        three_types(),  # type: ignore[arg-type]
        [
            claim("p1"),
            claim("p2", exactly("gpu", f'{MODEL} == "a"')),
            claim("p3", exactly("gpu", f'{MODEL} in ["a", "b"]')),
        ],
    )
    for name in ("p1", "p2", "p3"):
        assert devices.fits(pod(name, name), "n1", "g").fits, name
        devices.take(pod(name, name), "n1", "g")
    assert held(devices) == {"p1": ["gpu=gpu-c"], "p2": ["gpu=gpu-a"], "p3": ["gpu=gpu-b"]}


def test_re_assignment_reaches_through_several_pools() -> None:
    # p3 can use only x; p1 holds it and could move to y, which p2 holds and could leave
    # for z: p1 is p3's competitor, p2 is p1's.
    slices = [
        node_slice("n1", gpu(name, model=name), pool=f"pool-{name}", name=f"s-{name}")
        for name in ("x", "y", "z")
    ]
    devices = allocator(
        slices,
        [
            claim("p1", exactly("gpu", f'{MODEL} in ["x", "y"]')),
            claim("p2", exactly("gpu", f'{MODEL} in ["y", "z"]')),
            claim("p3", exactly("gpu", f'{MODEL} == "x"')),
        ],
    )
    devices.take(pod("p2", "p2"), "n1", "g")
    devices.take(pod("p1", "p1"), "n1", "g")
    assert held(devices) == {"p1": ["gpu=x"], "p2": ["gpu=y"]}
    devices.take(pod("p3", "p3"), "n1", "g")
    assert held(devices) == {"p1": ["gpu=y"], "p2": ["gpu=z"], "p3": ["gpu=x"]}


def nvlink_domains() -> list[object]:
    return [
        node_slice(
            "n1",
            *(gpu(f"a{i}", nvlinkDomain="A") for i in range(3)),
            *(gpu(f"b{i}", nvlinkDomain="B") for i in range(2)),
        )
    ]


def test_a_match_attribute_constraint_picks_each_members_nvlink_domain_jointly() -> None:
    # x wants 2 GPUs of one domain, y 3: first fit puts x in A (a0, a1), leaving y no
    # domain with 3 free; together, x goes to B and y to A.
    one_domain = [{"matchAttribute": DOMAIN}]
    devices = allocator(
        nvlink_domains(),  # type: ignore[arg-type]
        [
            claim("x", exactly("gpu", count=2), constraints=one_domain),
            claim("y", exactly("gpu", count=3), constraints=one_domain),
        ],
    )
    devices.take(pod("x", "x"), "n1", "g")
    assert held(devices) == {"x": ["gpu=a0", "gpu=a1"]}
    devices.take(pod("y", "y"), "n1", "g")
    assert held(devices) == {"x": ["gpu=b0", "gpu=b1"], "y": ["gpu=a0", "gpu=a1", "gpu=a2"]}


def test_first_available_choices_are_revisited_for_a_later_member() -> None:
    # kubernetes#138765: each member prefers a whole device, else a half; the first takes
    # the whole one and the second finds nothing, unless the first takes a half.
    counters = [{"name": "memory", "counters": {"memory": {"value": "2"}}}]
    whole = [{"counterSet": "memory", "counters": {"memory": {"value": "2"}}}]
    half = [{"counterSet": "memory", "counters": {"memory": {"value": "1"}}}]
    slices = [
        node_slice("n1", pool="gpu", count=2, counters=counters, name="a"),
        node_slice(
            "n1",
            gpu("whole", size="whole", consumes=whole),
            gpu("half-0", size="half", consumes=half),
            gpu("half-1", size="half", consumes=half),
            pool="gpu",
            count=2,
            name="b",
        ),
    ]
    size = f'device.attributes["{DRIVER}"].size'
    prefer_whole = first_available(
        "gpu", sub("whole", "gpu", f'{size} == "whole"'), sub("half", "gpu", f'{size} == "half"')
    )
    devices = allocator(slices, [claim("p1", prefer_whole), claim("p2", prefer_whole)])
    devices.take(pod("p1", "p1"), "n1", "g")
    assert held(devices) == {"p1": ["gpu/whole=whole"]}
    devices.take(pod("p2", "p2"), "n1", "g")
    assert sorted(held(devices).values()) == [["gpu/half=half-0"], ["gpu/half=half-1"]]


def test_a_shared_claim_is_allocated_once_for_its_members() -> None:
    devices = allocator([node_slice("n1", gpu("gpu-0"), gpu("gpu-1"))], [claim("shared")])
    devices.take(pod("a", "shared"), "n1", "g")
    searched = devices.steps_left
    devices.take(pod("b", "shared"), "n1", "g")
    assert held(devices) == {"shared": ["gpu=gpu-0"]}
    # The second member reuses the claim as it is: no search.
    assert devices.steps_left == searched
    results = devices.commit("g")
    assert list(results) == ["ns/shared"]


def test_a_shared_claims_members_go_where_its_devices_are_reachable() -> None:
    # The claim's node-local device pins it to n1; a member on n2 moves it to a device
    # both nodes reach, and the result names no node.
    slices = [
        node_slice("n1", gpu("local-0")),
        node_slice(None, gpu("net-0"), pool="fabric", allNodes=True),
        node_slice("n2", gpu("local-2")),
    ]
    devices = allocator(slices, [claim("shared")], nodes={"n1": {}, "n2": {}})
    devices.take(pod("a", "shared"), "n1", "g")
    assert held(devices) == {"shared": ["gpu=net-0"]}
    devices.give_back(pod("a", "shared"))
    taken = allocator(
        [
            node_slice("n1", gpu("local-0")),
            node_slice(None, gpu("net-0"), pool="fabric", allNodes=True),
        ],
        [claim("other", allocated=[("gpu", "fabric", "net-0")]), claim("shared")],
        nodes={"n1": {}, "n2": {}},
    )
    taken.take(pod("a", "shared"), "n1", "g")
    assert held(taken) == {"shared": ["gpu=local-0"]}
    fit = taken.fits(pod("b", "shared"), "n2", "g")
    assert fit.reason == CANNOT_ALLOCATE
    assert "on nodes n1, n2" in fit.detail
    assert taken.fits(pod("b", "shared"), "n1", "g").fits


def test_a_shared_claim_pinned_to_one_node_moves_for_a_member_elsewhere() -> None:
    slices = [
        node_slice("n1", gpu("local-0")),
        node_slice(None, gpu("net-0"), pool="fabric", allNodes=True),
    ]
    devices = allocator(slices, [claim("shared")], nodes={"n1": {}, "n2": {}})
    # The fabric pool sorts first: make the first member's pick the local one.
    devices.take(pod("a", "shared"), "n1", "g")
    before = held(devices)
    devices.take(pod("b", "shared"), "n2", "g")
    assert held(devices) == {"shared": ["gpu=net-0"]}
    result = devices.commit("g")["ns/shared"]
    assert devices_of(result) == ["gpu=net-0"] and result.node_selector is None
    assert before == {"shared": ["gpu=net-0"]}


def test_the_search_gives_up_at_its_bound_and_says_so() -> None:
    # Six members each want 2 GPUs of one domain; three domains of 3 GPUs hold only three
    # such pairs, which matching cannot see (constraints): the search must try them all.
    slices = [node_slice("n1", *(gpu(f"{d}{i}", nvlinkDomain=d) for d in "ABC" for i in range(3)))]
    one_domain = [{"matchAttribute": DOMAIN}]
    claims = [claim(f"m{i}", exactly("gpu", count=2), constraints=one_domain) for i in range(4)]
    devices = allocator(slices, claims, step_limit=200)
    for i in range(3):
        devices.take(pod(f"m{i}", f"m{i}"), "n1", "g")
    fit = devices.fits(pod("m3", "m3"), "n1", "g")
    assert fit.reason == CANNOT_ALLOCATE
    assert "gave up after 201 steps" in fit.detail
    unbounded = allocator(slices, claims)
    for i in range(3):
        unbounded.take(pod(f"m{i}", f"m{i}"), "n1", "g")
    assert "no choice of free devices" in unbounded.fits(pod("m3", "m3"), "n1", "g").detail


def test_giving_back_the_newest_take_restores_the_state_exactly() -> None:
    devices = allocator(
        a100_and_h100(),  # type: ignore[arg-type]
        [claim("x"), claim("y", exactly("gpu", f'{MODEL} == "a100"'))],
    )
    empty = devices.state()
    devices.take(pod("x", "x"), "n1", "g")
    after_x = devices.state()
    devices.take(pod("y", "y"), "n1", "g")
    assert held(devices) == {"x": ["gpu=gpu-1"], "y": ["gpu=gpu-0"]}
    devices.give_back(pod("y", "y"))
    assert devices.state() == after_x
    assert held(devices) == {"x": ["gpu=gpu-0"]}
    devices.give_back(pod("x", "x"))
    assert devices.state() == empty


def test_giving_back_frees_the_counters_a_partition_took() -> None:
    counters = [{"name": "memory", "counters": {"memory": {"value": "2"}}}]
    half = [{"counterSet": "memory", "counters": {"memory": {"value": "1"}}}]
    slices = [
        node_slice("n1", pool="gpu", count=2, counters=counters, name="a"),
        node_slice(
            "n1",
            gpu("half-0", consumes=half),
            gpu("half-1", consumes=half),
            pool="gpu",
            count=2,
            name="b",
        ),
    ]
    devices = allocator(slices, [claim("x", exactly(count=2))])
    empty = devices.state()
    devices.take(pod("x", "x"), "n1", "g")
    devices.give_back(pod("x", "x"))
    assert devices.state() == empty


def test_a_committed_gang_keeps_its_devices_for_the_rest_of_the_session() -> None:
    devices = allocator(a100_and_h100(), [claim("x"), claim("y"), claim("z")])  # type: ignore[arg-type]
    devices.take(pod("x", "x"), "n1", "g")
    devices.take(pod("y", "y"), "n1", "g")
    results = devices.commit("g")
    assert {k: devices_of(r) for k, r in results.items()} == {
        "ns/x": ["gpu=gpu-0"],
        "ns/y": ["gpu=gpu-1"],
    }
    devices.give_back(pod("y", "y"))
    assert not devices.fits(pod("z", "z"), "n1", "h").fits


def running(name: str, device: str) -> object:
    return claim(
        name,
        allocated=[("gpu", "n1", device)],
        node_selector=on_node("n1"),
        reserved_for=[f"{name}-uid"],
    )


def test_a_victim_frees_its_claims_devices_for_the_preemptor() -> None:
    devices = allocator(
        [node_slice("n1", gpu("gpu-0"))],
        [running("victim", "gpu-0"), claim("x")],  # type: ignore[list-item]
    )
    victim = pod("victim", "victim")
    assert devices.freed_by([victim]) == {(DRIVER, "n1", "gpu-0")}
    assert not devices.fits(pod("x", "x"), "n1", "g").fits
    devices.release(victim)
    assert devices.fits(pod("x", "x"), "n1", "g").fits
    devices.unrelease(victim)
    assert not devices.fits(pod("x", "x"), "n1", "g").fits


def test_a_claim_shared_with_a_pod_that_stays_frees_nothing() -> None:
    shared = claim(
        "shared",
        allocated=[("gpu", "n1", "gpu-0")],
        node_selector=on_node("n1"),
        reserved_for=["a-uid", "b-uid"],
    )
    devices = allocator([node_slice("n1", gpu("gpu-0"))], [shared, claim("x")])
    a, b = pod("a", "shared"), pod("b", "shared")
    assert devices.freed_by([a]) == frozenset()
    assert devices.freed_by([a, b]) == {(DRIVER, "n1", "gpu-0")}
    devices.release(a)
    assert not devices.fits(pod("x", "x"), "n1", "g").fits
    devices.release(b)
    assert devices.fits(pod("x", "x"), "n1", "g").fits


def test_a_pod_waits_for_its_claims_in_kube_schedulers_words() -> None:
    devices = allocator(
        [node_slice("n1", gpu("gpu-0"))],
        [claim("going", deleting=True), claim("theirs", owner_pod="someone-else")],
    )
    waiting = PodClaims("ns", "p", "p-uid", (), waiting='pod "ns/p": ResourceClaim not created yet')
    missing = pod("p", "nowhere")
    going = pod("p", "going")
    theirs = PodClaims("ns", "p", "p-uid", ("ns/theirs",), ("ns/theirs",))
    answers = [devices.fits(p, "n1", "g") for p in (waiting, missing, going, theirs)]
    assert {fit.verdict for fit in answers} == {Verdict.POD}
    assert [fit.reason for fit in answers] == [
        'pod "ns/p": ResourceClaim not created yet',
        'could not find ResourceClaim "ns/nowhere"',
        'resourceclaim "going" is being deleted',
        "ResourceClaim ns/theirs was not created for Pod ns/p (Pod is not owner)",
    ]
