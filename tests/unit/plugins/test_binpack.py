"""The binpack plugin scores nodes by how full the pod would leave them, as Volcano does."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.errors import ConfigError
from scheduler.api.node import NodeInfo
from scheduler.api.task import TaskStatus
from scheduler.plugins.binpack import BinpackPlugin
from tests.unit.builders import node, task

GPU = "nvidia.com/gpu"


def loaded(
    name: str, cpu: float, memory: str, used_cpu: float, used_memory: str, **extra: Any
) -> NodeInfo:
    target = node(name, cpu=cpu, memory=memory, gpu=extra.get("gpu", 0))
    used = task(
        f"{name}-used",
        used_cpu,
        used_memory,
        gpu=extra.get("used_gpu", 0),
        status=TaskStatus.RUNNING,
        node_name=name,
    )
    target.add_task(used)
    return target


def test_score_is_the_weighted_fill_after_placement() -> None:
    # cpu (2 + 1) / 4 = 0.75, memory (8 + 4) / 16 = 0.75 -> 75
    target = loaded("n1", 4, "16Gi", 2, "8Gi")
    assert BinpackPlugin().node_score(task("p", 1, "4Gi"), target) == 75


def test_fuller_node_wins() -> None:
    plugin = BinpackPlugin()
    pod = task("p", 1, "1Gi")
    busy = loaded("busy", 4, "16Gi", 2, "8Gi")
    empty = node("empty", 4, "16Gi")
    assert plugin.node_score(pod, busy) > plugin.node_score(pod, empty)


def test_resource_weights_tilt_the_mean() -> None:
    # cpu 3/4 weighted 3, memory 4/16 weighted 1: (2.25 + 0.25) / 4 = 0.625
    plugin = BinpackPlugin({"binpack.cpu": 3, "binpack.memory": "1"})
    assert plugin.node_score(task("p", 3, "4Gi"), node("n1", 4, "16Gi")) == 62.5


def test_binpack_weight_multiplies_the_score() -> None:
    plugin = BinpackPlugin({"binpack.weight": "10"})
    assert plugin.node_score(task("p", 2, "8Gi"), node("n1", 4, "16Gi")) == 500


def test_zero_binpack_weight_scores_nothing() -> None:
    plugin = BinpackPlugin({"binpack.weight": 0})
    assert plugin.node_score(task("p", 2, "8Gi"), node("n1", 4, "16Gi")) == 0


def test_only_resources_the_pod_requests_count() -> None:
    # A cpu-only pod: memory is left out of both the sum and the weights.
    assert BinpackPlugin().node_score(task("p", 1), node("n1", 4, "16Gi")) == 25


def test_listed_extended_resource_counts_with_its_weight() -> None:
    plugin = BinpackPlugin(
        {"binpack.resources": f"{GPU}, example.com/foo", f"binpack.resources.{GPU}": 2}
    )
    target = loaded("n1", 4, "16Gi", 0, "0", gpu=4, used_gpu=1)
    # cpu 1/4 weight 1, memory 4/16 weight 1, gpu 3/4 weight 2: (0.25 + 0.25 + 1.5) / 4 = 0.5
    assert plugin.node_score(task("p", 1, "4Gi", gpu=2), target) == 50


def test_unlisted_extended_resource_is_ignored() -> None:
    target = node("n1", 4, "16Gi", gpu=4)
    # Only cpu (1/4) and memory (4/16) count.
    assert BinpackPlugin().node_score(task("p", 1, "4Gi", gpu=4), target) == 25


def test_gpu_packing_prefers_the_node_with_gpus_in_use() -> None:
    plugin = BinpackPlugin({"binpack.resources": GPU, f"binpack.resources.{GPU}": 10})
    pod = task("p", 1, "1Gi", gpu=1)
    partly_used = loaded("used", 8, "32Gi", 0, "0", gpu=8, used_gpu=4)
    untouched = node("fresh", 8, "32Gi", gpu=8)
    assert plugin.node_score(pod, partly_used) > plugin.node_score(pod, untouched)


def test_pod_that_does_not_fit_scores_zero() -> None:
    target = loaded("n1", 4, "16Gi", 3, "0")
    assert BinpackPlugin().node_score(task("p", 2, "1Gi"), target) == 0


def test_pod_needing_a_listed_resource_the_node_lacks_scores_zero() -> None:
    plugin = BinpackPlugin({"binpack.resources": GPU})
    assert plugin.node_score(task("p", 1, "1Gi", gpu=1), node("n1", 4, "16Gi")) == 0


def test_best_effort_pod_scores_zero() -> None:
    assert BinpackPlugin().node_score(task("p", 0), loaded("n1", 4, "16Gi", 2, "8Gi")) == 0


def test_resources_accept_a_yaml_list() -> None:
    plugin = BinpackPlugin({"binpack.resources": [GPU]})
    assert plugin.scalar_weights == {GPU: 1}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("binpack.weight", "heavy"),
        ("binpack.cpu", -2),
        ("binpack.memory", False),
        ("binpack.resources", 5),
        (f"binpack.resources.{GPU}", "x"),
    ],
)
def test_bad_argument_is_a_config_error_naming_plugin_key_and_value(key: str, value: Any) -> None:
    arguments: dict[str, Any] = {"binpack.resources": GPU, key: value}
    with pytest.raises(ConfigError) as raised:
        BinpackPlugin(arguments)
    message = str(raised.value)
    assert "binpack" in message
    assert key in message
    assert repr(value) in message
