"""Gang placement end to end: all or nothing, why not, and what changes when room appears."""

from __future__ import annotations

import re
import time

import pytest

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    Cluster,
    bound,
    condition,
    make_gang,
    placement_verdict,
    wait_for,
    wait_for_phase,
)

UNSCHEDULABLE = re.compile(r"\d+/4 tasks in gang unschedulable: 0/\d+ nodes are available")


def all_bound(cluster: Cluster, namespace: str, names: list[str]) -> bool:
    return len(bound(cluster.placements(namespace), names)) == len(names)


@pytest.mark.nodes(2, "4")
def test_gang_of_four_waits_for_its_last_member_then_is_placed_at_once(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler()
    podgroup, pods = make_gang("train", 4, cpu="1")
    names = [p["metadata"]["name"] for p in pods]
    cluster.create_podgroup(namespace, podgroup)
    for pod in pods[:3]:
        cluster.create_pod(namespace, pod)

    scheduler.wait_sessions(3)
    assert bound(cluster.placements(namespace)) == [], "a member was placed before the gang"

    cluster.create_pod(namespace, pods[3])
    wait_for(
        lambda: all_bound(cluster, namespace, names),
        timeout=2 * scheduler.period + 2,
        message=lambda: f"all 4 members bound\n{cluster.describe(namespace)}",
    )
    wait_for_phase(cluster, namespace, "train", "Running", timeout=5)


@pytest.mark.nodes(2, "2")
def test_gang_that_cannot_fit_stays_pending_says_why_and_is_placed_when_a_node_makes_room(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler(period=0.5)
    # 4 x 1.5 cpu on two 2-cpu nodes: two members would fit, the gang does not
    podgroup, pods = make_gang("big", 4, cpu="1500m")
    names = [p["metadata"]["name"] for p in pods]
    cluster.submit(namespace, podgroup, pods)

    def unschedulable_condition() -> str | None:
        found = placement_verdict(cluster.podgroup(namespace, "big"))
        return found.get("message") if found else None

    message = wait_for(
        unschedulable_condition,
        timeout=10,
        message=lambda: f"Unschedulable condition on podgroup big\n{cluster.describe(namespace)}",
    )
    assert UNSCHEDULABLE.search(message), message

    def pods_told_why() -> bool:
        # as in Volcano, the member that failed to fit shows its own fit error, the rest the gang's
        messages = []
        for pod in cluster.pods(namespace):
            scheduled = condition(pod, "PodScheduled") or {}
            if scheduled.get("status") != "False" or scheduled.get("reason") != "Unschedulable":
                return False
            messages.append(scheduled.get("message", ""))
        return all("nodes are available" in m for m in messages) and any(
            UNSCHEDULABLE.search(m) for m in messages
        )

    wait_for(pods_told_why, 10, message="PodScheduled=False with the gang's reason on every pod")
    wait_for(
        lambda: all(
            any(e["reason"] == "FailedScheduling" for e in cluster.events(namespace, "Pod", n))
            for n in names
        ),
        timeout=10,
        message="a FailedScheduling event on every member",
    )
    wait_for(
        lambda: any(
            e["reason"] == "Unschedulable" and "tasks in gang unschedulable" in e["message"]
            for e in cluster.events(namespace, "PodGroup", "big")
        ),
        timeout=10,
        message="an Unschedulable event on podgroup big",
    )
    scheduler.wait_sessions(3)
    assert bound(cluster.placements(namespace)) == [], "part of an unfit gang was placed"

    cluster.add_node("room", cpu="4")
    added = time.monotonic()
    wait_for(
        lambda: all_bound(cluster, namespace, names),
        timeout=10,
        message=lambda: f"the gang placed after the node was added\n{cluster.describe(namespace)}",
    )
    elapsed = time.monotonic() - added
    # two periods, plus the watch delivering the node and the binds' round trips
    assert elapsed <= 2 * scheduler.period + 0.5, f"placed {elapsed:.2f}s after the node came"


@pytest.mark.nodes(2, "2")
def test_two_gangs_on_room_for_one_place_exactly_one(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler()
    gangs = {}
    for name in ("alpha", "beta"):
        podgroup, pods = make_gang(name, 4, cpu="1")
        cluster.submit(namespace, podgroup, pods)
        gangs[name] = [p["metadata"]["name"] for p in pods]

    def winner() -> str | None:
        placements = cluster.placements(namespace)
        done = [g for g, names in gangs.items() if len(bound(placements, names)) == 4]
        return done[0] if len(done) == 1 else None

    won = wait_for(
        winner, 10, message=lambda: f"one whole gang placed\n{cluster.describe(namespace)}"
    )
    lost = next(g for g in gangs if g != won)
    scheduler.wait_sessions(3)
    placements = cluster.placements(namespace)
    assert len(bound(placements, gangs[won])) == 4
    assert bound(placements, gangs[lost]) == [], f"gang {lost} was partly placed: {placements}"
    wait_for(
        lambda: condition(cluster.podgroup(namespace, lost), "Unschedulable"),
        timeout=5,
        message=f"Unschedulable condition on the losing gang {lost}",
    )
