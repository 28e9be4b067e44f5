"""The nodeorder plugin ranks nodes with kube-scheduler's scorers and Volcano's weights."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.errors import ConfigError
from scheduler.api.node import NodeInfo
from scheduler.api.task import TaskStatus
from scheduler.plugins.nodeorder import NodeOrderPlugin
from tests.unit.builders import node, task

# The scorers that need a session (taints, images) are off in the one-scorer configs.
NO_SESSION_SCORERS = {"tainttoleration.weight": 0, "imagelocality.weight": 0}
ONLY_LEAST = {"balancedresource.weight": 0, "nodeaffinity.weight": 0, **NO_SESSION_SCORERS}
ONLY_MOST = {"leastrequested.weight": 0, "mostrequested.weight": 1, **ONLY_LEAST}
ONLY_BALANCED = {"leastrequested.weight": 0, "nodeaffinity.weight": 0, **NO_SESSION_SCORERS}
ONLY_AFFINITY = {"leastrequested.weight": 0, "balancedresource.weight": 0, **NO_SESSION_SCORERS}


def loaded(name: str, cpu: float, memory: str, used_cpu: float, used_memory: str) -> NodeInfo:
    target = node(name, cpu=cpu, memory=memory)
    target.add_task(
        task(f"{name}-used", used_cpu, used_memory, status=TaskStatus.RUNNING, node_name=name)
    )
    return target


def preferring(*terms: tuple[int, dict[str, Any]]) -> Any:
    preferred = [{"weight": weight, "preference": term} for weight, term in terms]
    spec = {
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    }
    return task("p", 1, "1Gi", spec=spec)


def label_in(key: str, value: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}


# least-allocated


def test_least_allocated_scores_the_free_share_after_placement() -> None:
    plugin = NodeOrderPlugin(ONLY_LEAST)
    # cpu (4 - 1) / 4 = 75, memory (16 - 8) / 16 = 50: mean 62.5
    assert plugin.node_score(task("p", 1, "8Gi"), node("n1", 4, "16Gi")) == 62.5


def test_least_allocated_prefers_the_emptier_node() -> None:
    plugin = NodeOrderPlugin(ONLY_LEAST)
    pod = task("p", 1, "1Gi")
    busy = loaded("busy", 4, "16Gi", 2, "8Gi")
    empty = node("empty", 4, "16Gi")
    assert plugin.node_score(pod, empty) > plugin.node_score(pod, busy)


def test_least_allocated_gives_zero_for_a_resource_the_pod_would_overflow() -> None:
    plugin = NodeOrderPlugin(ONLY_LEAST)
    # cpu overflows (0); memory (16 - 8) / 16 = 50: mean 25
    assert plugin.node_score(task("p", 8, "8Gi"), node("n1", 4, "16Gi")) == 25


def test_pod_without_requests_counts_as_100m_cpu_and_200mi_memory_for_scoring() -> None:
    plugin = NodeOrderPlugin(ONLY_LEAST)
    # cpu (1000m - 100m) / 1000m = 90, memory (2000Mi - 200Mi) / 2000Mi = 90
    assert plugin.node_score(task("p", 0), node("n1", 1, "2000Mi")) == pytest.approx(90)


def test_best_effort_pods_still_spread_across_nodes() -> None:
    plugin = NodeOrderPlugin(ONLY_LEAST)
    pod = task("p", 0)
    busy = loaded("busy", 4, "16Gi", 2, "8Gi")
    empty = node("empty", 4, "16Gi")
    assert plugin.node_score(pod, empty) > plugin.node_score(pod, busy)


# most-allocated


def test_most_allocated_scores_the_used_share_after_placement() -> None:
    plugin = NodeOrderPlugin(ONLY_MOST)
    # cpu 1 / 4 = 25, memory 8 / 16 = 50: mean 37.5
    assert plugin.node_score(task("p", 1, "8Gi"), node("n1", 4, "16Gi")) == 37.5


def test_most_allocated_prefers_the_fuller_node() -> None:
    plugin = NodeOrderPlugin(ONLY_MOST)
    pod = task("p", 1, "1Gi")
    busy = loaded("busy", 4, "16Gi", 2, "8Gi")
    empty = node("empty", 4, "16Gi")
    assert plugin.node_score(pod, busy) > plugin.node_score(pod, empty)


def test_most_allocated_caps_an_overflowing_resource_at_full() -> None:
    plugin = NodeOrderPlugin(ONLY_MOST)
    # cpu clamps to 100, memory 8 / 16 = 50
    assert plugin.node_score(task("p", 8, "8Gi"), node("n1", 4, "16Gi")) == 75


def test_most_allocated_is_off_by_default() -> None:
    plugin = NodeOrderPlugin(ONLY_LEAST)
    assert plugin.most_requested_weight == 0
    assert plugin.node_score(task("p", 4, "16Gi"), node("n1", 4, "16Gi")) == 0


# balanced allocation


def test_balanced_allocation_is_100_minus_the_deviation_of_the_fractions() -> None:
    plugin = NodeOrderPlugin(ONLY_BALANCED)
    # cpu 2 / 4 = 0.5, memory 4 / 16 = 0.25: deviation 0.125 -> 87.5
    assert plugin.node_score(task("p", 2, "4Gi"), node("n1", 4, "16Gi")) == 87.5


def test_balanced_allocation_prefers_the_node_the_pod_evens_out() -> None:
    plugin = NodeOrderPlugin(ONLY_BALANCED)
    pod = task("p", 1, "12Gi")
    cpu_heavy = loaded("cpu-heavy", 4, "16Gi", 3, "0")
    memory_heavy = loaded("memory-heavy", 4, "16Gi", 0, "4Gi")
    # cpu-heavy ends at 1.0 / 0.75, memory-heavy at 0.25 / 1.0
    assert plugin.node_score(pod, cpu_heavy) > plugin.node_score(pod, memory_heavy)


def test_balanced_allocation_uses_real_requests_not_scoring_defaults() -> None:
    plugin = NodeOrderPlugin(ONLY_BALANCED)
    assert plugin.node_score(task("p", 0), node("n1", 4, "16Gi")) == 100


# preferred node affinity


def test_preferred_affinity_scores_matching_weight_over_possible_weight() -> None:
    plugin = NodeOrderPlugin(ONLY_AFFINITY)
    pod = preferring((1, label_in("zone", "a")), (3, label_in("disk", "ssd")))
    assert plugin.node_score(pod, node("n1", labels={"disk": "ssd"})) == 75
    assert plugin.node_score(pod, node("n2", labels={"zone": "a"})) == 25
    assert plugin.node_score(pod, node("n3", labels={"zone": "a", "disk": "ssd"})) == 100
    assert plugin.node_score(pod, node("n4", labels={"zone": "b"})) == 0


def test_pod_without_preferences_gets_no_affinity_score() -> None:
    plugin = NodeOrderPlugin(ONLY_AFFINITY)
    assert plugin.node_score(task("p", 1, "1Gi"), node("n1", labels={"zone": "a"})) == 0


def test_preferred_empty_term_matches_no_node() -> None:
    plugin = NodeOrderPlugin(ONLY_AFFINITY)
    assert plugin.node_score(preferring((5, {})), node("n1", labels={"zone": "a"})) == 0


# weights and arguments


def test_default_weights_sum_least_allocated_balanced_affinity_and_taint_toleration() -> None:
    pod = preferring((1, label_in("zone", "a")))
    target = node("n1", 4, "16Gi", labels={"zone": "a"})
    # least: cpu 75, memory (16 - 1) / 16 = 93.75 -> 84.375; balanced: 0.25 vs 0.0625 -> 90.625;
    # an untainted node scores 100 for taint toleration, at Volcano's weight 3.
    expected = 84.375 + 90.625 + 100 + 3 * 100
    assert NodeOrderPlugin().node_score(pod, target) == pytest.approx(expected)


def test_weights_multiply_their_scorer() -> None:
    pod = task("p", 1, "8Gi")
    target = node("n1", 4, "16Gi")
    single = NodeOrderPlugin(ONLY_LEAST).node_score(pod, target)
    double = NodeOrderPlugin({**ONLY_LEAST, "leastrequested.weight": 2}).node_score(pod, target)
    assert double == 2 * single


def test_weights_given_as_strings_are_read_as_numbers() -> None:
    plugin = NodeOrderPlugin({"leastrequested.weight": "2", "mostrequested.weight": "0.5"})
    assert plugin.least_requested_weight == 2
    assert plugin.most_requested_weight == 0.5


def test_most_allocated_weight_turns_spreading_into_packing() -> None:
    plugin = NodeOrderPlugin({"leastrequested.weight": 0, "mostrequested.weight": 1})
    pod = task("p", 1, "4Gi")
    busy = loaded("busy", 4, "16Gi", 2, "8Gi")
    empty = node("empty", 4, "16Gi")
    assert plugin.node_score(pod, busy) > plugin.node_score(pod, empty)


@pytest.mark.parametrize("value", ["two", -1, "-1", True, None, [1], "nan", "inf"])
def test_bad_weight_is_a_config_error_naming_plugin_key_and_value(value: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        NodeOrderPlugin({"balancedresource.weight": value})
    message = str(raised.value)
    assert "nodeorder" in message
    assert "balancedresource.weight" in message
    assert repr(value) in message
