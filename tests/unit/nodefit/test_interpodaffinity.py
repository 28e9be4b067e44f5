"""InterPodAffinity gives kube-scheduler's verdicts and reasons, counts gang members as
they are placed, and scores preferred terms."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import wire
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.cache.kinds import namespaces
from scheduler.cache.world import World
from scheduler.engine import load_config, schedule
from scheduler.framework.status import Code
from scheduler.nodefit.interpodaffinity import InterPodAffinity, PlacedPods
from tests.unit.builders import gang, node, snapshot
from tests.unit.nodefit.topology_helpers import (
    HOST,
    ZONE,
    affinity,
    anti_affinity,
    cluster,
    gang_topology,
    match,
    pod,
    term,
    zoned_nodes,
)

AFFINITY = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"

WEB = {"app": "web"}
DB = {"app": "db"}


def nodes() -> list[Any]:
    # z1-0 and z1-1 in zone z1, z2-0 in z2, and "bare" with no zone label.
    return [*zoned_nodes({"z1": 2, "z2": 1}), node("bare", labels={HOST: "bare"})]


CASES = [
    # Required affinity.
    pytest.param(
        [pod("web", WEB, on="z1-0")],
        pod("p", DB, affinity(term(ZONE, labelSelector=match(app="web")))),
        {"z1-0": "", "z1-1": "", "z2-0": AFFINITY, "bare": AFFINITY},
        id="affinity-to-zone-of-matching-pod",
    ),
    pytest.param(
        [],
        pod("p", WEB, affinity(term(ZONE, labelSelector=match(app="web")))),
        {"z1-0": "", "z2-0": "", "bare": AFFINITY},
        id="first-pod-matching-its-own-term-may-start-the-group",
    ),
    pytest.param(
        [],
        pod("p", DB, affinity(term(ZONE, labelSelector=match(app="web")))),
        {"z1-0": AFFINITY, "z2-0": AFFINITY},
        id="no-matching-pod-and-not-matching-itself",
    ),
    pytest.param(
        [pod("web", WEB, on="z2-0")],
        pod("p", WEB, affinity(term(ZONE, labelSelector=match(app="web")))),
        {"z1-0": AFFINITY, "z2-0": ""},
        id="self-match-does-not-apply-once-a-matching-pod-exists",
    ),
    pytest.param(
        [pod("web", WEB, namespace="other", on="z1-0")],
        pod("p", DB, affinity(term(ZONE, labelSelector=match(app="web")))),
        {"z1-0": AFFINITY},
        id="affinity-looks-in-the-pods-own-namespace-by-default",
    ),
    pytest.param(
        [pod("web", WEB, namespace="other", on="z1-0")],
        pod("p", DB, affinity(term(ZONE, ["other"], labelSelector=match(app="web")))),
        {"z1-1": "", "z2-0": AFFINITY},
        id="affinity-namespaces-list",
    ),
    pytest.param(
        [pod("web", WEB, namespace="other", on="z1-0")],
        pod("p", DB, affinity(term(ZONE, labelSelector=match(app="web"), namespaceSelector={}))),
        {"z1-1": "", "z2-0": AFFINITY},
        id="empty-namespace-selector-is-every-namespace",
    ),
    pytest.param(
        [pod("web", WEB, on="z1-0")],
        pod(
            "p",
            DB,
            affinity(
                term(ZONE, labelSelector=match(app="web")),
                term(HOST, labelSelector=match(app="web")),
            ),
        ),
        {"z1-0": "", "z1-1": AFFINITY},
        id="every-term-must-hold",
    ),
    pytest.param(
        [pod("web", WEB, on="z1-0")],
        pod("p", DB, affinity(term(ZONE))),
        {"z1-0": AFFINITY},
        id="term-without-label-selector-matches-no-pod",
    ),
    # Required anti-affinity.
    pytest.param(
        [pod("web", WEB, on="z1-0")],
        pod("p", WEB, anti_affinity(term(HOST, labelSelector=match(app="web")))),
        {"z1-0": ANTI, "z1-1": "", "bare": ""},
        id="anti-affinity-on-hostname",
    ),
    pytest.param(
        [pod("web", WEB, on="z1-0")],
        pod("p", WEB, anti_affinity(term(ZONE, labelSelector=match(app="web")))),
        {"z1-0": ANTI, "z1-1": ANTI, "z2-0": "", "bare": ""},
        id="anti-affinity-on-zone-spares-nodes-without-the-label",
    ),
    pytest.param(
        [pod("web", WEB, namespace="other", on="z1-0")],
        pod("p", WEB, anti_affinity(term(HOST, labelSelector=match(app="web")))),
        {"z1-0": ""},
        id="anti-affinity-ignores-other-namespaces-by-default",
    ),
    pytest.param(
        [pod("web", WEB, namespace="team-a", on="z1-0")],
        pod(
            "p",
            WEB,
            anti_affinity(
                term(HOST, labelSelector=match(app="web"), namespaceSelector=match(team="a"))
            ),
        ),
        {"z1-0": ANTI, "z1-1": ""},
        id="namespace-selector-by-namespace-labels",
    ),
    pytest.param(
        [pod("web", WEB, namespace="team-b", on="z1-0")],
        pod(
            "p",
            WEB,
            anti_affinity(
                term(HOST, labelSelector=match(app="web"), namespaceSelector=match(team="a"))
            ),
        ),
        {"z1-0": ""},
        id="namespace-selector-not-matching",
    ),
    pytest.param(
        [pod("web", {"app": "web", "rev": "1"}, on="z1-0")],
        pod(
            "p",
            {"app": "web", "rev": "2"},
            anti_affinity(term(HOST, labelSelector=match(app="web"), matchLabelKeys=["rev"])),
        ),
        {"z1-0": ""},
        id="match-label-keys-other-revision-does-not-count",
    ),
    pytest.param(
        [pod("web", {"app": "web", "rev": "1"}, on="z1-0")],
        pod(
            "p",
            {"app": "web", "rev": "1"},
            anti_affinity(term(HOST, labelSelector=match(app="web"), matchLabelKeys=["rev"])),
        ),
        {"z1-0": ANTI},
        id="match-label-keys-same-revision-counts",
    ),
    pytest.param(
        [pod("web", {"app": "web", "tenant": "b"}, on="z1-0")],
        pod(
            "p",
            {"app": "web", "tenant": "a"},
            anti_affinity(term(HOST, labelSelector=match(app="web"), mismatchLabelKeys=["tenant"])),
        ),
        {"z1-0": ANTI},
        id="mismatch-label-keys-keeps-other-tenants-away",
    ),
    pytest.param(
        [pod("web", {"app": "web", "tenant": "a"}, on="z1-0")],
        pod(
            "p",
            {"app": "web", "tenant": "a"},
            anti_affinity(term(HOST, labelSelector=match(app="web"), mismatchLabelKeys=["tenant"])),
        ),
        {"z1-0": ""},
        id="mismatch-label-keys-same-tenant-may-share",
    ),
    pytest.param(
        [pod("web", WEB, on="z1-0", status=TaskStatus.RELEASING)],
        pod("p", WEB, anti_affinity(term(HOST, labelSelector=match(app="web")))),
        {"z1-0": ANTI},
        id="terminating-pods-still-count",
    ),
    pytest.param(
        [pod("web", WEB, on="z1-0")],
        pod(
            "p",
            WEB,
            anti_affinity(
                term(
                    HOST,
                    labelSelector={
                        "matchExpressions": [
                            {"key": "app", "operator": "In", "values": ["web", "api"]}
                        ]
                    },
                )
            ),
        ),
        {"z1-0": ANTI, "z1-1": ""},
        id="match-expressions-in",
    ),
    pytest.param(
        [pod("web", WEB, on="z1-0")],
        pod(
            "p",
            WEB,
            anti_affinity(
                term(
                    HOST,
                    labelSelector={
                        "matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]
                    },
                )
            ),
        ),
        {"z1-0": ""},
        id="match-expressions-does-not-exist",
    ),
    # The anti-affinity of placed pods against the incoming pod (symmetry).
    pytest.param(
        [pod("db", DB, anti_affinity(term(HOST, labelSelector=match(app="web"))), on="z1-0")],
        pod("p", WEB),
        {"z1-0": EXISTING, "z1-1": ""},
        id="existing-pods-anti-affinity-keeps-a-plain-pod-off-its-node",
    ),
    pytest.param(
        [pod("db", DB, anti_affinity(term(ZONE, labelSelector=match(app="web"))), on="z1-0")],
        pod("p", WEB),
        {"z1-1": EXISTING, "z2-0": "", "bare": ""},
        id="existing-pods-zone-anti-affinity",
    ),
    pytest.param(
        [pod("db", DB, anti_affinity(term(ZONE, labelSelector=match(app="web"))), on="bare")],
        pod("p", WEB),
        {"bare": "", "z1-0": ""},
        id="existing-pod-on-a-node-without-the-key-keeps-nobody-away",
    ),
    pytest.param(
        [pod("db", DB, anti_affinity(term(HOST, labelSelector=match(app="web"))), on="z1-0")],
        pod("p", DB),
        {"z1-0": ""},
        id="existing-pods-anti-affinity-not-matching-the-pod",
    ),
    pytest.param(
        [
            pod(
                "db",
                DB,
                anti_affinity(term(HOST, labelSelector=match(app="web"))),
                namespace="other",
                on="z1-0",
            )
        ],
        pod("p", WEB),
        {"z1-0": ""},
        id="existing-pods-term-is-about-its-own-namespace",
    ),
    pytest.param(
        [pod("web", WEB, on="z1-0")],
        pod("p", WEB, {**affinity(term(ZONE, labelSelector=match(app="web"))), **{}}),
        {"z1-1": ""},
        id="affinity-ok-on-another-node-of-the-zone",
    ),
]


@pytest.mark.parametrize(("placed", "incoming", "verdicts"), CASES)
def test_filter_verdicts_as_kube_scheduler(
    placed: list[TaskInfo], incoming: TaskInfo, verdicts: dict[str, str]
) -> None:
    snap = cluster(nodes(), placed)
    snap.namespaces = {"team-a": {"team": "a"}, "team-b": {"team": "b"}}
    plugin = InterPodAffinity(PlacedPods(snap))
    for name, reason in verdicts.items():
        status = plugin.filter(incoming, snap.nodes[name])
        assert status.reasons == ((reason,) if reason else ()), name
        if reason == AFFINITY:
            assert status.code is Code.UNRESOLVABLE
        elif reason:
            assert status.code is Code.UNSCHEDULABLE


def test_placed_gang_member_counts_and_unplacing_it_forgets_it() -> None:
    snap = cluster(nodes(), [])
    plugin = InterPodAffinity(PlacedPods(snap))
    rule = anti_affinity(term(HOST, labelSelector=match(app="web")))
    first, second = pod("a", WEB, rule), pod("b", WEB, rule)
    target = snap.nodes["z1-0"]
    snap.set_task_status(first, TaskStatus.ALLOCATED, node_name="z1-0")
    plugin.pods.add(first)
    plugin.placed(first)
    assert plugin.filter(second, target).reasons == (ANTI,)
    plugin.unplaced(first)
    plugin.pods.remove(first)
    assert plugin.filter(second, target).ok


def test_preferred_affinity_scores_the_matching_zone_highest() -> None:
    placed = [pod("web", WEB, on="z2-0")]
    snap = cluster(nodes(), placed)
    plugin = InterPodAffinity(PlacedPods(snap))
    spec = {
        "affinity": {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "podAffinityTerm": term(ZONE, labelSelector=match(app="web"))}
                ]
            }
        }
    }
    incoming = pod("p", DB, spec)
    assert plugin.score(incoming, snap.nodes["z2-0"]) == 100.0
    assert plugin.score(incoming, snap.nodes["z1-0"]) == 0.0


def test_existing_pods_preferred_anti_affinity_scores_its_zone_lowest() -> None:
    spec = {
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "podAffinityTerm": term(ZONE, labelSelector=match(app="web"))}
                ]
            }
        }
    }
    snap = cluster(nodes(), [pod("db", DB, spec, on="z1-0")])
    plugin = InterPodAffinity(PlacedPods(snap))
    incoming = pod("p", WEB)
    assert plugin.score(incoming, snap.nodes["z1-1"]) == 0.0
    assert plugin.score(incoming, snap.nodes["z2-0"]) == 100.0


# Gangs, through a whole session ----------------------------------------------


def _hosts(result: Any) -> list[str]:
    return sorted(bind.node for bind in result.binds)


SELF_ANTI = anti_affinity(term(HOST, labelSelector=match(gang="g")))


def test_gang_with_anti_affinity_to_itself_lands_on_distinct_nodes() -> None:
    job = gang_topology(gang("g", 4, cpu=1), {"gang": "g"}, SELF_ANTI)
    # One big node that the resource scores would fill first, and three small ones.
    nodes = zoned_nodes({"z1": 4}, cpu=2)
    nodes[0] = node("z1-0", cpu=32, labels={HOST: "z1-0", ZONE: "z1"})
    result = schedule(snapshot(nodes, [job]))
    assert len(set(_hosts(result))) == 4


def test_gang_with_anti_affinity_to_itself_on_too_few_nodes_waits_whole() -> None:
    job = gang_topology(gang("g", 4, cpu=1), {"gang": "g"}, SELF_ANTI)
    result = schedule(snapshot(zoned_nodes({"z1": 3}), [job]))
    assert result.binds == []
    assert any(ANTI in u.message for u in result.unschedulable)


def test_discarded_gang_members_no_longer_keep_others_away() -> None:
    # g (4 members, anti-affine to itself) cannot fit 3 nodes and is discarded; h, which
    # keeps away from g's pods, must then find all 3 nodes free of them.
    g = gang_topology(gang("g", 4, cpu=1, created="2024-01-01T00:00:00Z"), {"gang": "g"}, SELF_ANTI)
    h_rule = anti_affinity(term(HOST, labelSelector=match(gang="g")))
    h = gang_topology(gang("h", 3, cpu=1, created="2024-01-02T00:00:00Z"), {"gang": "h"}, h_rule)
    result = schedule(snapshot(zoned_nodes({"z1": 3}), [g, h]))
    assert {bind.job for bind in result.binds} == {"default/h"}
    assert len(result.binds) == 3


def test_gang_with_zone_affinity_to_itself_lands_in_one_zone() -> None:
    rule = affinity(term(ZONE, labelSelector=match(gang="g")))
    job = gang_topology(gang("g", 4, cpu=1), {"gang": "g"}, rule)
    # Least-allocated alone would spread the gang over all three nodes, both zones.
    nodes = [*zoned_nodes({"z1": 2}, cpu=3), *zoned_nodes({"z2": 1}, cpu=4)]
    result = schedule(snapshot(nodes, [job]))
    assert len(result.binds) == 4
    assert len({bind.node.split("-")[0] for bind in result.binds}) == 1


def test_gang_with_zone_affinity_waits_when_no_zone_holds_it() -> None:
    rule = affinity(term(ZONE, labelSelector=match(gang="g")))
    job = gang_topology(gang("g", 4, cpu=1), {"gang": "g"}, rule)
    # 3 cpu per zone, 6 in all: the cluster holds the gang, no zone does.
    result = schedule(snapshot(zoned_nodes({"z1": 3, "z2": 3}, cpu=1), [job]))
    assert result.binds == []


def test_plain_pod_is_kept_off_the_node_of_a_running_pods_anti_affinity() -> None:
    holder = pod("db", DB, anti_affinity(term(HOST, labelSelector=match(app="web"))), on="z1-0")
    job = gang_topology(gang("w", 1, cpu=1), WEB, {})
    # z1-0 is the emptier node: the resource scores alone would choose it.
    nodes = [node("z1-0", cpu=32, labels={HOST: "z1-0"}), node("z1-1", cpu=2)]
    snap = snapshot(nodes, [job])
    snap.nodes["z1-0"].add_task(holder)
    result = schedule(snap)
    assert _hosts(result) == ["z1-1"]


def test_namespace_labels_from_the_world_decide_a_namespace_selector() -> None:
    world = World()
    namespaces.upsert(
        world, wire.Namespace(metadata=wire.ObjectMeta(name="team-a", labels={"team": "a"}))
    )
    generation = world.generation
    namespaces.upsert(
        world, wire.Namespace(metadata=wire.ObjectMeta(name="team-a", labels={"team": "a"}))
    )
    assert world.generation == generation  # an unchanged namespace is not a change
    snap = world.snapshot()
    for placed in [pod("web", WEB, namespace="team-a", on="z1-0")]:
        snap.nodes.update({n.name: n for n in nodes()})
        snap.nodes["z1-0"].add_task(placed)
    rule = anti_affinity(
        term(HOST, labelSelector=match(app="web"), namespaceSelector=match(team="a"))
    )
    incoming = pod("p", WEB, rule)
    assert InterPodAffinity(PlacedPods(snap)).filter(incoming, snap.nodes["z1-0"]).reasons == (
        ANTI,
    )
    namespaces.delete(world, "team-a")
    later = world.snapshot()
    later.nodes = snap.nodes
    assert InterPodAffinity(PlacedPods(later)).filter(incoming, snap.nodes["z1-0"]).ok


def _config(predicate_arguments: str) -> Any:
    return load_config(
        f"""
actions: "allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
    arguments:
      {predicate_arguments}
  - name: nodeorder
"""
    )


def test_volcanos_pod_affinity_enable_false_turns_the_filter_off() -> None:
    job = gang_topology(gang("g", 4, cpu=1), {"gang": "g"}, SELF_ANTI)
    result = schedule(
        snapshot(zoned_nodes({"z1": 3}), [job]), _config("predicate.PodAffinityEnable: false")
    )
    assert len(result.binds) == 4


def test_volcanos_pod_affinity_enable_true_keeps_the_filter() -> None:
    job = gang_topology(gang("g", 4, cpu=1), {"gang": "g"}, SELF_ANTI)
    result = schedule(
        snapshot(zoned_nodes({"z1": 3}), [job]), _config("predicate.PodAffinityEnable: true")
    )
    assert result.binds == []


def _nodeorder_config(weight: str) -> Any:
    return load_config(
        f"""
actions: "allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: nodeorder
    arguments:
      podaffinity.weight: {weight}
"""
    )


@pytest.mark.parametrize(("weight", "chosen"), [("2", "z2-0"), ("0", "z1-0")])
def test_preferred_pod_affinity_weighs_against_free_room_by_podaffinity_weight(
    weight: str, chosen: str
) -> None:
    preferred = {
        "affinity": {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": term(ZONE, labelSelector=match(app="web"))}
                ]
            }
        }
    }
    job = gang_topology(gang("p", 1, cpu=1), DB, preferred)
    # z1-0 is far emptier; the web pod runs in z2.
    nodes = [*zoned_nodes({"z1": 1}, cpu=32), *zoned_nodes({"z2": 1}, cpu=4)]
    snap = snapshot(nodes, [job])
    snap.nodes["z2-0"].add_task(pod("web", WEB, on="z2-0"))
    result = schedule(snap, _nodeorder_config(weight))
    assert _hosts(result) == [chosen]
