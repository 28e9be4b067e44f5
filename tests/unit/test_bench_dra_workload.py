"""bench/cluster_bench.py --dra-gpus: which runs it refuses, the GPUs sim is asked to publish,
the claim every pod carries, and the check that every bound pod holds a GPU of its node."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from cluster_bench import options_of, parse_args, runners_of, workload_of
from harness.claims import await_claims_made, unallocated_claims
from harness.workload import (
    Workload,
    claim_template_manifest,
    node_pools_yaml,
    pod_manifest,
    running_pod_manifest,
)

from muster_sim.cluster.devices import DRIVER, resource_slice
from muster_sim.cluster.nodes import load_pools, node_objects

Obj = dict[str, Any]


def refusal(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """What the command line's parser says as it refuses argv."""
    with pytest.raises(SystemExit) as stopped:
        parse_args(argv)
    assert stopped.value.code == 2
    return capsys.readouterr().err


def test_too_few_gpus_for_the_pods_are_refused_naming_the_flag_and_the_count_that_would_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    said = refusal(["--nodes", "10", "--pods", "50", "--dra-gpus", "4"], capsys)
    assert "--dra-gpus 4: 10 nodes x 4 GPUs = 40 GPUs, fewer than the 50 pods" in said
    assert "give --dra-gpus 5 or more" in said


def test_exactly_one_gpu_per_pod_is_enough() -> None:
    args = parse_args(["--nodes", "10", "--pods", "40", "--dra-gpus", "4"])
    assert workload_of(args, args.nodes, args.pods, 0.0).dra_gpus == 4


@pytest.mark.parametrize("runner", ["ceiling", "naive"])
def test_a_baseline_that_binds_without_devices_is_refused_naming_it_and_the_flag(
    runner: str, capsys: pytest.CaptureFixture[str]
) -> None:
    said = refusal(["--runners", f"muster,{runner}", "--dra-gpus", "8"], capsys)
    assert f"--dra-gpus 8 with --runners {runner}: the {runner} runner binds pods" in said


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--kubeconfig", "k.conf"], "--dra-gpus with --kubeconfig needs --create-nodes"),
        (["--scale"], "--dra-gpus: the scale curve (--scale)"),
    ],
    ids=["kubeconfig-without-create-nodes", "scale"],
)
def test_runs_it_cannot_make_are_refused(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert words in refusal([*argv, "--dra-gpus", "8"], capsys)


def test_a_negative_count_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--dra-gpus -1: give the GPUs per node" in refusal(["--dra-gpus", "-1"], capsys)


def test_by_default_only_the_runners_that_allocate_devices_run() -> None:
    args = parse_args(["--dra-gpus", "10", "--scheduler-cmd", "kube=kube-scheduler"])
    assert runners_of(args, options_of(args, "")) == ["muster", "kube"]
    plain = parse_args([])
    assert runners_of(plain, options_of(plain, "")) == ["ceiling", "naive", "muster"]


@pytest.mark.parametrize("mixed", [0.0, 0.5], ids=["one-pool", "a-pool-per-zone"])
def test_every_node_sim_makes_publishes_the_gpus(mixed: float, tmp_path: Path) -> None:
    workload = Workload(nodes=30, pods=100, mixed=mixed, dra_gpus=4)
    pools = tmp_path / "pools.yaml"
    pools.write_text(node_pools_yaml(workload))
    nodes = node_objects(load_pools(pools))
    assert len(nodes) == 30
    for node in nodes:
        node["metadata"]["uid"] = "u"
        devices = resource_slice(node)["spec"]["devices"]
        assert [d["name"] for d in devices] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]


def test_without_the_flag_nodes_publish_no_gpus_and_pods_claim_none() -> None:
    workload = Workload(nodes=3, pods=24, gang="8")
    assert "draGpus" not in node_pools_yaml(workload)
    pod = pod_manifest(workload, "ns", "g00000", 0)
    assert "resourceClaims" not in pod["spec"]
    assert "claims" not in pod["spec"]["containers"][0]["resources"]
    assert "GPU" not in workload.label()


def test_every_pod_claims_one_gpu_from_the_template_for_its_container() -> None:
    workload = Workload(nodes=3, pods=24, gang="8", dra_gpus=8)
    pod = pod_manifest(workload, "ns", "g00002", 5)
    assert pod["spec"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
    ]
    container = pod["spec"]["containers"][0]
    assert container["resources"]["claims"] == [{"name": "gpu"}]
    assert container["resources"]["requests"] == {"cpu": "250m", "memory": "512Mi"}
    # the pods another scheduler runs (--running) were placed with no device
    assert "resourceClaims" not in running_pod_manifest(workload, "ns-running", 0)["spec"]


def test_the_template_asks_one_device_of_sims_gpu_class() -> None:
    assert claim_template_manifest("bench-ns") == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": "bench-ns"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {"deviceClassName": "gpu.sim.muster.dev", "count": 1},
                        }
                    ]
                }
            }
        },
    }


def test_the_label_says_what_ran() -> None:
    workload = Workload(nodes=100, pods=400, gang="8", dra_gpus=8)
    assert workload.label() == (
        "100 nodes x 400 pods, gangs 8, 8 GPUs per node, one claimed per pod, backlog"
    )


def bound_pod(name: str, node: str, claim: str = "") -> Obj:
    status = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": claim}]}
    return {
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {"nodeName": node},
        "status": status if claim else {},
    }


def claim(name: str, pod: str = "", pool: str = "", device: str = "gpu-0") -> Obj:
    """A claim, allocated `device` of `pool` when a pool is given, reserved for `pod` when
    one is given."""
    status: Obj = {}
    if pool:
        result = {"request": "gpu", "driver": DRIVER, "pool": pool, "device": device}
        status["allocation"] = {"devices": {"results": [result]}}
    if pod:
        status["reservedFor"] = [{"resource": "pods", "name": pod, "uid": f"uid-{pod}"}]
    return {"metadata": {"name": name}, "status": status}


def test_bound_pods_each_holding_a_gpu_of_their_node_pass() -> None:
    pods = [bound_pod("a", "n1", "a-gpu"), bound_pod("b", "n1", "b-gpu")]
    pods.append({"metadata": {"name": "waiting"}, "spec": {}})
    claims = [claim("a-gpu", "a", "n1", "gpu-0"), claim("b-gpu", "b", "n1", "gpu-1")]
    assert unallocated_claims(pods, claims) == []


@pytest.mark.parametrize(
    ("claims", "said"),
    [
        ([], "a: bound to n1 with no ResourceClaim made for it"),
        ([claim("a-gpu", "a")], "a: bound to n1, its claim a-gpu is not allocated"),
        (
            [claim("a-gpu", "", "n1")],
            "a: bound to n1, its claim a-gpu is allocated but not reserved for it",
        ),
        (
            [claim("a-gpu", "a", "n2")],
            f"a: bound to n1, its claim a-gpu holds {DRIVER}/n2/gpu-0, not a device of its node",
        ),
    ],
    ids=["no-claim", "not-allocated", "not-reserved", "off-its-node"],
)
def test_a_bound_pod_without_a_gpu_of_its_node_is_caught(claims: list[Obj], said: str) -> None:
    assert unallocated_claims([bound_pod("a", "n1", "a-gpu")], claims) == [said]


def test_a_gpu_given_to_two_pods_is_caught() -> None:
    pods = [bound_pod("a", "n1", "a-gpu"), bound_pod("b", "n1", "b-gpu")]
    claims = [claim("a-gpu", "a", "n1"), claim("b-gpu", "b", "n1")]
    assert unallocated_claims(pods, claims) == [
        f"b: bound to n1, its claim b-gpu holds {DRIVER}/n1/gpu-0, given to a too"
    ]


class NoClaimController:
    """A server whose pods never get their claims: no resourceclaim controller runs."""

    async def request(self, method: str, path: str, **_: Any) -> bytes:
        return msgspec.json.encode({"items": [bound_pod("a", "")]})


def test_a_backlog_whose_claims_are_never_made_stops_the_run_naming_the_controller() -> None:
    with pytest.raises(RuntimeError, match=r"only 0 of 1 pods .* no resourceclaim controller"):
        asyncio.run(await_claims_made(NoClaimController(), "ns", 1, timeout=0.01))  # type: ignore[arg-type]
