"""Simulated nodes and kubelet: node shapes and pools, Running, completion, restarts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client

from muster_sim.server import SimServer
from tests.sim.conftest import bind, pod_body, sim_config, unique, wait_for


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimServer]:
    pools = tmp_path_factory.mktemp("pools") / "pools.yaml"
    pools.write_text(
        yaml.safe_dump(
            {
                "pools": [
                    {
                        "name": "gpu",
                        "count": 2,
                        "cpu": "64",
                        "memory": "512Gi",
                        "gpus": 8,
                        "labels": {"accelerator": "a100"},
                        "taints": [
                            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
                        ],
                    }
                ]
            }
        )
    )
    from muster_sim.cluster.nodes import load_pools

    config = sim_config(nodes=2, node_cpu="32", node_memory="128Gi", node_pools=load_pools(pools))
    with SimServer(config).running() as server:
        yield server


def test_nodes_from_flags_are_ready_with_capacity(core: client.CoreV1Api) -> None:
    node = core.read_node("sim-node-0000")
    assert node.status.capacity == {
        "cpu": "32",
        "memory": "128Gi",
        "pods": "110",
        "ephemeral-storage": "100Gi",
    }
    assert node.status.allocatable == node.status.capacity
    conditions = {c.type: c.status for c in node.status.conditions}
    assert conditions["Ready"] == "True"
    assert conditions["MemoryPressure"] == "False"
    assert node.metadata.labels["kubernetes.io/hostname"] == "sim-node-0000"
    assert not node.spec.taints


def test_node_pools_give_labels_taints_and_gpus(core: client.CoreV1Api) -> None:
    gpu_nodes = core.list_node(label_selector="accelerator=a100").items
    assert [n.metadata.name for n in gpu_nodes] == ["gpu-0000", "gpu-0001"]
    node = gpu_nodes[0]
    assert node.status.allocatable["nvidia.com/gpu"] == "8"
    assert node.status.allocatable["cpu"] == "64"
    assert node.spec.taints[0].key == "nvidia.com/gpu"
    assert node.spec.taints[0].effect == "NoSchedule"
    assert len(core.list_node().items) == 4


def _pod(core: client.CoreV1Api, name: str) -> Any:
    return core.read_namespaced_pod(name, "default")


def test_bound_pod_becomes_running_with_kubelet_status(core: client.CoreV1Api) -> None:
    name = unique("run")
    core.create_namespaced_pod("default", pod_body(name))
    assert _pod(core, name).status.phase == "Pending"
    bind(core, "default", name, "gpu-0001")
    pod = wait_for(lambda: (p := _pod(core, name)).status.phase == "Running" and p)
    conditions = {c.type: c.status for c in pod.status.conditions}
    assert conditions == {
        "PodScheduled": "True",
        "Initialized": "True",
        "Ready": "True",
        "ContainersReady": "True",
    }
    assert pod.status.pod_ip and pod.status.host_ip and pod.status.start_time
    assert pod.status.container_statuses[0].ready is True
    assert pod.status.container_statuses[0].state.running is not None


def test_unbound_pod_stays_pending(core: client.CoreV1Api) -> None:
    name = unique("idle")
    core.create_namespaced_pod("default", pod_body(name))
    other = unique("probe")
    core.create_namespaced_pod("default", pod_body(other))
    bind(core, "default", other, "sim-node-0000")
    wait_for(lambda: _pod(core, other).status.phase == "Running")
    assert _pod(core, name).status.phase == "Pending"


@pytest.mark.parametrize(
    ("exit_code", "policy", "phase"),
    [("0", "Never", "Succeeded"), ("3", "Never", "Failed"), ("0", "OnFailure", "Succeeded")],
)
def test_duration_annotation_completes_the_pod(
    core: client.CoreV1Api, exit_code: str, policy: str, phase: str
) -> None:
    name = unique("job")
    core.create_namespaced_pod(
        "default",
        pod_body(
            name,
            restartPolicy=policy,
            annotations={"sim.muster.dev/duration": "100ms", "sim.muster.dev/exit-code": exit_code},
        ),
    )
    bind(core, "default", name, "sim-node-0001")
    pod = wait_for(lambda: (p := _pod(core, name)).status.phase == phase and p)
    terminated = pod.status.container_statuses[0].state.terminated
    assert terminated.exit_code == int(exit_code)
    assert {c.type: c.status for c in pod.status.conditions}["Ready"] == "False"


def test_restart_policy_always_restarts_in_place(core: client.CoreV1Api) -> None:
    name = unique("loop")
    core.create_namespaced_pod(
        "default", pod_body(name, annotations={"sim.muster.dev/duration": "50ms"})
    )
    bind(core, "default", name, "sim-node-0001")
    pod = wait_for(
        lambda: (
            (p := _pod(core, name)).status.container_statuses
            and p.status.container_statuses[0].restart_count >= 2
            and p
        )
    )
    assert pod.status.phase == "Running"


def test_on_failure_restarts_a_failing_container(core: client.CoreV1Api) -> None:
    name = unique("retry")
    core.create_namespaced_pod(
        "default",
        pod_body(
            name,
            restartPolicy="OnFailure",
            annotations={"sim.muster.dev/duration": "50ms", "sim.muster.dev/exit-code": "1"},
        ),
    )
    bind(core, "default", name, "sim-node-0001")
    pod = wait_for(
        lambda: (
            (p := _pod(core, name)).status.container_statuses
            and p.status.container_statuses[0].restart_count >= 1
            and p
        )
    )
    assert pod.status.phase == "Running"


def test_go_durations_parse() -> None:
    from muster_sim.cluster.kubelet import parse_duration

    assert parse_duration("30s") == 30
    assert parse_duration("1m30s") == 90
    assert parse_duration("250ms") == 0.25
    assert parse_duration("2") == 2
    assert parse_duration("soon") is None
