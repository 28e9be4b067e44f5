"""nodeorder's TaintToleration and ImageLocality scores, with kube-scheduler's verdicts.

The tables are kube-scheduler's own cases (pkg/scheduler/framework/plugins/tainttoleration
and imagelocality, their _test.go): the same pods and nodes, and the scores it gives.
muster keeps scores as floats where kube-scheduler truncates, so ImageLocality's verdicts
are compared after truncation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from scheduler.api import wire
from scheduler.api.errors import ConfigError
from scheduler.api.job import JobInfo
from scheduler.api.node import NodeInfo
from scheduler.api.placement import pod_images
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.build import core
from scheduler.engine import load_config, schedule
from scheduler.framework.cycle import open_cycle
from scheduler.plugins import PLUGINS, nodeorder
from scheduler.plugins.nodeorder import NodeOrderPlugin
from tests.unit.builders import gang, node, snapshot, task

MB = 1024 * 1024
OTHER_SCORERS_OFF = {
    "leastrequested.weight": 0,
    "balancedresource.weight": 0,
    "nodeaffinity.weight": 0,
    "podaffinity.weight": 0,
    "podtopologyspread.weight": 0,
}
ONLY_TAINTS = {**OTHER_SCORERS_OFF, "imagelocality.weight": 0, "tainttoleration.weight": 1}
ONLY_IMAGES = {**OTHER_SCORERS_OFF, "tainttoleration.weight": 0, "imagelocality.weight": 1}


def _arguments_yaml(arguments: dict[str, Any]) -> str:
    return "\n".join(f"      {key}: {value}" for key, value in arguments.items())


def opened(
    nodes: list[NodeInfo], arguments: dict[str, Any], jobs: Sequence[JobInfo] = ()
) -> NodeOrderPlugin:
    """A nodeorder plugin with the arguments, opened on a session over the nodes."""
    config = load_config(
        f"""
actions: "allocate"
tiers:
- plugins:
  - name: nodeorder
    arguments:
{_arguments_yaml(arguments)}
"""
    )
    plugin = open_cycle(snapshot(nodes, list(jobs)), config, PLUGINS).plugins[0]
    assert isinstance(plugin, NodeOrderPlugin)
    return plugin


def scores(plugin: NodeOrderPlugin, pod: TaskInfo, nodes: list[NodeInfo]) -> list[float]:
    return [plugin.node_score(pod, n) for n in nodes]


# TaintToleration ---------------------------------------------------------------

Taints = list[tuple[str, str, str]]


def tolerating(*tolerations: dict[str, str]) -> TaskInfo:
    return task("p", spec={"tolerations": list(tolerations)})


def toleration(key: str, value: str, effect: str, operator: str = "Equal") -> dict[str, str]:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


PNS = "PreferNoSchedule"
TAINT_CASES: list[tuple[str, TaskInfo, list[Taints], list[float]]] = [
    (
        "tolerated taint beats an untolerated one",
        tolerating(toleration("foo", "bar", PNS)),
        [[("foo", "bar", PNS)], [("foo", "blah", PNS)]],
        [100, 0],
    ),
    (
        "how many tolerated taints a node has does not matter",
        tolerating(toleration("cpu-type", "arm64", PNS), toleration("disk-type", "ssd", PNS)),
        [[], [("cpu-type", "arm64", PNS)], [("cpu-type", "arm64", PNS), ("disk-type", "ssd", PNS)]],
        [100, 100, 100],
    ),
    (
        "the more untolerated taints, the lower the score",
        tolerating(toleration("foo", "bar", PNS)),
        [[], [("cpu-type", "arm64", PNS)], [("cpu-type", "arm64", PNS), ("disk-type", "ssd", PNS)]],
        [100, 50, 0],
    ),
    (
        "only PreferNoSchedule taints and tolerations count",
        tolerating(
            toleration("cpu-type", "arm64", "NoSchedule"),
            toleration("disk-type", "ssd", "NoSchedule"),
        ),
        [
            [],
            [("cpu-type", "arm64", "NoSchedule")],
            [("cpu-type", "arm64", PNS), ("disk-type", "ssd", PNS)],
        ],
        [100, 100, 0],
    ),
    (
        "no tolerations: the untainted node",
        task("p"),
        [[], [("cpu-type", "arm64", PNS)]],
        [100, 0],
    ),
    # Beyond kube's table, the matching rules its Score uses (v1.Toleration.ToleratesTaint).
    (
        "a toleration without an effect tolerates PreferNoSchedule",
        tolerating(toleration("foo", "bar", "")),
        [[("foo", "bar", PNS)], [("foo", "blah", PNS)]],
        [100, 0],
    ),
    (
        "Exists ignores the value",
        tolerating(toleration("foo", "", PNS, operator="Exists")),
        [[("foo", "anything", PNS)], [("other", "x", PNS)]],
        [100, 0],
    ),
    (
        "Exists with no key tolerates every PreferNoSchedule taint",
        tolerating(toleration("", "", PNS, operator="Exists")),
        [[("a", "1", PNS), ("b", "2", PNS)], []],
        [100, 100],
    ),
    (
        "a NoExecute toleration does not count for the score",
        tolerating(toleration("foo", "bar", "NoExecute")),
        [[("foo", "bar", PNS)], []],
        [0, 100],
    ),
]


@pytest.mark.parametrize(
    ("pod", "taints", "expected"),
    [case[1:] for case in TAINT_CASES],
    ids=[case[0] for case in TAINT_CASES],
)
def test_taint_toleration_scores_as_kube_scheduler(
    pod: TaskInfo, taints: list[Taints], expected: list[float]
) -> None:
    nodes = [node(f"n{index}", taints=node_taints) for index, node_taints in enumerate(taints)]
    assert scores(opened(nodes, ONLY_TAINTS), pod, nodes) == expected


def test_taint_scores_divide_by_the_most_tainted_node_of_the_session_feasible_or_not() -> None:
    # kube-scheduler normalises over the pod's feasible nodes: were n2 infeasible it would
    # give n1 0; muster divides by the session's highest count (n2's 2), so n1 gets 50.
    # The order of the nodes is the same either way.
    nodes = [
        node("n0"),
        node("n1", taints=[("a", "1", PNS)]),
        node("n2", taints=[("a", "1", PNS), ("b", "2", PNS), ("c", "3", "NoSchedule")]),
    ]
    plugin = opened(nodes, ONLY_TAINTS)
    assert scores(plugin, task("p"), nodes[:2]) == [100, 50]


def test_each_set_of_tolerations_has_its_own_highest_count() -> None:
    nodes = [
        node("n0", taints=[("a", "1", PNS)]),
        node("n1", taints=[("a", "1", PNS), ("b", "2", PNS)]),
    ]
    plugin = opened(nodes, ONLY_TAINTS)
    # Tolerating a, only n1's b is left: the highest count is 1, so n1 scores 0 (not 50).
    assert scores(plugin, tolerating(toleration("a", "1", PNS)), nodes) == [100, 0]
    assert scores(plugin, task("p"), nodes) == [50, 0]


def test_taint_toleration_weight_multiplies_the_score() -> None:
    nodes = [node("n0"), node("n1", taints=[("a", "1", PNS)])]
    plugin = opened(nodes, {**ONLY_TAINTS, "tainttoleration.weight": 3})
    assert scores(plugin, task("p"), nodes) == [300, 0]


def test_taint_toleration_weight_zero_reads_no_taints(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> None:
        raise AssertionError("PreferNoSchedule taints indexed with tainttoleration.weight 0")

    monkeypatch.setattr(nodeorder, "PreferNoScheduleScores", refuse)
    nodes = [node("n0"), node("n1", taints=[("a", "1", PNS)])]
    plugin = opened(nodes, {**ONLY_TAINTS, "tainttoleration.weight": 0})
    assert scores(plugin, task("p"), nodes) == [0, 0]


# ImageLocality -----------------------------------------------------------------


def image_node(name: str, images: list[tuple[list[str], int]]) -> NodeInfo:
    """A node decoded from JSON whose status.images holds (names, size in MB) entries."""
    document = {
        "metadata": {"name": name},
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "images": [{"names": names, "sizeBytes": size * MB} for names, size in images],
        },
    }
    return NodeInfo.from_node(wire.from_dict(document, wire.Node))


def image_gang(
    *images: str, init: tuple[str, ...] = (), name: str = "g", size: int = 1, **resources: Any
) -> JobInfo:
    """A pending gang whose members run the images (and the init containers' images)."""
    spec = {
        "containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)],
        "initContainers": [{"name": f"i{i}", "image": image} for i, image in enumerate(init)],
    }
    job = gang(name, size, spec=spec, **resources)
    for member in job.tasks.values():
        member.images = pod_images(wire.from_dict(spec, wire.PodSpec))
    return job


def member(job: JobInfo) -> TaskInfo:
    return next(iter(job.tasks.values()))


# kube's test nodes, by the images they hold (MB).
STATUSES: dict[str, list[tuple[list[str], int]]] = {
    "40-300-2000": [
        (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
        (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
        (["gcr.io/2000:latest"], 2000),
    ],
    "250-10": [(["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10)],
    "600-40-900": [
        (["gcr.io/600:latest"], 600),
        (["gcr.io/40:latest"], 40),
        (["gcr.io/900:latest"], 900),
    ],
    "300-600-900": [
        (["gcr.io/300:latest"], 300),
        (["gcr.io/600:latest"], 600),
        (["gcr.io/900:latest"], 900),
    ],
    "4000-30": [(["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30)],
    "20-30-40": [
        (["gcr.io/20:latest"], 20),
        (["gcr.io/30:latest"], 30),
        (["gcr.io/40:latest"], 40),
    ],
    "none": [],
}
IMAGE_CASES: list[tuple[str, JobInfo, list[str], list[int]]] = [
    (
        "two images spread on two nodes, prefer the larger image one",
        image_gang("gcr.io/40", "gcr.io/250"),
        ["40-300-2000", "250-10"],
        [0, 5],
    ),
    (
        "two images on one node, prefer this node",
        image_gang("gcr.io/40", "gcr.io/300"),
        ["40-300-2000", "250-10"],
        [7, 0],
    ),
    (
        "if exceed limit, use limit",
        image_gang("gcr.io/10", "gcr.io/4000"),
        ["4000-30", "250-10"],
        [100, 0],
    ),
    (
        "if exceed limit, use limit (with node which has no images present)",
        image_gang("gcr.io/10", "gcr.io/4000"),
        ["4000-30", "250-10", "none"],
        [66, 0, 0],
    ),
    (
        "pod with multiple large images, node2 is preferred",
        image_gang("gcr.io/300", "gcr.io/600", "gcr.io/900"),
        ["600-40-900", "300-600-900", "none"],
        [32, 36, 0],
    ),
    (
        "pod with multiple small images",
        image_gang("gcr.io/30", "gcr.io/40"),
        ["20-30-40", "4000-30"],
        [1, 0],
    ),
    (
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        image_gang("gcr.io/30", init=("gcr.io/300",)),
        ["40-300-2000", "20-30-40"],
        [6, 0],
    ),
]


@pytest.mark.parametrize(
    ("job", "statuses", "expected"),
    [case[1:] for case in IMAGE_CASES],
    ids=[case[0] for case in IMAGE_CASES],
)
def test_image_locality_scores_as_kube_scheduler(
    job: JobInfo, statuses: list[str], expected: list[int]
) -> None:
    nodes = [image_node(f"node{i + 1}", STATUSES[status]) for i, status in enumerate(statuses)]
    plugin = opened(nodes, ONLY_IMAGES, [job])
    assert [math.trunc(score) for score in scores(plugin, member(job), nodes)] == expected


def test_image_locality_keeps_the_fraction_kube_scheduler_truncates() -> None:
    nodes = [image_node("node1", STATUSES["250-10"]), image_node("node2", STATUSES["none"])]
    job = image_gang("gcr.io/40", "gcr.io/250")
    plugin = opened(nodes, ONLY_IMAGES, [job])
    # 250 MB held by 1 of 2 nodes: 100 * (125 - 23) / (2000 - 23).
    assert plugin.node_score(member(job), nodes[0]) == pytest.approx(100 * 102 / 1977)


def test_an_untagged_image_matches_only_the_nodes_latest_tag() -> None:
    nodes = [
        image_node("latest", [(["example.com/app:latest"], 800)]),
        image_node("tagged", [(["example.com/app:v2"], 800)]),
    ]
    job = image_gang("example.com/app")
    latest, tagged = scores(opened(nodes, ONLY_IMAGES, [job]), member(job), nodes)
    assert latest > 0
    assert tagged == 0


def test_a_digest_reference_matches_the_nodes_digest_name() -> None:
    digest = "example.com/app@sha256:" + "ab" * 32
    nodes = [image_node("n1", [([digest, "example.com/app:v2"], 800)]), image_node("n2", [])]
    job = image_gang(digest)
    assert opened(nodes, ONLY_IMAGES, [job]).node_score(member(job), nodes[0]) > 0


def test_pods_whose_images_a_node_holds_get_a_placement_naming_them_shared_by_the_gang() -> None:
    nodes = [image_node("n1", [(["a:latest"], 500)]), image_node("n2", [])]
    job = image_gang("a", size=3)
    before = member(job).placement
    opened(nodes, ONLY_IMAGES, [job])
    placements = {id(task.placement) for task in job.tasks.values()}
    assert len(placements) == 1
    assert member(job).placement == replace(before, images=("a:latest",))


def test_pods_whose_images_no_node_holds_keep_their_shared_placement() -> None:
    nodes = [image_node("n1", [(["a:latest"], 500)]), image_node("n2", [])]
    job = image_gang("elsewhere")
    before = member(job).placement
    plugin = opened(nodes, ONLY_IMAGES, [job])
    assert member(job).placement is before
    assert scores(plugin, member(job), nodes) == [0, 0]


def test_an_image_every_node_holds_is_left_out_as_it_changes_no_nodes_order() -> None:
    everywhere = [(["base:v1"], 900)]
    nodes = [image_node("n1", everywhere), image_node("n2", everywhere)]
    job = image_gang("base:v1")
    before = member(job).placement
    plugin = opened(nodes, ONLY_IMAGES, [job])
    # kube-scheduler gives both nodes 100 * (900 - 23) / (1000 - 23); the order is the same.
    assert scores(plugin, member(job), nodes) == [0, 0]
    assert member(job).placement is before


def test_an_image_on_every_node_still_counts_beside_one_that_tells_nodes_apart() -> None:
    nodes = [
        image_node("n1", [(["base:v1"], 400), (["app:v1"], 400)]),
        image_node("n2", [(["base:v1"], 400)]),
    ]
    job = image_gang("base:v1", "app:v1")
    one, two = scores(opened(nodes, ONLY_IMAGES, [job]), member(job), nodes)
    # n1: 400 + 400 / 2 = 600 MB, n2: 400 MB, over 23..2000 MB.
    assert one == pytest.approx(100 * (600 - 23) / 1977)
    assert two == pytest.approx(100 * (400 - 23) / 1977)


@pytest.mark.skipif(
    core() == "compiled",
    reason="counts by replacing the class in its module, which compiled code never looks up",
)
def test_pod_images_are_indexed_once_per_session(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[nodeorder.ImageSpread] = []
    real = nodeorder.ImageSpread

    def counting(*args: Any) -> nodeorder.ImageSpread:
        spread = real(*args)
        built.append(spread)
        return spread

    monkeypatch.setattr(nodeorder, "ImageSpread", counting)
    nodes = [image_node("n1", [(["a:latest"], 500)]), image_node("n2", [(["b:latest"], 900)])]
    first, second = image_gang("a", name="first", size=2), image_gang("b", name="second")
    plugin = opened(nodes, ONLY_IMAGES, [first, second])
    a_scores = [scores(plugin, task, nodes) for task in first.tasks.values()]
    b_scores = scores(plugin, member(second), nodes)
    assert len(built) == 1
    assert all(score[0] > 0 and score[1] == 0 for score in a_scores)
    assert b_scores[0] == 0 < b_scores[1]


@pytest.mark.parametrize(
    ("weight", "job"),
    [(0, image_gang("a")), (1, gang("no-images", 1))],
    ids=["weight 0", "pods without images"],
)
def test_image_locality_builds_no_index_when_nothing_is_scored(
    monkeypatch: pytest.MonkeyPatch, weight: int, job: JobInfo
) -> None:
    def refuse(*_: object) -> None:
        raise AssertionError("image index built with nothing to score")

    monkeypatch.setattr(nodeorder, "ImageSpread", refuse)
    nodes = [image_node("n1", [(["a:latest"], 500)]), image_node("n2", [])]
    plugin = opened(nodes, {**ONLY_IMAGES, "imagelocality.weight": weight}, [job])
    assert scores(plugin, member(job), nodes) == [0, 0]
    assert member(job).placement.images == ()


# Arguments ---------------------------------------------------------------------


def test_volcanos_default_weights_are_3_for_taints_and_1_for_images() -> None:
    plugin = NodeOrderPlugin()
    assert plugin.taint_toleration_weight == 3
    assert plugin.image_locality_weight == 1


def test_taint_and_image_weights_parse_from_the_config() -> None:
    plugin = opened([node("n1")], {"tainttoleration.weight": 2, "imagelocality.weight": '"0.5"'})
    assert plugin.taint_toleration_weight == 2
    assert plugin.image_locality_weight == 0.5


@pytest.mark.parametrize("key", ["tainttoleration.weight", "imagelocality.weight"])
def test_a_non_numeric_weight_is_refused_when_the_config_loads(key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(
            f'actions: "allocate"\ntiers:\n- plugins:\n  - name: nodeorder\n'
            f"    arguments:\n      {key}: heavy\n"
        )
    assert f"plugin nodeorder: argument {key}='heavy' is not a number" in str(raised.value)


# Whole sessions ----------------------------------------------------------------

BIG_IMAGE = [(["example.com/trainer:v1"], 600)]


def _busy(target: NodeInfo) -> NodeInfo:
    # Half a core in use: least-allocated and balanced allocation prefer the other node.
    target.add_task(task("busy", 0.5, status=TaskStatus.RUNNING, node_name=target.name))
    return target


def _hosts(nodes: list[NodeInfo], job: JobInfo) -> list[str]:
    return [bind.node for bind in schedule(snapshot(nodes, [job])).binds]


def test_session_prefers_the_node_holding_the_pods_image_over_an_emptier_one() -> None:
    nodes = [image_node("a-empty", []), _busy(image_node("b-holds-image", BIG_IMAGE))]
    job = image_gang("example.com/trainer:v1", cpu=1, memory="1Gi")
    assert _hosts(nodes, job) == ["b-holds-image"]


def test_session_without_the_image_anywhere_takes_the_emptier_node() -> None:
    nodes = [image_node("a-empty", []), _busy(image_node("b-other-image", BIG_IMAGE))]
    job = image_gang("example.com/other", cpu=1, memory="1Gi")
    assert _hosts(nodes, job) == ["a-empty"]


def test_gangs_of_different_images_each_go_to_their_images_node() -> None:
    nodes = [
        _busy(image_node("holds-a", [(["a:v1"], 600)])),
        _busy(image_node("holds-b", [(["b:v1"], 600)])),
        image_node("empty", []),
    ]
    # Equal requests: without images in their placements both gangs would share one
    # node picker shape, and the second would follow the first's scores.
    jobs = [image_gang("a:v1", name="ga", cpu=1), image_gang("b:v1", name="gb", cpu=1)]
    result = schedule(snapshot(nodes, jobs))
    assert {bind.name: bind.node for bind in result.binds} == {
        "ga-0": "holds-a",
        "gb-0": "holds-b",
    }


def test_session_prefers_a_busier_node_over_an_emptier_one_with_prefer_no_schedule() -> None:
    nodes = [_busy(node("a-busy")), node("b-tainted", taints=[("spot", "true", PNS)])]
    assert _hosts(nodes, gang("g", 1, cpu=1, memory="1Gi")) == ["a-busy"]


def test_session_puts_a_pod_tolerating_the_taint_on_the_emptier_tainted_node() -> None:
    nodes = [_busy(node("a-busy")), node("b-tainted", taints=[("spot", "true", PNS)])]
    spec = {"tolerations": [toleration("spot", "true", PNS)]}
    assert _hosts(nodes, gang("g", 1, cpu=1, memory="1Gi", spec=spec)) == ["b-tainted"]


def test_the_node_holding_a_gangs_image_is_found_beyond_the_sampled_window() -> None:
    # 400 empty nodes and one, last by name, holding the image: a shape with images scores
    # kube-scheduler's minimum sample (100 nodes) plus the holders, so the holder is scored
    # wherever the sample starts.
    nodes = [image_node(f"n{index:03d}", []) for index in range(400)]
    nodes.append(image_node("zz-holds-a", [(["a:v1"], 900)]))
    job = image_gang("a:v1", name="ga", cpu=1)
    assert _hosts(nodes, job) == ["zz-holds-a"]
