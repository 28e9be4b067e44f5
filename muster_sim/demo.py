"""`muster demo`: muster scheduling sample gangs on a simulated cluster, then a report.

Starts `muster sim` (about 20 nodes, and a stand-in cluster autoscaler with a node group
of larger nodes), `muster controller` and `muster scheduler` as real processes,
submits a Ray-shaped gang, two queues of weight 1 and 3 with competing jobs
and one gang that cannot fit, shows progress live, and ends with what was
placed where, each queue's share against what it deserves, the time each
gang took, why the waiting gang waits, and where metrics were served. Then a gang
that fits on no node there is gets the nodes of all its pods at once from the
autoscaler (a ProvisioningRequest) and runs. Last, two nodes with simulated GPUs join
(published through DRA by sim's driver): a GPU gang whose pods each claim one GPU from a
ResourceClaimTemplate is placed with a device for every claim on its pod's node, and a
second one waits, saying why. It stops every process it started, whatever happens.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table

from muster_sim.cluster.devices import DRIVER as GPU_CLASS
from muster_sim.crd_files import crds_dir
from muster_sim.demo_cluster import (
    GPU_POOL,
    GPUS_PER_NODE,
    NAMESPACE,
    POOL_LABEL,
    Cluster,
    Gang,
    wait_until,
    waiting_reason,
)

CRDS = crds_dir()
NODES = 20
NODE_CPU = 8
# The stand-in autoscaler's node group: larger nodes, tainted for the pods that ask for them.
LARGE_POOL = "large"
LARGE_CPU = 16
LARGE_MAX = 4
NODE_GROUPS = {
    "nodeGroups": [
        {
            "name": LARGE_POOL,
            "minSize": 0,
            "maxSize": LARGE_MAX,
            "template": {
                "cpu": str(LARGE_CPU),
                "memory": "64Gi",
                "labels": {POOL_LABEL: LARGE_POOL},
                "taints": [{"key": POOL_LABEL, "value": LARGE_POOL, "effect": "NoSchedule"}],
            },
        }
    ]
}
# How many nodes with GPUs the GPU scene adds.
GPU_NODES = 2
# The built-in config, with scale-up for the default queue's gangs.
SCHEDULER_CONFIG = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: scaleup
    arguments: {queues: [default]}
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def workloads() -> list[Gang]:
    """A Ray cluster, two teams competing 1:3, and a gang no node can hold."""
    gangs = [Gang("ray-demo", "default", {"head": (1, 1), "worker": (8, 2)})]
    gangs += [Gang(f"team-a-{i}", "team-a", {"worker": (4, 2)}) for i in range(8)]
    gangs += [Gang(f"team-b-{i}", "team-b", {"worker": (4, 2)}) for i in range(16)]
    gangs.append(Gang("too-big", "default", {"worker": (4, 12)}))
    gangs.append(Gang("notebook", "default", {"main": (1, 2)}, bare=True))
    return gangs


class Processes:
    """Child processes that are always stopped: SIGTERM, then SIGKILL."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.children: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{name}.log").open("wb")
        child = subprocess.Popen(
            [sys.executable, "-m", "scheduler.cli", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.children.append((name, child))
        return child

    def show_logs(self, console: Console, lines: int = 15) -> None:
        """The last lines of every process's output, to see why something failed."""
        for name, _ in self.children:
            tail = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()[-lines:]
            console.print(f"[bold]--- {name} (last {len(tail)} lines) ---[/]")
            console.print("\n".join(tail), markup=False, highlight=False)

    def stop_all(self) -> None:
        for _, child in reversed(self.children):
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for _, child in reversed(self.children):
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def http_ok(url: str) -> bool:
    """Whether a GET answers 200."""
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus endpoint, keyed by name and labels."""
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def progress_view(gangs: list[Gang], placed: dict[str, str], elapsed: float) -> Group:
    """The live table: per queue, gangs placed and pods bound."""
    table = Table(title=f"muster demo — {elapsed:4.1f}s", expand=False)
    for column in ("queue", "gangs placed", "pods bound", "cpu bound"):
        table.add_column(column, justify="right" if column != "queue" else "left")
    for queue in ("default", "team-a", "team-b"):
        mine = [g for g in gangs if g.queue == queue]
        done = sum(1 for g in mine if g.placed_after is not None)
        pods = sum(1 for g in mine for n in g.pod_names() if n in placed)
        cpu = sum(g.cpu for g in mine if g.placed_after is not None)
        table.add_row(queue, f"{done}/{len(mine)}", f"{pods}/{sum(g.size for g in mine)}", str(cpu))
    total = sum(g.size for g in gangs)
    bar = Progress(
        TextColumn("pods bound"), BarColumn(), TextColumn("{task.completed}/{task.total}")
    )
    bar.add_task("bound", total=total, completed=len(placed))
    return Group(table, bar)


def run_demo(args: argparse.Namespace) -> int:
    """Entry point of `muster demo`."""
    console = Console()
    with (
        tempfile.TemporaryDirectory(prefix="muster-demo-") as work,
        contextlib.ExitStack() as stack,
    ):
        processes = Processes(Path(work))
        stack.callback(processes.stop_all)
        try:
            demo(console, args, Path(work), processes)
        except (TimeoutError, OSError, k8s.ApiException) as error:
            console.print(f"[bold red]The demo failed:[/] {error}")
            processes.show_logs(console)
            return 1
    console.print("All demo processes stopped.")
    return 0


def demo(console: Console, args: argparse.Namespace, work_dir: Path, processes: Processes) -> None:
    """Start the processes, submit the workloads, watch them placed, report."""
    kubeconfig = work_dir / "sim.kubeconfig"
    metrics_port = args.metrics_port or free_port()
    groups = work_dir / "node-groups.yaml"
    groups.write_text(yaml.safe_dump(NODE_GROUPS))
    config = work_dir / "scheduler.yaml"
    config.write_text(SCHEDULER_CONFIG)
    console.print(
        f"[bold]Starting muster sim[/] with {NODES} nodes of {NODE_CPU} cpu, and a stand-in "
        f"cluster autoscaler that may add up to {LARGE_MAX} nodes of {LARGE_CPU} cpu …"
    )
    processes.start(
        "sim",
        "sim",
        "--port",
        "0",
        "--kubeconfig-out",
        str(kubeconfig),
        "--crds",
        str(CRDS),
        "--nodes",
        str(NODES),
        "--node-cpu",
        str(NODE_CPU),
        "--node-memory",
        "32Gi",
        "--autoscaler-node-groups",
        str(groups),
        "--autoscaler-scan-interval",
        "0.5",
        "--autoscaler-node-delay",
        "1",
        "--autoscaler-ready-delay",
        "1",
    )
    # sim serves HTTPS with authentication and RBAC, as kube-apiserver; its kubeconfig holds
    # its CA and the admin token, which the controller, the scheduler and the demo use
    wait_until(kubeconfig.exists, 20, "muster sim to write its kubeconfig")
    metrics = f"http://127.0.0.1:{metrics_port}"
    health = f"127.0.0.1:{free_port()}"
    console.print("[bold]Starting muster controller[/] …")
    processes.start(
        "controller",
        "controller",
        "--kubeconfig",
        str(kubeconfig),
        "--standalone",
        "--webhook-port",
        "0",
        "--health-address",
        health,
        "--metrics-address",
        f"127.0.0.1:{free_port()}",
    )
    wait_until(lambda: http_ok(f"http://{health}/healthz"), 30, "the controller to start")
    cluster = Cluster(kubeconfig)
    namespace: Any = {"metadata": {"name": NAMESPACE}}
    cluster.core.create_namespace(namespace)
    cluster.queue("team-a", 1)
    cluster.queue("team-b", 3)
    gangs = workloads()
    # The whole backlog is in place before the scheduler starts, so that every
    # queue's demand is known from its first session and the split is the same
    # on a fast or a slow machine.
    for gang in gangs:
        cluster.submit(gang)
    console.print(
        f"Submitted {len(gangs)} gangs ({sum(g.size for g in gangs)} pods) "
        "in queues default, team-a (weight 1) and team-b (weight 3)."
    )
    console.print("[bold]Starting muster scheduler[/] …")
    processes.start(
        "scheduler",
        "scheduler",
        "--kubeconfig",
        str(kubeconfig),
        "--no-leader-elect",
        "--schedule-period",
        "0.5s",
        "--scheduler-conf",
        str(config),
        "--metrics-address",
        f"127.0.0.1:{metrics_port}",
    )
    wait_until(lambda: http_ok(f"{metrics}/readyz"), 30, "the scheduler to sync its cache")
    ready = time.monotonic()
    for gang in gangs:
        gang.submitted = ready
    placed = watch_progress(console, cluster, gangs, args.timeout)
    report(console, cluster, gangs, placed, metrics)
    scale_up_scene(console, cluster, args.timeout)
    gpu_scene(console, cluster, args.timeout)


def gpu_scene(console: Console, cluster: Cluster, timeout: float) -> None:
    """GPUs through DRA: a gang whose pods each claim a GPU gets one device per claim on its
    pod's node, all at once; a second gang, for which no GPU is left, waits saying why."""
    console.print()
    names = [f"{GPU_POOL}-{index:04d}" for index in range(GPU_NODES)]
    for name in names:
        cluster.gpu_node(name)
    cluster.claim_template("one-gpu", GPU_CLASS)
    # The other queues hold the cluster's cpu at their shares; GPU work gets a queue of its
    # own, as a platform team would give it.
    cluster.queue("gpu", weight=1)
    console.print(
        f"[bold]GPUs through DRA:[/] nodes {', '.join(names)} join with {GPUS_PER_NODE} GPUs "
        f"each, published in ResourceSlices by sim's DRA driver (DeviceClass {GPU_CLASS}). "
        "Each pod of a GPU gang (queue gpu) claims one GPU from the ResourceClaimTemplate "
        "one-gpu."
    )
    first = Gang(
        "train-gpu",
        "gpu",
        {"worker": (GPU_NODES * GPUS_PER_NODE, 1)},
        pool=GPU_POOL,
        claim_template="one-gpu",
    )
    second = Gang("more-gpu", "gpu", {"worker": (2, 1)}, pool=GPU_POOL, claim_template="one-gpu")
    cluster.submit(first)
    start = time.monotonic()
    wait_until(
        lambda: all(n in cluster.placements() for n in first.pod_names()),
        timeout,
        lambda: f"gang {first.name} to be placed ({cluster.podgroup(first.name).get('status')})",
    )
    elapsed = time.monotonic() - start
    cluster.submit(second)
    wait_until(
        lambda: waiting_reason(cluster.podgroup(second.name)),
        timeout,
        f"gang {second.name} to say why it waits",
    )
    placed = cluster.placements()
    devices = cluster.devices()
    table = Table(title=f"{first.name}: placed whole {elapsed:.1f}s after it was submitted")
    for column in ("pod", "node", "device its claim was allocated"):
        table.add_column(column)
    for pod in first.pod_names():
        table.add_row(pod, placed.get(pod, "-"), devices.get(pod, "-"))
    console.print(table)
    console.print(f"{second.name} waits: {waiting_reason(cluster.podgroup(second.name))}")


def scale_up_scene(console: Console, cluster: Cluster, timeout: float) -> None:
    """A gang no node can hold gets the nodes of all its pods at once from the autoscaler."""
    gang = Gang("elastic", "default", {"worker": (4, 12)}, pool=LARGE_POOL)
    console.print()
    console.print(
        f"[bold]Scale-up:[/] gang {gang.name} ({gang.size} pods of 12 cpu, on {LARGE_POOL} "
        f"nodes) fits on no node there is; the autoscaler's {LARGE_POOL} group has none yet."
    )
    cluster.submit(gang)
    start = time.monotonic()
    wait_until(
        lambda: all(n in cluster.placements() for n in gang.pod_names()),
        timeout,
        f"gang {gang.name} to get its nodes and run",
    )
    elapsed = time.monotonic() - start
    placed = cluster.placements()
    nodes = sorted({placed[n] for n in gang.pod_names()})
    console.print(
        f"{gang.name}: muster asked the cluster autoscaler for all {gang.size} pods at once "
        f"(ProvisioningRequest {NAMESPACE}/{gang.name}-scaleup-1); it added "
        f"{', '.join(nodes)} and the gang runs, {elapsed:.1f}s after it was submitted."
    )
    too_big = scale_up_message(cluster.podgroup("too-big"))
    if too_big:
        console.print(f"too-big (its pods ask for no {LARGE_POOL} node): {too_big}")


def scale_up_message(group: dict[str, Any]) -> str | None:
    """The message of a PodGroup's ScaleUp condition."""
    for condition in group.get("status", {}).get("conditions", []):
        if condition.get("type") == "ScaleUp":
            return str(condition.get("message", ""))
    return None


def watch_progress(
    console: Console, cluster: Cluster, gangs: list[Gang], timeout: float
) -> dict[str, str]:
    """Poll placements until nothing changes for a few periods (or the timeout)."""
    start = time.monotonic()
    placed: dict[str, str] = {}
    last_change = start
    with Live(progress_view(gangs, placed, 0), console=console, refresh_per_second=8) as live:
        while time.monotonic() - start < timeout:
            current = cluster.placements()
            now = time.monotonic()
            if current != placed:
                placed = current
                last_change = now
            for gang in gangs:
                if gang.placed_after is None and all(n in placed for n in gang.pod_names()):
                    gang.placed_after = now - gang.submitted
                    gang.nodes = {placed[n] for n in gang.pod_names()}
            live.update(progress_view(gangs, placed, now - start))
            settled = now - last_change > 3 and placed
            if settled and waiting_reason(cluster.podgroup("too-big")):
                break
            time.sleep(0.25)
    console.print()
    return placed


def report(
    console: Console, cluster: Cluster, gangs: list[Gang], placed: dict[str, str], metrics: str
) -> None:
    """What was placed where, queue shares, times, and why the waiting gang waits."""
    table = Table(title="Gangs")
    for column in ("gang", "queue", "pods", "cpu", "placed after start", "nodes"):
        table.add_column(column)
    for gang in gangs:
        when = f"{gang.placed_after:.2f}s" if gang.placed_after is not None else "waiting"
        nodes = (
            ", ".join(sorted(gang.nodes)) if len(gang.nodes) <= 3 else f"{len(gang.nodes)} nodes"
        )
        table.add_row(gang.name, gang.queue, str(gang.size), str(gang.cpu), when, nodes or "-")
    console.print(table)

    samples = scrape(f"{metrics}/metrics")
    shares = Table(title="Queues: allocated against deserved (cpu)")
    for column in ("queue", "weight", "allocated", "deserved", "share"):
        shares.add_column(column)
    for queue, weight in (("default", 1), ("team-a", 1), ("team-b", 3)):
        labels = (("queue", queue), ("resource", "cpu"))
        allocated = samples.get(("muster_queue_allocated", labels), 0.0)
        deserved = samples.get(("muster_queue_deserved", labels), 0.0)
        share = f"{allocated / deserved:.0%}" if deserved else "-"
        shares.add_row(queue, str(weight), f"{allocated:g}", f"{deserved:g}", share)
    console.print(shares)
    a = samples.get(("muster_queue_allocated", (("queue", "team-a"), ("resource", "cpu"))), 0)
    b = samples.get(("muster_queue_allocated", (("queue", "team-b"), ("resource", "cpu"))), 0)
    if a:
        console.print(f"team-b : team-a = {b / a:.2f} : 1 (their weights are 3 : 1)")

    made = [g for g in gangs if g.bare and g.placed_after is not None]
    for gang in made:
        console.print(
            f"{gang.name}: a bare pod; muster controller made its PodGroup "
            f"({cluster.podgroup_of(gang.pod_names()[0])}) and it was placed."
        )
    waiting: dict[str, list[str]] = {}
    for gang in gangs:
        if gang.placed_after is None and not gang.bare:
            reason = waiting_reason(cluster.podgroup(gang.name)) or "no condition yet"
            waiting.setdefault(reason, []).append(gang.name)
    if waiting:
        reasons = Table(
            title="Why the waiting gangs wait (their PodGroup's Unschedulable condition)"
        )
        reasons.add_column("gangs")
        reasons.add_column("condition message")
        for reason, names in waiting.items():
            reasons.add_row(", ".join(names), reason)
        console.print(reasons)
    bound = int(samples.get(("muster_binds_total", (("result", "success"),)), 0))
    partial = [
        g.name for g in gangs if g.placed_after is None and any(n in placed for n in g.pod_names())
    ]
    console.print(
        f"{len(placed)} pods bound by {bound} binds; "
        + (f"partly placed gangs: {', '.join(partial)}" if partial else "no gang is partly placed.")
    )
    console.print(f"Metrics were served at {metrics}/metrics")


def add_parser(subparsers: Any) -> None:
    """The `muster demo` subcommand."""
    parser = subparsers.add_parser("demo", help="schedule sample gangs on a simulated cluster")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait at most")
    parser.add_argument("--metrics-port", type=int, default=0, help="default: a free port")
    parser.set_defaults(func=run_demo)
