"""Two muster instances over two node pools against one over both, on the same workload.

    .venv/bin/python bench/partition_bench.py [--nodes 1000] [--pods 10000] [--gang 8-64]
        [--repeat 3] [--core plain|compiled]

A fresh `muster sim` per run has the nodes in two pools (pool-a and pool-b, half each; sim
labels each node sim.muster.dev/pool=<pool>), and two Queues, one per pool, labelled the same
way; the gangs alternate between the queues. "one" runs one `muster scheduler` over both
pools; "two" runs one per pool, each with `--node-selector sim.muster.dev/pool=<pool>` and a
lease of its own. It reports pods/s (first to last bind, all pods) and the schedulers' CPU per
pod, the runs interleaved, and checks sim's audit log of every write (GET /sim/audit): each pod
bound once, no node given more cpu, memory or pods than it has, and with two instances every
gang on its own queue's pool. The plan this measures is docs/design.md's "Past one process".
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from harness.cluster import (
    PODGROUPS,
    client,
    create_namespace,
    env_with_bench_path,
    fresh_sim,
    run_bounded,
    stop,
)
from harness.core import CORES, tree_of, write_bytecode
from harness.observe import BindWatcher, cpu_seconds
from harness.runners import free_port
from harness.workload import Workload, pod_manifest

from muster_sim.cluster.nodes import POOL_LABEL
from scheduler.api.quantity import parse_quantity
from scheduler.kube.client import KubeClient

POOLS = ("pool-a", "pool-b")
NAMESPACE = "partition-bench"


def pools_yaml(workload: Workload) -> str:
    """Two pools of the workload's node shape, half the nodes each."""
    cpu, memory_gi, slots = workload.node_shape()
    half = workload.nodes // 2
    return "".join(
        f"- name: {pool}\n  count: {half}\n  cpu: '{cpu}'\n  memory: {memory_gi}Gi\n"
        f"  pods: {slots}\n"
        for pool in POOLS
    )


def queue_of(index: int) -> str:
    """The queue of the index-th gang: the pools' queues in turn."""
    return f"queue-{POOLS[index % 2]}"


async def create_workload(kube: KubeClient, workload: Workload) -> dict[str, str]:
    """The queues (labelled with their pool), the PodGroups and the pods; returns each pod's
    queue."""
    for pool in POOLS:
        labels = {POOL_LABEL: pool}
        queue = {"metadata": {"name": f"queue-{pool}", "labels": labels}, "spec": {"weight": 1}}
        await kube.create("/apis/scheduling.volcano.sh/v1beta1/queues", queue)
    gangs = workload.gangs()
    queues: dict[str, str] = {}

    async def group(index: int) -> None:
        name, size = gangs[index]
        body = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"minMember": size, "queue": queue_of(index)},
        }
        await kube.create(PODGROUPS.format(ns=NAMESPACE), body)

    await run_bounded(len(gangs), 48, group)
    members = [(index, name, i) for index, (name, size) in enumerate(gangs) for i in range(size)]

    async def pod(index: int) -> None:
        gang, name, member = members[index]
        manifest = pod_manifest(workload, NAMESPACE, name, member)
        await kube.create(f"/api/v1/namespaces/{NAMESPACE}/pods", manifest)
        queues[manifest["metadata"]["name"]] = queue_of(gang)

    await run_bounded(len(members), 48, pod)
    return queues


def start_muster(kubeconfig: Path, tree: Path, out: Path, name: str, pool: str) -> Any:
    """One `muster scheduler`, over `pool` (with --node-selector) or every node ("")."""
    args = [sys.executable, "-m", "scheduler.cli", "scheduler", "--kubeconfig", str(kubeconfig)]
    args += ["--schedule-period", "0.2s", "--log-level", "warning"]
    args += ["--metrics-address", f"127.0.0.1:{free_port()}", "--lock-name", f"muster-{name}"]
    args += ["--lock-namespace", "default"]
    if pool:
        args += ["--node-selector", f"{POOL_LABEL}={pool}"]
    with (out / f"partition-{name}.log").open("ab") as log:
        return subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, cwd=tree, env=env_with_bench_path(tree)
        )


@dataclass
class Audit:
    """What sim's audit log says of the run's bindings."""

    binds: int
    pods_bound_twice: int
    nodes_over: int
    off_pool: int


async def audit(
    kube: KubeClient, workload: Workload, queues: dict[str, str], partitioned: bool
) -> Audit:
    """Every successful binding in sim's log, checked against the nodes' room and, with
    `partitioned` instances, the pools of the pods' queues."""
    body = await kube.request("GET", "/sim/audit", params={"since": "0", "limit": "0"})
    records = [msgspec.json.decode(line) for line in body.splitlines() if line.strip()]
    if records and records[0].get("seq", 1) != 1:
        raise SystemExit("sim's audit log no longer holds the whole run: use fewer --pods")
    bound: dict[str, list[str]] = {}
    for record in records:
        ref = record["objectRef"]
        if ref.get("subresource") != "binding" or record["responseStatus"]["code"] >= 300:
            continue
        node = record["requestObject"]["target"]["name"]
        bound.setdefault(ref["name"], []).append(node)
    cpu, memory_gi, slots = workload.node_shape()
    request_cpu = parse_quantity(f"{workload.pod_cpu_m}m")
    request_memory = parse_quantity(f"{workload.pod_memory_mi}Mi")
    room_cpu, room_memory = parse_quantity(str(cpu)), parse_quantity(f"{memory_gi}Gi")
    per_node: dict[str, int] = {}
    off_pool = 0
    for pod, nodes in bound.items():
        for node in nodes:
            per_node[node] = per_node.get(node, 0) + 1
            pool = queues.get(pod, "").removeprefix("queue-")
            off_pool += partitioned and bool(pool) and not node.startswith(pool)
    over = sum(
        1
        for count in per_node.values()
        if count > slots or count * request_cpu > room_cpu or count * request_memory > room_memory
    )
    return Audit(
        binds=sum(len(nodes) for nodes in bound.values()),
        pods_bound_twice=sum(1 for nodes in bound.values() if len(nodes) > 1),
        nodes_over=over,
        off_pool=off_pool,
    )


@dataclass
class Run:
    """One run's figures."""

    mode: str
    pods_per_s: float
    cpu_ms_per_pod: float
    audit: Audit


def run(mode: str, workload: Workload, tree: Path, out: Path, timeout: float) -> Run:
    """One run on a fresh sim: "one" instance over both pools, or "two", one per pool."""
    with tempfile.TemporaryDirectory(prefix="muster-partition-") as tmp:
        log = out / f"sim-partition-{mode}.log"
        with fresh_sim(workload, Path(tmp), log, pools_yaml(workload)) as kubeconfig:
            return asyncio.run(_run(mode, workload, tree, out, timeout, kubeconfig))


async def _run(
    mode: str, workload: Workload, tree: Path, out: Path, timeout: float, kubeconfig: Path
) -> Run:
    async with client(kubeconfig) as kube:
        await create_namespace(kube, NAMESPACE)
        watcher = BindWatcher(kube, NAMESPACE, workload.pods)
        watching = await watcher.start()
        queues = await create_workload(kube, workload)
        pools = POOLS if mode == "two" else ("",)
        processes = [start_muster(kubeconfig, tree, out, p or "all", p) for p in pools]
        try:
            await asyncio.wait_for(watcher.done.wait(), timeout)
            await asyncio.sleep(2.0)  # the statuses and events written after the binds
            cpu = sum(cpu_seconds(p.pid) for p in processes)
        finally:
            for process in processes:
                stop(process, grace=20)
            watching.cancel()
        times = sorted(watcher.bound.values())
        checked = await audit(kube, workload, queues, mode == "two")
    rate = (len(times) - 1) / (times[-1] - times[0]) if times[-1] > times[0] else float("nan")
    return Run(mode, rate, cpu * 1000 / len(times), checked)


def main() -> int:
    """Interleaved runs of one and two instances, then the table and the audit's verdict."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--gang", default="8-64")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--core", choices=CORES, default="plain")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tree = tree_of(args.core)
    write_bytecode(tree)
    workload = Workload(args.nodes, args.pods, args.gang)
    print(f"{workload.label()}, two pools of {args.nodes // 2}; core {args.core}", flush=True)
    runs: list[Run] = []
    for attempt in range(args.repeat):
        for mode in ("one", "two") if attempt % 2 == 0 else ("two", "one"):
            began = time.perf_counter()
            runs.append(run(mode, workload, tree, args.out, args.timeout))
            done = runs[-1]
            print(
                f"  run {attempt + 1} {mode}: {done.pods_per_s:,.0f} pods/s, "
                f"{done.cpu_ms_per_pod:.3f} CPU ms/pod, {done.audit} "
                f"({time.perf_counter() - began:.0f} s)",
                flush=True,
            )
    print(f"\n{'instances':>9} {'pods/s':>8} {'CPU ms/pod':>11}")
    for mode in ("one", "two"):
        mine = [r for r in runs if r.mode == mode]
        rate = statistics.median(r.pods_per_s for r in mine)
        cpu = statistics.median(r.cpu_ms_per_pod for r in mine)
        print(f"{mode:>9} {rate:>8,.0f} {cpu:>11.3f}")
    faults = [
        r.audit
        for r in runs
        if r.audit.pods_bound_twice
        or r.audit.nodes_over
        or r.audit.off_pool
        or r.audit.binds != workload.pods
    ]
    print(
        f"audit: FAULTS in {len(faults)} runs: {faults}"
        if faults
        else "audit: every pod bound once, no node over its room, every gang in its pool"
    )
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
