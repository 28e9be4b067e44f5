"""predicates' arguments: each filter's switch turns that filter off, CacheEnable is said
to change nothing, the volume binding's timeout, weight and shape are honoured, and the
arguments Volcano removed are refused naming what replaced them."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from scheduler.api import wire
from scheduler.api.errors import ConfigError
from scheduler.api.names import GROUP_NAME_ANNOTATION
from scheduler.api.snapshot import build_snapshot
from scheduler.engine import load_config, schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.decisions import SessionResult
from scheduler.nodefit.storagefilters import shape_score
from tests.unit.builders import gang, node, snapshot
from tests.unit.nodefit.test_volumebinding import STATIC, claim, volume

NS = "ns"


def config(arguments: str) -> SchedulerConfig:
    return load_config(
        'actions: "enqueue, allocate"\n'
        "tiers:\n- plugins:\n  - name: gang\n  - name: predicates\n"
        f"    arguments: {arguments}\n  - name: nodeorder\n"
    )


def placed(result: SessionResult) -> list[str]:
    return sorted(b.node for b in result.binds)


@pytest.mark.parametrize(
    ("switch", "spec", "taints"),
    [
        pytest.param(
            "predicate.NodeAffinityEnable", {"nodeSelector": {"disk": "ssd"}}, None, id="affinity"
        ),
        pytest.param(
            "predicate.TaintTolerationEnable", {}, [("dedicated", "gpu", "NoSchedule")], id="taint"
        ),
    ],
)
def test_turning_a_static_filter_off_turns_it_off(
    switch: str, spec: dict[str, Any], taints: list[tuple[str, str, str]] | None
) -> None:
    def result(enabled: bool) -> SessionResult:
        job = gang("g", 1, spec={"containers": [{"name": "c"}], **spec})
        lone = node("n1", taints=taints)
        return schedule(snapshot([lone], [job]), config(f"{{{switch}: {str(enabled).lower()}}}"))

    assert placed(result(True)) == []
    assert placed(result(False)) == ["n1"]


def test_turning_node_ports_off_lets_two_pods_share_a_host_port() -> None:
    port = {"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}

    def result(enabled: bool) -> SessionResult:
        job = gang("g", 2, spec=port)
        return schedule(
            snapshot([node("n1")], [job]),
            config(f"{{predicate.NodePortsEnable: {str(enabled).lower()}}}"),
        )

    assert placed(result(True)) == []
    assert placed(result(False)) == ["n1", "n1"]


def test_a_node_that_is_not_ready_stays_out_whatever_the_taint_switch() -> None:
    job = gang("g", 1)
    result = schedule(
        snapshot([node("n1", ready=False)], [job]),
        config("{predicate.TaintTolerationEnable: false}"),
    )
    assert result.binds == []


@pytest.mark.parametrize("value", ["true", "false"])
def test_cache_enable_loads_and_says_it_changes_nothing(value: str) -> None:
    loaded = config(f"{{predicate.CacheEnable: {value}}}")
    (note,) = loaded.notes
    assert note.startswith(f"plugin predicates: predicate.CacheEnable: {value} changes nothing")


@pytest.mark.parametrize("value", ["true", "false"])
def test_the_dra_switch_volcano_no_longer_reads_loads_and_says_dra_stays_on(value: str) -> None:
    loaded = config(f"{{predicate.DynamicResourceAllocationEnable: {value}}}")
    (note,) = loaded.notes
    assert "predicate.DynamicResourceAllocationEnable changes nothing" in note
    assert "always allocated" in note


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        pytest.param("{predicate.ProportionalEnable: true}", "resource-strategy-fit", id="prop"),
        pytest.param("{predicate.resources: nvidia.com/gpu}", "resource-strategy-fit", id="res"),
        pytest.param(
            "{predicate.resources.nvidia.com/gpu.cpu: 4}", "resource-strategy-fit", id="weights"
        ),
        pytest.param("{predicate.GPUSharingEnable: true}", "deviceshare", id="gpu-sharing"),
    ],
)
def test_arguments_muster_cannot_honour_are_refused_naming_the_key_and_the_way(
    arguments: str, said: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        config(arguments)
    key = arguments.strip("{}").split(":")[0]
    assert key in str(caught.value) and said in str(caught.value)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ("{volumebinding.bindTimeoutSeconds: -1}", "volumebinding.bindTimeoutSeconds=-1"),
        ("{volumebinding.weight: x}", "volumebinding.weight='x' is not a number"),
        (
            "{volumebinding.shape: [{utilization: 50, score: 5}, {utilization: 10, score: 1}]}",
            "must increase",
        ),
        ("{volumebinding.shape: [{utilization: 10, score: 11}]}", "volumebinding.shape"),
    ],
)
def test_malformed_volume_binding_arguments_are_refused(arguments: str, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config(arguments)
    assert said in str(caught.value)


def test_the_shape_maps_utilization_linearly_between_its_points() -> None:
    shape = ((0, 0), (50, 10), (100, 4))
    assert [shape_score(shape, u) for u in (0, 25, 50, 75, 100)] == [0.0, 50.0, 100.0, 70.0, 40.0]


def _wire_node(name: str) -> wire.Node:
    return wire.from_dict(
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {
                "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        wire.Node,
    )


def _session(arguments: str) -> SessionResult:
    # One pod with a 4Gi claim; n-big offers a local volume of 40Gi, n-tight one of 5Gi.
    pod = {
        "metadata": {
            "name": "w",
            "namespace": NS,
            "uid": "uid-w",
            "annotations": {GROUP_NAME_ANNOTATION: "g"},
        },
        "spec": {
            "schedulerName": "muster",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
        },
    }
    group = wire.from_dict(
        {
            "metadata": {"name": "g", "namespace": NS, "uid": "g1"},
            "spec": {"minMember": 1, "queue": "default"},
            "status": {"phase": "Inqueue"},
        },
        wire.PodGroup,
    )
    snap = build_snapshot(
        pods=[wire.decode_pod(msgspec.json.encode(pod))],
        nodes=[_wire_node("n-big"), _wire_node("n-tight")],
        podgroups=[group],
        queues=[wire.from_dict({"metadata": {"name": "default", "uid": "q"}}, wire.Queue)],
        claims=[claim("data", request="4Gi")],
        volumes=[
            volume("pv-big", size="40Gi", host="n-big"),
            volume("pv-tight", size="5Gi", host="n-tight"),
        ],
        storage_classes=[STATIC],
    )
    return schedule(snap, config(arguments))


FULL_IS_BEST = "volumebinding.shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]"


def test_volume_binding_shape_and_weight_prefer_the_tightest_volume() -> None:
    (bind,) = _session(f"{{volumebinding.weight: 10, {FULL_IS_BEST}}}").binds
    assert bind.node == "n-tight"
    # Weight 0: no VolumeBinding score; least-allocated alone ties, and name order wins.
    (bind,) = _session(f"{{volumebinding.weight: 0, {FULL_IS_BEST}}}").binds
    assert bind.node == "n-big"


def test_binds_carry_the_configured_volume_bind_timeout() -> None:
    (bind,) = _session("{volumebinding.bindTimeoutSeconds: 30}").binds
    assert bind.claims and bind.claims_timeout == 30.0
    (bind,) = _session("{}").binds
    assert bind.claims_timeout == 600.0
