"""explain's figures beside the session's reasons, who holds the room a waiting gang lacks
(and what preempt and reclaim would evict for it), and explain pod."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from scheduler.api import wire
from scheduler.api.provisioning import ProvisioningRequest
from scheduler.api.timestamps import format_rfc3339
from scheduler.engine import load_config
from scheduler.inspect.cluster import ClusterObjects, Observed, build_world, run_session
from scheduler.inspect.config import Configuration, built_in
from scheduler.inspect.explain import explain_text, lacking_resources, placement_figures
from scheduler.inspect.explain_target import PodAnswer, grouping_rule, pod_answer
from scheduler.inspect.figures import ReasonFigure, figures, reason_counts
from scheduler.inspect.holding import holding_lines
from scheduler.inspect.room import room
from scheduler.inspect.scale_up import scale_up_lines, scale_up_of
from scheduler.inspect.views import group_views, queue_views
from tests.unit.inspect.objects import (
    PREEMPTING,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
)

NOW = 1767225600.0 + 90


def tainted(name: str, cpu: str = "2") -> wire.Node:
    return node(name, cpu, [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}])


def crowded(**big: Any) -> ClusterObjects:
    """Two 2-cpu nodes, each with 1.5 cpu held by a low-priority bare pod, and one tainted
    node; gang "big" (2 x 1.5 cpu, priority 1000) waits."""
    return ClusterObjects(
        nodes=[node("n0"), node("n1"), tainted("t0", "8")],
        queues=[queue()],
        priority_classes=[priority_class("low", 10), priority_class("high", 1000)],
        podgroups=[podgroup("big", 2, priorityClassName="high")],
        pods=[
            *(
                pod(
                    f"low-{i}",
                    node_name=f"n{i}",
                    phase="Running",
                    cpu="1500m",
                    priority_class="low",
                    priority=10,
                )
                for i in range(2)
            ),
            *(pod(f"big-{i}", group="big", cpu="1500m", priority=1000, **big) for i in range(2)),
        ],
    )


def test_reasons_and_node_counts_are_read_from_the_sessions_message() -> None:
    message = (
        "2/2 tasks in gang unschedulable: 0/5 nodes are available: 3 Insufficient cpu, "
        "2 node(s) had untolerated taint {dedicated: infra}."
    )

    assert reason_counts(message) == [
        (3, "Insufficient cpu"),
        (2, "node(s) had untolerated taint {dedicated: infra}"),
    ]
    assert reason_counts("0/0 nodes are available: no nodes available to schedule pods.") == []
    assert reason_counts("pod has unbound PersistentVolumeClaims") == []


def test_a_resource_reason_carries_the_pods_need_and_the_largest_free_where_it_lacks() -> None:
    world = build_world(crowded())
    session = run_session(world, built_in().config, NOW)
    (task,) = [t for t in session.snapshot.jobs["ns/big"].tasks.values() if t.name == "big-0"]
    nodes = list(session.snapshot.nodes.values())

    found = figures("0/3 nodes are available: 2 Insufficient cpu, 1 Too many pods.", task, nodes)

    # t0 has 8 cpu free: it lacks nothing, so its room is not "largest free"
    assert found == [
        ReasonFigure(2, "Insufficient cpu", "cpu", "1500m", "500m"),
        ReasonFigure(1, "Too many pods"),
    ]
    assert found[0].line() == "2 nodes: Insufficient cpu (need 1500m, largest free 500m)"
    assert found[1].line() == "1 node: Too many pods"


def test_explain_groups_the_pods_by_their_reasons_with_the_figures() -> None:
    world = build_world(crowded())
    config = built_in().config
    session = run_session(world, config, NOW)

    reasons = placement_figures(world, config, session, "ns/big")

    messages = {p.name: p.message for p in session.result.unschedulable}
    assert "2 Insufficient cpu" in messages["big-0"]
    (pods, found) = reasons[0]
    assert "big-0" in pods
    cpu = next(f for f in found if f.resource == "cpu")
    assert (cpu.nodes, cpu.need, cpu.largest_free) == (2, "1500m", "500m")
    assert lacking_resources(reasons) == ["cpu"]


def test_room_names_its_holders_on_the_nodes_that_would_otherwise_fit_largest_first() -> None:
    objects = crowded()
    # a smaller holder on n1 beside low-1: listed after it
    objects.pods.append(
        pod("tiny", node_name="n1", phase="Running", cpu="100m", priority_class="low", priority=10)
    )
    objects.pods[1] = pod(
        "low-1", node_name="n1", phase="Running", cpu="1400m", priority_class="low", priority=10
    )
    world = build_world(objects)
    configuration = built_in()
    session = run_session(world, configuration.config, NOW)

    found = room(world, configuration, session, "ns/big", ["cpu"])

    assert found is not None
    assert found.nodes == ["n0", "n1"]  # t0's taint is not tolerated
    assert [h.key for h in found.holders] == ["ns/low-0", "ns/low-1", "ns/tiny"]
    assert found.holders[0].line(["cpu"]) == (
        "ns/low-0 (Pod, queue default, priority 10) holds cpu=1500m on n0"
    )
    assert found.added == ["preempt", "reclaim"]


def test_explain_counts_what_pods_hold_and_need_at_their_pod_level_figure() -> None:
    objects = crowded()
    # The holders' containers ask 100m, their pod level the 1500m; the gang's likewise.
    for held in objects.pods:
        held.spec.containers[0].resources.requests = {"cpu": "100m"}
        held.spec.resources = wire.ResourceRequirements(requests={"cpu": "1500m"})
    world = build_world(objects)
    configuration = built_in()
    session = run_session(world, configuration.config, NOW)

    reasons = placement_figures(world, configuration.config, session, "ns/big")
    found = room(world, configuration, session, "ns/big", ["cpu"])

    cpu = next(f for f in reasons[0][1] if f.resource == "cpu")
    assert (cpu.nodes, cpu.need, cpu.largest_free) == (2, "1500m", "500m")
    assert found is not None
    assert found.holders[0].line(["cpu"]) == (
        "ns/low-0 (Pod, queue default, priority 10) holds cpu=1500m on n0"
    )
    assert {e.name for e in found.evictions} == {"low-0", "low-1"}


def test_room_says_what_a_session_with_preempt_and_reclaim_added_would_evict() -> None:
    world = build_world(crowded())
    configuration = built_in()
    session = run_session(world, configuration.config, NOW)

    found = room(world, configuration, session, "ns/big", ["cpu"])

    assert session.result.evictions == []  # the configured session evicts nothing
    assert found is not None
    assert {e.name for e in found.evictions} == {"low-0", "low-1"}
    assert all("preempted by ns/big (priority 1000)" in e.reason for e in found.evictions)
    assert found.would_run
    view = next(v for v in group_views(session, world) if v.name == "big")
    text = explain_text(
        view, queue_views(session)[0], session, world, [],
        configuration=configuration, room_found=found,
        reasons=placement_figures(world, configuration.config, session, "ns/big"),
    )  # fmt: skip
    sections = [text.index(s) for s in ("Placement:", "Ahead of it", "What would let it run:")]
    assert sections == sorted(sections)
    assert "configuration: built-in default (actions: enqueue, allocate, backfill)" in text
    assert "2 nodes: Insufficient cpu (need 1500m, largest free 500m)" in text
    assert "preempt and reclaim are not in the configured actions" in text
    assert "evicts 2 pods for it, and then it would run:" in text
    assert "Verdict: waits" in text


def test_room_asks_the_configured_session_when_preempt_and_reclaim_are_configured() -> None:
    objects = crowded()
    for holder in objects.pods[:2]:
        holder.spec.priority = 1000  # as high as the gang: nothing to preempt
    world = build_world(objects)
    text = PREEMPTING.replace("preempt,", "preempt, reclaim,")
    configuration = Configuration(load_config(text), text, "file s.yaml")
    session = run_session(world, configuration.config, NOW)

    found = room(world, configuration, session, "ns/big", ["cpu"])

    assert found is not None
    assert found.asked_with is configuration
    assert found.added == []
    assert found.evictions == []  # equal priority: nothing to preempt, one queue: no reclaim
    assert not found.would_run


def observed(objects: ClusterObjects) -> tuple[Observed, Any]:
    world = build_world(objects)
    seen = Observed(world, objects, built_in())
    return seen, run_session(world, built_in().config, NOW)


def test_explain_pod_of_a_gang_names_its_podgroup_and_why_it_waits() -> None:
    seen, session = observed(crowded())

    answer = pod_answer(seen, session, "ns/big-1")

    assert isinstance(answer, PodAnswer)
    assert answer.group == "ns/big"
    assert answer.waits
    assert answer.lines[0] == "Pod ns/big-1: member of PodGroup ns/big"
    message = next(p.message for p in session.result.unschedulable if p.name == "big-1")
    assert answer.lines[1] == f"  waits: {message}"


def test_explain_pod_of_a_bare_pod_names_its_one_pod_group_and_its_node() -> None:
    seen, session = observed(crowded())

    answer = pod_answer(seen, session, "ns/low-0")

    assert isinstance(answer, PodAnswer)
    assert answer.group == "ns/podgroup-uid-low-0"
    assert answer.lines[0] == (
        "Pod ns/low-0: member of no PodGroup: it is its own one-pod group ns/podgroup-uid-low-0"
    )
    assert answer.lines[1] == "  on node n0 (Running)"
    assert not answer.waits


def test_explain_pod_of_a_pod_the_session_places_says_where() -> None:
    objects = crowded()
    # Of higher priority than gang "big", which starves by now and holds the free room.
    objects.pods.append(pod("fresh", cpu="100m", priority=2000))
    seen, session = observed(objects)

    answer = pod_answer(seen, session, "ns/fresh")

    assert isinstance(answer, PodAnswer)
    bind = next(b for b in session.result.binds if b.name == "fresh")
    assert answer.lines[1].startswith(f"  this session places it on {bind.node} (")
    assert not answer.waits


def test_explain_pod_whose_podgroup_does_not_exist_says_it_waits_for_it() -> None:
    objects = crowded()
    objects.pods.append(pod("lost", group="nowhere"))
    seen, session = observed(objects)

    answer = pod_answer(seen, session, "ns/lost")

    assert isinstance(answer, PodAnswer)
    assert answer.waits
    assert "PodGroup ns/nowhere does not exist" in answer.lines[1]


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("ns/theirs", "is not muster's: its spec.schedulerName is 'default-scheduler'"),
        ("ns/absent", "pod ns/absent not found"),
    ],
)
def test_explain_pod_refuses_a_pod_not_of_muster_or_not_found(name: str, said: str) -> None:
    objects = crowded()
    theirs = pod("theirs")
    theirs.spec.scheduler_name = "default-scheduler"
    objects.pods.append(theirs)
    seen, session = observed(objects)

    answer = pod_answer(seen, session, name)

    assert isinstance(answer, str)
    assert said in answer


def test_explain_shows_the_room_held_for_a_starving_gang_node_by_node() -> None:
    # "big" was created 90 s before the session: past the default waiting time of 60 s.
    _, session = observed(crowded())
    lines = holding_lines(session.result, "ns/big")
    assert lines[1] == f"Holding (starving since {format_rfc3339(NOW - 90 + 60)}):"
    assert lines[2:] == ["  n0: cpu 500m", "  n1: cpu 500m"]
    assert holding_lines(session.result, "ns/low-0") == []


def test_explain_says_which_subgroups_are_placed_and_which_wait_and_why() -> None:
    # Three replicas of 2 pods, 2 needed, on room for 5 pods: two placed, one waits.
    policy = {
        "name": "workers",
        "subGroupSize": 2,
        "minSubGroups": 2,
        "matchLabelKeys": ["ray.io/worker-group-replica-name"],
    }
    objects = ClusterObjects(
        nodes=[node(f"n{i}", "1") for i in range(5)],
        queues=[queue()],
        podgroups=[podgroup("ray", 4, subGroupPolicy=[policy])],
        pods=[
            pod(
                f"w{r}-{h}",
                group="ray",
                labels={"ray.io/worker-group-replica-name": f"r{r}"},
            )
            for r in range(3)
            for h in range(2)
        ],
    )
    world = build_world(objects)
    session = run_session(world, built_in().config, NOW)
    (view,) = [v for v in group_views(session, world) if v.name == "ray"]
    text = explain_text(view, queue_views(session)[0], session, world, [])
    assert "  workers: 2 of 3 subgroups of 2 pods placed, minSubGroups 2" in text
    assert "    workers[r0]: placed (2/2 pods placed)" in text
    assert "    workers[r2]: waits (0/2 pods placed): 0/5 nodes are available" in text


def test_explain_names_the_rule_muster_controller_made_the_podgroup_by() -> None:
    objects = crowded()
    rule = "JobSet ns/train (startupPolicyOrder AnyOrder): one group for the whole JobSet"
    objects.podgroups[0].metadata.annotations["muster.dev/grouping-rule"] = rule
    seen, session = observed(objects)
    view = next(v for v in group_views(session, seen.world) if v.name == "big")

    found = grouping_rule(seen, "ns/big")
    text = explain_text(view, queue_views(session)[0], session, seen.world, [], rule=found)

    assert found == rule
    assert text.splitlines()[1] == f"made by muster controller: {rule}"
    assert grouping_rule(observed(crowded())[0], "ns/big") is None, "a PodGroup it did not make"


def test_explain_says_where_a_scale_up_stands_and_shows_the_provisioned_capacity_held() -> None:
    objects = crowded()
    request = {
        "metadata": {
            "name": "big-scaleup-1",
            "namespace": "ns",
            "uid": "req-1",
            "creationTimestamp": format_rfc3339(NOW - 20),
            "labels": {
                "app.kubernetes.io/managed-by": "muster",
                "scale-up.muster.dev/attempt": "1",
            },
            "ownerReferences": [{"kind": "PodGroup", "name": "big", "uid": "uid-pg-big"}],
        },
        "spec": {
            "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
            "podSets": [{"podTemplateRef": {"name": "big-scaleup-1-0"}, "count": 2}],
        },
        "status": {
            "conditions": [
                {
                    "type": "Provisioned",
                    "status": "True",
                    "reason": "CapacityIsProvisioned",
                    "message": "Capacity is found in the cluster",
                    "lastTransitionTime": format_rfc3339(NOW - 10),
                }
            ]
        },
    }
    objects.others["provisioningrequest"] = [msgspec.convert(request, ProvisioningRequest)]
    config = load_config(
        """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}, {name: scaleup}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""
    )
    world = build_world(objects)
    session = run_session(world, config, NOW)
    report = scale_up_of(session.result, "ns/big")
    assert scale_up_lines(report) == [
        "",
        "Scale-up: provisioned: the new capacity is held for the gang",
        "  ProvisioningRequest big-scaleup-1 (attempt 1)",
        "  adds room for 2 pods: 2 x cpu 1500m",
    ]
    lines = holding_lines(session.result, "ns/big")
    assert lines[1] == f"Holding provisioned capacity (since {format_rfc3339(NOW - 10)}):"
    assert lines[2:] == ["  n0: cpu 500m", "  n1: cpu 500m"]


def partly_bound(members_fit: bool) -> ClusterObjects:
    """Gang "cut" of three 1-cpu pods, two bound on n0 30 s before the session, never
    written Running; the third fits on n1 or (`members_fit` False) on no node."""
    group = podgroup("cut", 3)
    group = msgspec.structs.replace(group, status=wire.PodGroupStatus(phase="Inqueue"))
    bound_at = format_rfc3339(NOW - 30)
    bound = [
        msgspec.structs.replace(
            member,
            status=wire.PodStatus(
                phase="Running",
                conditions=[
                    wire.Condition(
                        type="PodScheduled", status="True", last_transition_time=bound_at
                    )
                ],
            ),
        )
        for member in (pod(f"cut-{i}", group="cut", node_name="n0") for i in range(2))
    ]
    missing = pod("cut-2", group="cut", cpu="1" if members_fit else "3")
    return ClusterObjects(
        nodes=[node("n0"), node("n1")],
        queues=[queue()],
        podgroups=[group],
        pods=[*bound, missing],
    )


def test_explain_says_a_partly_bound_gang_is_completed_now() -> None:
    seen, session = observed(partly_bound(members_fit=True))
    view = next(v for v in group_views(session, seen.world) if v.key == "ns/cut")

    text = explain_text(view, queue_views(session)[0], session, seen.world, [])

    assert f"Partly bound (some members bound since {format_rfc3339(NOW - 30)}" in text
    assert "  completed now, on the room that is left" in text
    assert "Verdict: would run" in text


def test_explain_says_when_a_partly_bound_gang_it_cannot_complete_is_undone() -> None:
    seen, session = observed(partly_bound(members_fit=False))
    view = next(v for v in group_views(session, seen.world) if v.key == "ns/cut")

    text = explain_text(view, queue_views(session)[0], session, seen.world, [])

    assert "  held for: the room its missing members need is kept from every other gang" in text
    assert f"  undone at {format_rfc3339(NOW - 30 + 60)} unless complete by then" in text
    assert "Holding for its missing members (partly bound since" in text
    assert "Verdict: waits" in text
