"""NodePicker and DoNotSchedule spread: a refused domain's nodes are set aside together and
offered again when the domain turns, and a spread gang's windows take every domain in turn."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from scheduler.api.node import NodeInfo
from scheduler.api.task import TaskInfo
from scheduler.build import core
from scheduler.engine import load_config, schedule
from scheduler.framework.config import DEFAULT_CONFIG_YAML, SchedulerConfig
from scheduler.framework.decisions import SessionResult
from scheduler.plugins.nodeorder import NodeOrderPlugin
from scheduler.plugins.predicates import PredicatesPlugin
from tests.unit.builders import gang, snapshot
from tests.unit.nodefit.topology_helpers import (
    ZONE,
    constraint,
    gang_topology,
    match,
    spread,
    zoned_nodes,
)

ZONES = 10
PER_ZONE = 30


def _zones_of(binds: list[Any], nodes: list[NodeInfo]) -> Counter[str]:
    zone = {n.name: n.labels[ZONE] for n in nodes}
    return Counter(zone[b.node] for b in binds)


def _counted(monkeypatch: pytest.MonkeyPatch, plugin: type[Any], method: str) -> Counter[str]:
    """How many times the plugin's (task, node) method is asked about each node."""
    counts: Counter[str] = Counter()
    real = getattr(plugin, method)

    def counting(self: Any, task: TaskInfo, node: NodeInfo) -> Any:
        counts[node.name] += 1
        return real(self, task, node)

    monkeypatch.setattr(plugin, method, counting)
    return counts


def _spread_gang(
    nodes: list[NodeInfo], size: int, config: SchedulerConfig | None = None
) -> SessionResult:
    """The session's result for gang "g" of `size` 1-cpu pods spread over the nodes' zones
    (DoNotSchedule, maxSkew 1), placed alone on `nodes`."""
    rule = spread(constraint(labelSelector=match(gang="g")))
    job = gang_topology(gang("g", size, cpu=1), {"gang": "g"}, rule)
    return schedule(snapshot(nodes, [job]), config)


def _grouped_zones() -> list[NodeInfo]:
    """ZONES zones of PER_ZONE roomy nodes, named so that each zone's nodes sit together."""
    return zoned_nodes({f"z{z}": PER_ZONE for z in range(ZONES)}, cpu=64)


@pytest.mark.skipif(
    core() != "plain", reason="counts calls by replacing a method, which compiled code binds early"
)
def test_a_spread_gang_does_not_weigh_a_refused_zones_nodes_again_after_every_placement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Ten zones whose nodes sit together in name order; maxSkew 1: after each placement
    # the zones ahead refuse until the others catch up. Each pick weighing every node a
    # refused zone offered before costs pods x refused nodes; by domain it is about one
    # weighing per pod and per zone turning.
    weighed = _counted(monkeypatch, PredicatesPlugin, "node_fits")
    size = 4 * ZONES
    nodes = _grouped_zones()
    result = _spread_gang(nodes, size)
    assert _zones_of(result.binds, nodes) == {f"z{z}": 4 for z in range(ZONES)}
    assert size <= sum(weighed.values()) <= 3 * size


@pytest.mark.skipif(
    core() != "plain", reason="counts calls by replacing a method, which compiled code binds early"
)
def test_a_spread_gangs_windows_offer_every_zone_where_names_group_nodes_by_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Ten zones whose nodes sit together in name order, windows of 10 to 15 nodes: read in name
    # order a window holds one zone, and a gang of one pod per zone scores a window per
    # zone; read zone by zone, the first window holds every zone.
    scored = _counted(monkeypatch, NodeOrderPlugin, "node_score")
    config = load_config(
        DEFAULT_CONFIG_YAML
        + "configurations:\n- name: allocate\n"
        + "  arguments: {percentageOfNodesToScore: 5, minFeasibleNodesToFind: 10}\n"
    )
    nodes = _grouped_zones()
    result = _spread_gang(nodes, ZONES, config)
    assert _zones_of(result.binds, nodes) == {f"z{z}": 1 for z in range(ZONES)}
    assert ZONES <= sum(scored.values()) <= 4 * ZONES


def test_a_zone_refused_for_the_gang_is_offered_again_once_the_others_catch_up() -> None:
    # z1's big node scores best for every pod: it is refused after each pod it takes
    # until z2 and z3 have as many, then offered again.
    nodes = [*zoned_nodes({"z1": 1}, cpu=64), *zoned_nodes({"z2": 2, "z3": 2}, cpu=4)]
    result = _spread_gang(nodes, 9)
    assert _zones_of(result.binds, nodes) == {"z1": 3, "z2": 3, "z3": 3}


def test_a_spread_gang_refused_by_skew_names_every_node_in_its_message() -> None:
    # Five 1-cpu pods over z1 (4 nodes), z2 and z3 (1 node each): after z1 takes its second
    # pod, maxSkew 1 refuses z1's free nodes while z2 and z3 are full. The message counts
    # every node, those set aside by domain included.
    result = _spread_gang(zoned_nodes({"z1": 4, "z2": 1, "z3": 1}, cpu=1), 5)
    assert result.binds == []
    (update,) = [u for u in result.podgroups if u.name == "g"]
    messages = " ".join(c.message for c in update.conditions)
    assert "0/6 nodes are available" in messages
    assert "2 node(s) didn't match pod topology spread constraints" in messages
    assert "4 Insufficient cpu" in messages
