"""bench/cluster_bench.py flags: external schedulers as runners, whose ceiling, the scale grid."""

from __future__ import annotations

import asyncio
import gc
import importlib.machinery
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import harness.core
import harness.runners
import session_bench
from cluster_bench import options_of, parse_args, runners_of, workload_of
from harness.cluster import NOT_READY, REPO, ensure_nodes, env_with_bench_path
from harness.core import stale_in
from harness.observe import Sample, parse_metrics
from harness.report import SHARED_MACHINE_NOTE, ceiling_note, side_by_side, targets
from harness.runners import ExternalScheduler, Options, RunResult, _start
from harness.workload import Workload
from prometheus_client import generate_latest

from scheduler.build import COMPILED_MODULES, core
from scheduler.metrics import Metrics


def result(runner: str, pods_per_s: float) -> RunResult:
    return RunResult(
        runner=runner,
        workload="w",
        pods=100,
        bound=100,
        first_bind_s=1.0,
        last_bind_s=2.0,
        pods_per_s=pods_per_s,
        pods_per_s_from_start=pods_per_s / 2,
        pod_latency_p50_s=0.5,
        pod_latency_p99_s=0.9,
        gang_latency_p50_s=0.5,
        gang_latency_p99_s=0.9,
        cpu_s=0.05,
        cpu_ms_per_pod=0.5,
        cpu_ms_per_pod_binding=0.4,
        peak_rss_mib=90.0,
    )


def test_scheduler_cmd_becomes_a_runner_after_the_built_in_ones() -> None:
    args = parse_args(["--scheduler-cmd", "kube=kube-scheduler --kubeconfig={kubeconfig}"])
    options = options_of(args, "")
    assert runners_of(args, options) == ["ceiling", "naive", "muster", "kube"]
    assert options.external["kube"].argv == ("kube-scheduler", "--kubeconfig={kubeconfig}")


def test_unnamed_scheduler_cmds_are_numbered_in_order() -> None:
    args = parse_args(["--scheduler-cmd", "a --x=1", "--scheduler-cmd", "b"])
    assert list(options_of(args, "").external) == ["cmd1", "cmd2"]


def test_scheduler_cmd_fills_every_field_into_its_arguments(tmp_path: Path) -> None:
    args = parse_args(
        [
            "--scheduler-name",
            "volcano",
            "--out",
            str(tmp_path),
            "--scheduler-cmd",
            "x=/bin/echo {kubeconfig} ns={namespace} {scheduler_name} :{metrics_port} {out} {{}}",
        ]
    )
    options = options_of(args, "")
    workload = workload_of(args, 10, 20, 0.0)
    process, _ = _start("x", workload, options, Path("/k.conf"), "bench-ns", 8123)
    assert process.wait(timeout=10) == 0
    printed = (tmp_path / "x.log").read_text().strip()
    assert printed == f"/k.conf ns=bench-ns volcano :8123 {tmp_path} {{}}"


def test_scheduler_name_goes_to_every_pod_of_the_workload() -> None:
    args = parse_args(["--scheduler-name", "default-scheduler"])
    assert workload_of(args, 10, 20, 0.0).scheduler_name == "default-scheduler"


def test_scheduler_cmd_with_an_unknown_field_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"unknown field 'node'.*\{kubeconfig\}"):
        ExternalScheduler.parse("x=sched --on={node}")


def test_scheduler_cmd_may_not_take_a_built_in_runners_name() -> None:
    with pytest.raises(ValueError, match="'muster' is a built-in runner"):
        ExternalScheduler.parse("muster=./old-muster scheduler")


def test_runners_naming_no_known_runner_are_refused() -> None:
    args = parse_args(["--runners", "muster,volcano"])
    with pytest.raises(SystemExit, match="volcano not known"):
        runners_of(args, options_of(args, ""))


def test_with_a_kubeconfig_the_ceiling_is_that_servers() -> None:
    summary = side_by_side(
        [result("ceiling", 1000), result("muster", 950)], {}, "https://127.0.0.1:6444"
    )
    note = ceiling_note(summary["server"])
    assert "https://127.0.0.1:6444" in note and note != SHARED_MACHINE_NOTE
    assert any("target >= 0.95 on a real API server: met" in line for line in targets(summary))


def test_on_sim_the_ceiling_is_sims_and_the_target_is_0_9() -> None:
    summary = side_by_side([result("ceiling", 1000), result("muster", 850)], {})
    assert ceiling_note(summary["server"]) == SHARED_MACHINE_NOTE
    assert any("target >= 0.9 on muster sim: NOT met" in line for line in targets(summary))


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ("", "target >= 0.8 on muster sim, gangs of 8: met"),
        ("https://k", "target >= 0.85 on a real API server, gangs of 8: met"),
    ],
)
def test_gangs_of_8_have_targets_of_their_own(server: str, expected: str) -> None:
    summary = side_by_side([result("ceiling", 1000), result("muster", 850)], {}, server, "8")
    assert any(expected in line for line in targets(summary))


def test_external_runners_get_a_ratio_to_the_ceiling() -> None:
    summary = side_by_side([result("ceiling", 1000), result("kube", 250)], {})
    assert "kube / ceiling: 0.25; per repeat 0.25 [0.25-0.25]" in targets(summary)


def test_muster_cpu_is_shown_beside_the_ceiling_clients_from_the_same_run() -> None:
    ceiling, muster = result("ceiling", 1000), result("muster", 900)
    ceiling.cpu_ms_per_pod, ceiling.cpu_ms_per_pod_binding = 0.25, 0.2
    muster.cpu_ms_per_pod = 0.4
    lines = targets(side_by_side([ceiling, muster], {}))
    assert (
        "ceiling client CPU (bindings only: no watch, no decision): 0.250 ms/pod from "
        "process start, 0.200 while binding; muster 1.60x its CPU (target <= 1.1: NOT met)"
    ) in lines


def test_scale_grid_reaches_100000_pods() -> None:
    assert "100000" in parse_args(["--scale"]).scale_pods.split(",")


def test_create_nodes_without_a_kubeconfig_is_refused() -> None:
    from cluster_bench import side_by_side_main

    with pytest.raises(SystemExit, match="--create-nodes needs --kubeconfig"):
        side_by_side_main(parse_args(["--create-nodes"]))


class FakeCluster:
    """Answers the few calls ensure_nodes makes, as a bare kube-apiserver would."""

    def __init__(self, names: list[str]) -> None:
        self.nodes: dict[str, dict[str, Any]] = {n: {"metadata": {"name": n}} for n in names}
        self.patched: list[str] = []

    async def request(self, method: str, path: str, **_: Any) -> bytes:
        assert (method, path) == ("GET", "/api/v1/nodes")
        return msgspec.json.encode({"items": list(self.nodes.values())})

    async def create(self, path: str, body: dict[str, Any]) -> bytes:
        # TaintNodesByCondition admission: every new Node comes back not-ready tainted
        node = dict(body, spec={"taints": [{"key": NOT_READY, "effect": "NoSchedule"}]})
        self.nodes[body["metadata"]["name"]] = node
        return msgspec.json.encode(node)

    async def patch(self, path: str, body: dict[str, Any]) -> bytes:
        name = path.rsplit("/", 1)[-1]
        self.nodes[name]["spec"] = body["spec"]
        self.patched.append(name)
        return b"{}"


def test_create_nodes_makes_the_missing_nodes_and_lifts_the_not_ready_taint() -> None:
    cluster = FakeCluster(["bench-node-0000"])
    made = asyncio.run(ensure_nodes(cluster, Workload(nodes=3, pods=30)))  # type: ignore[arg-type]
    assert made == 2
    assert sorted(cluster.nodes) == ["bench-node-0000", "bench-node-0001", "bench-node-0002"]
    assert sorted(cluster.patched) == ["bench-node-0001", "bench-node-0002"]
    assert all(n.get("spec", {}).get("taints", []) == [] for n in cluster.nodes.values())


def test_the_session_target_is_judged_on_the_decision_and_the_whole_session_shown() -> None:
    muster = result("muster", 900)
    muster.decisions = [(1.0, 0.040, 1), (1.5, 0.080, 2)]
    muster.sessions = [(1.0, 0.090, 1), (1.5, 0.150, 2)]
    muster.core = "compiled"
    lines = targets(side_by_side([result("ceiling", 1000), muster], {}))
    assert (
        "muster session, largest 0.5 s-interval mean scraped: deciding 80 ms "
        "(target <= 100: met), 150 ms with applying the decisions"
    ) in lines
    assert "muster core: compiled (muster_build_info)" in lines


def test_the_scrape_reads_the_decision_and_the_core_the_scheduler_reports() -> None:
    metrics = Metrics()
    metrics.attempt_duration.observe(0.04)
    metrics.session_duration.observe(0.06)
    metrics.binds.labels("success").inc(7)
    sample = Sample(at=0.0, cpu_s=0.0, rss_kib=0)
    parse_metrics(generate_latest(metrics.registry).decode(), sample)
    assert (sample.decide_count, sample.decide_sum) == (1, pytest.approx(0.04))
    assert (sample.session_count, sample.session_sum) == (1, pytest.approx(0.06))
    assert sample.binds == 7
    assert sample.core == core() != ""


def test_a_compiled_tree_is_refused_until_it_holds_the_checkouts_sources_compiled(
    tmp_path: Path,
) -> None:
    assert "holds no compiled copy" in stale_in(tmp_path)
    shutil.copytree(REPO / "scheduler", tmp_path / "scheduler")
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    missing = COMPILED_MODULES[-1]
    for module in COMPILED_MODULES[:-1]:
        (tmp_path / Path(*module.split("."))).with_suffix(suffix).touch()
    assert stale_in(tmp_path) == f"{missing} has no extension module in {tmp_path}"
    (tmp_path / Path(*missing.split("."))).with_suffix(suffix).touch()
    assert stale_in(tmp_path) == ""
    edited = tmp_path / "scheduler" / "api" / "task.py"
    edited.write_text(edited.read_text() + "# edited after make compiled\n")
    assert stale_in(tmp_path) == f"scheduler/api/task.py in {tmp_path} differs from the checkout's"


def test_core_compiled_without_a_current_compiled_tree_stops_the_bench_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness.core, "COMPILED_TREE", tmp_path)
    with pytest.raises(SystemExit, match=r"--core compiled: .* run `make compiled` first"):
        options_of(parse_args(["--core", "compiled"]), "")
    assert options_of(parse_args([]), "").tree == REPO


def test_the_muster_runner_imports_muster_from_its_cores_tree(tmp_path: Path) -> None:
    # A stand-in tree whose `scheduler.cli` says where it runs and which file it is.
    tree = tmp_path / "tree"
    (tree / "scheduler").mkdir(parents=True)
    (tree / "scheduler" / "__init__.py").write_text("")
    (tree / "scheduler" / "cli.py").write_text(
        "import os\nprint(os.getcwd(), os.path.realpath(__file__))\n"
    )
    options = Options(out=tmp_path, core="compiled", tree=tree)
    workload = workload_of(parse_args([]), 10, 20, 0.0)
    process, _ = _start("muster", workload, options, Path("/k.conf"), "ns", 8123)
    assert process.wait(timeout=30) == 0
    cwd, module = (tmp_path / "muster.log").read_text().split()
    assert (cwd, module) == (str(tree), str(tree / "scheduler" / "cli.py"))
    env = env_with_bench_path(tree)
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tree / "bench"), str(tree)]


def test_the_session_bench_times_a_session_as_the_scheduler_runs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    try:
        with session_bench.as_the_scheduler_runs():
            assert not gc.isenabled(), "the scheduler pauses the collector for a session"
        assert gc.isenabled()
        monkeypatch.setitem(session_bench.COLLECTOR, "policy", False)  # --cpython-gc
        with session_bench.as_the_scheduler_runs():
            assert gc.isenabled()
    finally:
        gc.enable()


def test_a_schedulers_cpu_is_read_once_it_has_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    # Busy for five readings after its last bind (the events it held), then idle.
    readings = iter([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    monkeypatch.setattr(harness.runners, "cpu_seconds", lambda pid: next(readings, 5.0))
    monkeypatch.setattr(harness.runners, "SETTLE_POLL", 0.01)
    monkeypatch.setattr(harness.runners, "SETTLE_WINDOW", 0.04)
    assert asyncio.run(harness.runners._settled_cpu(1)) == 5.0


def test_a_scheduler_that_exits_after_its_binds_is_read_at_its_last_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readings = iter([0.0, 1.0, 2.0])

    def cpu(pid: int) -> float:
        value = next(readings, None)
        if value is None:
            raise FileNotFoundError(f"/proc/{pid}/stat")
        return value

    monkeypatch.setattr(harness.runners, "cpu_seconds", cpu)
    monkeypatch.setattr(harness.runners, "SETTLE_POLL", 0.01)
    assert asyncio.run(harness.runners._settled_cpu(1)) == 2.0
