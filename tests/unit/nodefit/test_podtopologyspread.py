"""PodTopologySpread gives kube-scheduler's verdicts and reasons, balances a gang as its
members are placed, and scores ScheduleAnyway constraints."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.engine import load_config, schedule
from scheduler.framework.status import Code
from scheduler.nodefit.interpodaffinity import PlacedPods
from scheduler.nodefit.podtopologyspread import PodTopologySpread
from tests.unit.builders import gang, node, snapshot
from tests.unit.nodefit.topology_helpers import (
    HOST,
    ZONE,
    cluster,
    constraint,
    gang_topology,
    match,
    pod,
    spread,
    zoned_nodes,
)

SKEW = "node(s) didn't match pod topology spread constraints"
MISSING = "node(s) didn't match pod topology spread constraints (missing required label)"
WEB = {"app": "web"}
BY_ZONE = constraint(labelSelector=match(app="web"))


def nodes() -> list[Any]:
    # Zones z1 (2 nodes), z2 (1 node), z3 (1 node, tainted), and "bare" with no zone.
    built = zoned_nodes({"z1": 2, "z2": 1})
    built.append(
        node("z3-0", labels={HOST: "z3-0", ZONE: "z3"}, taints=[("dedicated", "x", "NoSchedule")])
    )
    built.append(node("bare", labels={HOST: "bare"}))
    return built


def web(name: str, on: str, **options: Any) -> TaskInfo:
    return pod(name, WEB, on=on, **options)


CASES = [
    pytest.param(
        [web("a", "z1-0")],
        pod("p", WEB, spread(BY_ZONE)),
        {"z1-0": SKEW, "z1-1": SKEW, "z2-0": "", "z3-0": ""},
        id="zone-with-a-pod-exceeds-skew-1-while-others-are-empty",
    ),
    pytest.param(
        [web("a", "z1-0"), web("b", "z2-0"), web("c", "z3-0")],
        pod("p", WEB, spread(BY_ZONE)),
        {"z1-0": "", "z2-0": "", "z3-0": ""},
        id="balanced-zones-all-fit",
    ),
    pytest.param(
        [web("a", "z1-0")],
        pod("p", WEB, spread(BY_ZONE)),
        {"bare": MISSING},
        id="node-without-the-topology-label",
    ),
    pytest.param(
        [web("a", "z1-0"), web("b", "z1-1")],
        pod("p", WEB, spread(constraint(max_skew=2, labelSelector=match(app="web")))),
        {"z1-0": SKEW, "z2-0": ""},
        id="max-skew-2",
    ),
    pytest.param(
        [web("a", "z1-0")],
        pod("p", {"app": "db"}, spread(BY_ZONE)),
        {"z1-0": "", "z2-0": ""},
        id="pod-not-matching-its-own-selector-adds-nothing",
    ),
    pytest.param(
        [web("a", "z1-0", namespace="other")],
        pod("p", WEB, spread(BY_ZONE)),
        {"z1-0": ""},
        id="pods-of-other-namespaces-do-not-count",
    ),
    pytest.param(
        [web("a", "z1-0", status=TaskStatus.RELEASING)],
        pod("p", WEB, spread(BY_ZONE)),
        {"z1-0": ""},
        id="terminating-pods-do-not-count",
    ),
    pytest.param(
        [web("a", "z1-0"), web("b", "z2-0")],
        pod(
            "p",
            WEB,
            spread(constraint(labelSelector=match(app="web"), nodeTaintsPolicy="Honor")),
        ),
        {"z1-0": "", "z2-0": ""},
        id="taints-policy-honor-leaves-the-tainted-zone-out",
    ),
    pytest.param(
        [web("a", "z1-0"), web("b", "z2-0")],
        pod("p", WEB, spread(BY_ZONE)),
        {"z1-0": SKEW, "z3-0": ""},
        id="taints-policy-ignore-counts-the-tainted-zone",
    ),
    pytest.param(
        [web("a", "z1-0")],
        pod(
            "p",
            WEB,
            {
                **spread(BY_ZONE),
                "nodeSelector": {ZONE: "z1"},
            },
        ),
        {"z1-0": ""},
        id="affinity-policy-honor-counts-only-the-selected-zone",
    ),
    pytest.param(
        [web("a", "z1-0")],
        pod(
            "p",
            WEB,
            {
                **spread(constraint(labelSelector=match(app="web"), nodeAffinityPolicy="Ignore")),
                "nodeSelector": {ZONE: "z1"},
            },
        ),
        {"z1-0": SKEW},
        id="affinity-policy-ignore-counts-every-zone",
    ),
    pytest.param(
        [web("a", "z1-0"), web("b", "z2-0"), web("c", "z3-0")],
        pod("p", WEB, spread(constraint(labelSelector=match(app="web"), minDomains=4))),
        {"z1-0": SKEW},
        id="min-domains-more-than-exist-makes-the-minimum-0",
    ),
    pytest.param(
        [web("a", "z1-0"), web("b", "z2-0"), web("c", "z3-0")],
        pod("p", WEB, spread(constraint(labelSelector=match(app="web"), minDomains=3))),
        {"z1-0": ""},
        id="min-domains-met",
    ),
    pytest.param(
        [pod("a", {"app": "web", "rev": "1"}, on="z1-0")],
        pod(
            "p",
            {"app": "web", "rev": "2"},
            spread(constraint(labelSelector=match(app="web"), matchLabelKeys=["rev"])),
        ),
        {"z1-0": ""},
        id="match-label-keys-counts-only-the-same-revision",
    ),
    pytest.param(
        [web("a", "z1-0")],
        pod("p", WEB, spread(constraint(HOST, labelSelector=match(app="web")))),
        {"z1-0": SKEW, "z1-1": "", "bare": ""},
        id="hostname-spread",
    ),
    pytest.param(
        [web("a", "z1-0")],
        pod("p", WEB, spread(constraint(when="ScheduleAnyway", labelSelector=match(app="web")))),
        {"z1-0": "", "bare": ""},
        id="schedule-anyway-never-filters",
    ),
]


@pytest.mark.parametrize(("placed", "incoming", "verdicts"), CASES)
def test_filter_verdicts_as_kube_scheduler(
    placed: list[TaskInfo], incoming: TaskInfo, verdicts: dict[str, str]
) -> None:
    snap = cluster(nodes(), placed)
    plugin = PodTopologySpread(PlacedPods(snap))
    for name, reason in verdicts.items():
        status = plugin.filter(incoming, snap.nodes[name])
        assert status.reasons == ((reason,) if reason else ()), name
        if reason == MISSING:
            assert status.code is Code.UNRESOLVABLE
        elif reason:
            assert status.code is Code.UNSCHEDULABLE


def test_schedule_anyway_scores_the_emptier_zone_higher() -> None:
    snap = cluster(nodes(), [web("a", "z1-0"), web("b", "z1-1")])
    plugin = PodTopologySpread(PlacedPods(snap))
    incoming = pod(
        "p", WEB, spread(constraint(when="ScheduleAnyway", labelSelector=match(app="web")))
    )
    assert plugin.score(incoming, snap.nodes["z2-0"]) > plugin.score(incoming, snap.nodes["z1-0"])
    assert plugin.score(incoming, snap.nodes["bare"]) == 0.0


# Gangs, through a whole session ----------------------------------------------


def _zones(result: Any) -> Counter[str]:
    return Counter(bind.node.split("-")[0] for bind in result.binds)


def test_gang_of_six_spread_max_skew_1_over_three_zones_lands_two_per_zone() -> None:
    rule = spread(constraint(labelSelector=match(gang="g")))
    job = gang_topology(gang("g", 6, cpu=1), {"gang": "g"}, rule)
    # z1 is much bigger: the resource scores alone would pile the gang there.
    nodes = [*zoned_nodes({"z1": 1}, cpu=64), *zoned_nodes({"z2": 1, "z3": 1}, cpu=4)]
    result = schedule(snapshot(nodes, [job]))
    assert _zones(result) == {"z1": 2, "z2": 2, "z3": 2}


def test_spread_gang_waits_when_a_zone_cannot_take_its_share() -> None:
    rule = spread(constraint(labelSelector=match(gang="g")))
    job = gang_topology(gang("g", 6, cpu=1), {"gang": "g"}, rule)
    # z3 has room for one pod: 3/2/1 has skew 2.
    nodes = [*zoned_nodes({"z1": 1, "z2": 1}, cpu=8), *zoned_nodes({"z3": 1}, cpu=1)]
    result = schedule(snapshot(nodes, [job]))
    assert result.binds == []
    assert any(SKEW in u.message for u in result.unschedulable)


def test_volcanos_pod_topology_spread_enable_false_turns_the_filter_off() -> None:
    config = load_config(
        """
actions: "allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
    arguments:
      predicate.PodTopologySpreadEnable: false
  - name: nodeorder
"""
    )
    rule = spread(constraint(labelSelector=match(gang="g")))
    job = gang_topology(gang("g", 6, cpu=1), {"gang": "g"}, rule)
    nodes = [*zoned_nodes({"z1": 1, "z2": 1}, cpu=8), *zoned_nodes({"z3": 1}, cpu=1)]
    assert len(schedule(snapshot(nodes, [job]), config).binds) == 6


def test_gang_spread_schedule_anyway_over_three_zones_is_balanced() -> None:
    rule = spread(constraint(when="ScheduleAnyway", labelSelector=match(gang="g")))
    job = gang_topology(gang("g", 6, cpu=1), {"gang": "g"}, rule)
    # Three equal nodes per zone: only the spread score tells the zones apart.
    nodes = zoned_nodes({"z1": 3, "z2": 3, "z3": 3}, cpu=64)
    result = schedule(snapshot(nodes, [job]))
    assert _zones(result) == {"z1": 2, "z2": 2, "z3": 2}
