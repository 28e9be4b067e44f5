"""How fast `muster controller` groups new pods from its first second, whatever the cluster holds.

    .venv/bin/python bench/controller_bench.py [--podgroups 1000,10000,100000]
        [--pods-per-group 1.5] [--burst 1000] [--probe-seconds 15] [--bound] [--tree PATH]

For each count N of existing PodGroups, a fresh `muster sim` is seeded with N PodGroups and
N x 1.5 pods in 20 namespaces, every pod naming its PodGroup and unbound (the worst case
for the controller, which lists unbound pods; --bound gives them a node, as a running
cluster's are), and with --burst bare pods of no PodGroup (work left from while no
controller ran).
Then `muster controller` starts (as sim's admin, standalone, no webhook server) and from
that moment:

- a probe, a new bare pod, is created every 0.25 s for --probe-seconds, and its wait from
  its creation to its PodGroup is timed (a watch of PodGroups);
- the burst: the time from the start until the last of its pods has a PodGroup gives the
  handling rate, pods grouped per second;
- the controller's RSS is read every 0.5 s: its peak, and at the end.

It prints a table and writes bench/out/controller-bench.json. --tree runs the controller of
another checkout (an older one, to compare). The target (docs/performance.md): a new pod's
PodGroup within 2 s of its creation, at up to 100,000 PodGroups and 150,000 pods.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from harness.cluster import REPO, run_bounded, stop, wait_until
from harness.observe import memory_kib

from scheduler.kube.client import KubeClient
from scheduler.kube.config import load_configuration

OUT = REPO / "bench" / "out"
NAMESPACES = 20
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1"
PROBE_EVERY = 0.25


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--podgroups", default="1000,10000,100000", help="counts, comma-separated")
    parser.add_argument("--pods-per-group", type=float, default=1.5)
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--probe-seconds", type=float, default=15.0)
    parser.add_argument("--bound", action="store_true", help="the seeded pods have a node")
    parser.add_argument(
        "--tree", type=Path, default=REPO, help="the checkout whose controller runs"
    )
    parser.add_argument("--out", type=Path, default=OUT / "controller-bench.json")
    return parser.parse_args(argv)


@dataclass
class Result:
    """One run's figures."""

    podgroups: int
    pods: int
    burst: int
    bound: bool = False
    seed_s: float = 0.0
    first_podgroup_s: float = 0.0  # from the controller's start to the first probe's group
    probe_waits: list[float] = field(default_factory=list)
    burst_s: float = 0.0
    rss_peak_mib: float = 0.0
    rss_end_mib: float = 0.0

    @property
    def burst_rate(self) -> float:
        """Pods of the burst grouped per second since the start."""
        return self.burst / self.burst_s if self.burst_s else 0.0

    def row(self) -> str:
        """The table row."""
        waits = sorted(self.probe_waits) or [0.0]
        return (
            f"{self.podgroups:>9,} {self.pods:>9,} {'bound' if self.bound else 'unbound':>7} "
            f"{self.first_podgroup_s:>9.2f} "
            f"{statistics.median(waits):>8.2f} {waits[-1]:>8.2f} {self.burst_rate:>9.0f} "
            f"{self.rss_peak_mib:>8.0f} {self.rss_end_mib:>8.0f}"
        )


HEADER = (
    f"{'PodGroups':>9} {'pods':>9} {'':>7} {'first s':>9} {'p50 s':>8} {'max s':>8} "
    f"{'burst/s':>9} {'peak MiB':>8} {'end MiB':>8}"
)


def start_sim(workdir: Path, objects: int) -> tuple[subprocess.Popen[bytes], Path]:
    """`muster sim` with the CRDs, its history long enough for the seeding's writes."""
    kubeconfig = workdir / "sim.kubeconfig"
    kubeconfig.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "scheduler.cli", "sim", "--port", "0", "--host", "127.0.0.1"]
    argv += ["--kubeconfig-out", str(kubeconfig), "--crds", str(REPO / "crds")]
    argv += ["--nodes", "4", "--log-level", "WARNING", "--history-size", str(2 * objects + 10_000)]
    with (workdir / "sim.log").open("ab") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    wait_until(lambda: kubeconfig.exists() or process.poll() is not None, 60, "muster sim")
    if process.poll() is not None:
        raise RuntimeError(f"muster sim exited; see {workdir / 'sim.log'}")
    return process, kubeconfig


def bare_pod(name: str, group: str | None = None, node: str = "") -> dict[str, Any]:
    """A small pod of ours, naming `group` and on `node` when given."""
    annotations = {"scheduling.k8s.io/group-name": group} if group else {}
    container = {"name": "c", "image": "busybox:1.36", "resources": {"requests": {"cpu": "1m"}}}
    spec: dict[str, Any] = {"schedulerName": "muster", "containers": [container]}
    if node:
        spec["nodeName"] = node  # a node sim does not run: the pod stays as created
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": spec,
    }


async def seed(kube: KubeClient, podgroups: int, pods: int, burst: int, bound: bool) -> None:
    """The PodGroups, their pods, and the burst of bare pods."""
    for index in range(NAMESPACES):
        await kube.create("/api/v1/namespaces", {"metadata": {"name": f"bench-{index}"}})
    for name in ("burst", "probe"):
        await kube.create("/api/v1/namespaces", {"metadata": {"name": name}})

    async def podgroup(index: int) -> None:
        namespace = f"bench-{index % NAMESPACES}"
        body = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": f"pg-{index}"},
            "spec": {"minMember": 1},
        }
        await kube.create(f"{PODGROUPS}/namespaces/{namespace}/podgroups", body)

    async def member(index: int) -> None:
        group = index % podgroups
        namespace = f"bench-{group % NAMESPACES}"
        pod = bare_pod(f"p-{index}", f"pg-{group}", "elsewhere" if bound else "")
        await kube.create(f"/api/v1/namespaces/{namespace}/pods", pod)

    async def ungrouped(index: int) -> None:
        await kube.create("/api/v1/namespaces/burst/pods", bare_pod(f"b-{index}"))

    await run_bounded(podgroups, 64, podgroup)
    await run_bounded(pods, 64, member)
    await run_bounded(burst, 64, ungrouped)


class _Meta(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""


class _Item(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class _Event(msgspec.Struct):
    type: str
    object: _Item


class _List(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


async def observe(
    kube: KubeClient, result: Result, started: float, burst: int, probe_seconds: float
) -> None:
    """Create the probes and time their PodGroups; time the burst's last PodGroup."""
    listed = msgspec.json.decode(
        await kube.request("GET", f"{PODGROUPS}/podgroups", params={"limit": "1"}), type=_List
    )
    made: dict[str, float] = {}  # "<namespace>/<name>" -> when the watch saw it
    burst_left = burst
    decoder = msgspec.json.Decoder(_Event)

    async def watch() -> None:
        nonlocal burst_left
        params = {"resourceVersion": listed.metadata.resource_version, "timeoutSeconds": "600"}
        async for line in kube.watch(f"{PODGROUPS}/podgroups", params, timeout=600):
            event = decoder.decode(line)
            if event.type != "ADDED":
                continue
            meta = event.object.metadata
            made[f"{meta.namespace}/{meta.name}"] = time.perf_counter()
            if meta.namespace == "burst":
                burst_left -= 1
                if burst_left == 0:
                    result.burst_s = time.perf_counter() - started

    watcher = asyncio.create_task(watch())
    probes: dict[str, float] = {}  # PodGroup key -> when its probe pod was created
    deadline = started + probe_seconds
    index = 0
    while time.perf_counter() < deadline:
        body = msgspec.json.decode(
            await kube.create("/api/v1/namespaces/probe/pods", bare_pod(f"probe-{index}"))
        )
        probes[f"probe/podgroup-{body['metadata']['uid']}"] = time.perf_counter()
        index += 1
        await asyncio.sleep(PROBE_EVERY)
    limit = time.perf_counter() + 600
    while (burst_left > 0 or any(k not in made for k in probes)) and time.perf_counter() < limit:
        await asyncio.sleep(0.1)
    watcher.cancel()
    result.probe_waits = [made[key] - created for key, created in probes.items() if key in made]
    if len(result.probe_waits) < len(probes):
        print(f"  {len(probes) - len(result.probe_waits)} probes never got a PodGroup")
    firsts = [made[key] for key in probes if key in made]
    result.first_podgroup_s = min(firsts) - started if firsts else 0.0


async def sample_rss(pid: int, result: Result, stop_flag: asyncio.Event) -> None:
    """The controller's RSS every 0.5 s: its peak, and the last reading."""
    while not stop_flag.is_set():
        try:
            memory = memory_kib(pid)
        except OSError:
            return
        result.rss_end_mib = memory.get("VmRSS", 0) / 1024
        result.rss_peak_mib = max(result.rss_peak_mib, memory.get("VmHWM", 0) / 1024)
        await asyncio.sleep(0.5)


def controller(tree: Path, kubeconfig: Path, log: Path) -> subprocess.Popen[bytes]:
    """`muster controller` of `tree`, as sim's admin, standalone, without webhooks."""
    argv = [sys.executable, "-m", "scheduler.cli", "controller", "--kubeconfig", str(kubeconfig)]
    argv += ["--standalone", "--webhook-port", "0", "--log-level", "warning"]
    argv += ["--health-address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0"]
    env = dict(os.environ, PYTHONPATH=str(tree))
    with log.open("ab") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=tree, env=env)


async def run(count: int, args: argparse.Namespace, workdir: Path) -> Result:
    """One fresh sim, seeded, then the controller started and observed."""
    pods = int(count * args.pods_per_group)
    result = Result(count, pods, args.burst, args.bound)
    sim, kubeconfig = start_sim(workdir, count + pods + args.burst)
    process: subprocess.Popen[bytes] | None = None
    try:
        kube = KubeClient(load_configuration(str(kubeconfig)), connections=64)
        began = time.perf_counter()
        await seed(kube, count, pods, args.burst, args.bound)
        result.seed_s = time.perf_counter() - began
        print(f"  seeded {count:,} PodGroups, {pods:,} pods, {args.burst:,} bare")
        print(f"  in {result.seed_s:.0f}s")
        started = time.perf_counter()
        process = controller(args.tree, kubeconfig, workdir / f"controller-{count}.log")
        done = asyncio.Event()
        sampler = asyncio.create_task(sample_rss(process.pid, result, done))
        await observe(kube, result, started, args.burst, args.probe_seconds)
        await asyncio.sleep(1.0)
        done.set()
        await sampler
        await kube.close()
    finally:
        stop(process)
        stop(sim)
    return result


def main(argv: list[str] | None = None) -> int:
    """Run every count and print the table."""
    args = parse_args(argv)
    counts = [int(c) for c in args.podgroups.split(",") if c]
    workdir = OUT / "controller-bench"
    workdir.mkdir(parents=True, exist_ok=True)
    results = []
    for count in counts:
        print(f"{count:,} PodGroups:")
        results.append(asyncio.run(run(count, args, workdir)))
    print(HEADER)
    for result in results:
        print(result.row())
    args.out.write_text(
        json.dumps([{**asdict(r), "burst_rate": r.burst_rate} for r in results], indent=2)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
