"""Processes and objects of a run: a fresh `muster sim`, the bench namespace, the workload."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import msgspec

from harness.workload import (
    Workload,
    node_pools_yaml,
    pod_manifest,
    podgroup_manifest,
    running_pod_manifest,
)
from muster_sim.cluster.nodes import NodePool, node_objects
from scheduler.kube.client import KubeClient
from scheduler.kube.config import load_configuration
from scheduler.kube.errors import Gone, StatusError, TransportError

REPO = Path(__file__).resolve().parents[2]
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"


def stop(process: subprocess.Popen[bytes] | None, grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; always reaps the child."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def wait_until(check: Callable[[], bool], timeout: float, what: str, poll: float = 0.05) -> None:
    """Poll `check` until it holds; raise with `what` on timeout."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(poll)


def http_ok(url: str) -> bool:
    """True when GET url answers 2xx."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return 200 <= int(response.status) < 300
    except OSError:
        return False


@contextlib.contextmanager
def fresh_sim(workload: Workload, workdir: Path, log: Path, pools_yaml: str = "") -> Iterator[Path]:
    """A `muster sim` subprocess with the workload's nodes; yields its kubeconfig.

    sim runs with its default, as strict as kube-apiserver (HTTPS, tokens, RBAC); the kubeconfig
    it writes holds its CA and the admin token, which every bench process uses. `pools_yaml`
    replaces the workload's one pool of nodes.
    """
    pools = workdir / "pools.yaml"
    pools.write_text(pools_yaml or node_pools_yaml(workload))
    kubeconfig = workdir / "sim.kubeconfig"
    kubeconfig.unlink(missing_ok=True)
    args = [sys.executable, "-m", "scheduler.cli", "sim", "--port", "0", "--host", "127.0.0.1"]
    args += ["--kubeconfig-out", str(kubeconfig), "--node-pools", str(pools)]
    args += ["--crds", str(REPO / "crds"), "--log-level", "WARNING"]
    args += ["--history-size", str(max(100_000, 4 * workload.pods))]
    with log.open("ab") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        wait_until(lambda: kubeconfig.exists() or process.poll() is not None, 60, "muster sim")
        if process.poll() is not None:
            raise RuntimeError(f"muster sim exited with {process.returncode}; see {log}")
        yield kubeconfig
    finally:
        stop(process)


def client(kubeconfig: Path, connections: int = 64) -> KubeClient:
    """A KubeClient on the kubeconfig (no client-side rate limit)."""
    return KubeClient(load_configuration(str(kubeconfig)), connections=connections)


async def run_bounded(count: int, concurrency: int, make: Callable[[int], Awaitable[None]]) -> None:
    """make(0..count-1) with at most `concurrency` in flight."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(count):
        queue.put_nowait(index)

    async def worker() -> None:
        while not queue.empty():
            await make(queue.get_nowait())

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def bench_pool(workload: Workload) -> NodePool:
    """The nodes --create-nodes makes on a cluster: bench-node-NNNN of the workload's shape."""
    cpu, memory_gi, slots = workload.node_shape()
    return NodePool("bench-node", workload.nodes, str(cpu), f"{memory_gi}Gi", pods=slots)


async def ensure_nodes(kube: KubeClient, workload: Workload) -> int:
    """Create the workload's Node objects (as `muster sim` makes them) that the cluster lacks,
    for a real API server with no kubelets; returns how many were created. Nodes that a
    create answers without status (a server that drops it) get it through the status
    subresource, so they show their room and are Ready."""
    have = msgspec.json.decode(await kube.request("GET", "/api/v1/nodes"))["items"]
    names = {n["metadata"]["name"] for n in have}
    missing = [
        n for n in node_objects([bench_pool(workload)]) if n["metadata"]["name"] not in names
    ]

    async def create(index: int) -> None:
        node = {k: v for k, v in missing[index].items() if k != "metadata"}
        node["metadata"] = {
            k: v
            for k, v in missing[index]["metadata"].items()
            if k in ("name", "labels", "annotations")
        }
        made = msgspec.json.decode(await kube.create("/api/v1/nodes", node))
        if not made.get("status", {}).get("allocatable"):
            path = f"/api/v1/nodes/{node['metadata']['name']}/status"
            await kube.patch(path, {"status": node["status"]})

    await run_bounded(len(missing), 32, create)
    await _untaint_not_ready(kube)
    return len(missing)


NOT_READY = "node.kubernetes.io/not-ready"


async def _untaint_not_ready(kube: KubeClient) -> None:
    # kube-apiserver's TaintNodesByCondition admission gives every new Node the not-ready
    # NoSchedule taint, which the node lifecycle controller lifts once the node is Ready; a
    # bare API server runs no such controller, so the bench lifts it (the nodes are Ready).
    nodes = msgspec.json.decode(await kube.request("GET", "/api/v1/nodes"))["items"]
    tainted = [
        n
        for n in nodes
        if any(t.get("key") == NOT_READY for t in n.get("spec", {}).get("taints", []))
    ]

    async def untaint(index: int) -> None:
        node = tainted[index]
        kept = [t for t in node["spec"]["taints"] if t.get("key") != NOT_READY]
        await kube.patch(f"/api/v1/nodes/{node['metadata']['name']}", {"spec": {"taints": kept}})

    await run_bounded(len(tainted), 32, untaint)


# How long a pod refused for want of its namespace's default ServiceAccount is sent again: a
# real API server refuses pods until kube-controller-manager has made it, a moment after the
# namespace (sim makes no ServiceAccounts and needs none).
ACCOUNT_WAIT = 30.0


async def create_pod(kube: KubeClient, namespace: str, manifest: dict[str, object]) -> None:
    """Create the pod, sent again while the server waits for the namespace's default
    ServiceAccount (ACCOUNT_WAIT)."""
    deadline = time.monotonic() + ACCOUNT_WAIT
    while True:
        try:
            await kube.create(f"/api/v1/namespaces/{namespace}/pods", manifest)
            return
        except StatusError as error:
            waiting = error.code == 403 and 'serviceaccount "default" not found' in error.message
            if not waiting or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.2)


async def create_namespace(kube: KubeClient, namespace: str) -> None:
    """Create the bench's namespace (a leftover one with the same name is an error)."""
    await kube.create("/api/v1/namespaces", {"metadata": {"name": namespace}})


async def delete_namespace(kube: KubeClient, namespace: str) -> None:
    """Delete the namespace and, on servers that do not cascade, its pods and PodGroups."""
    # Right away (gracePeriodSeconds 0): a bound pod on a real API server with no kubelet
    # would stay Terminating for ever, holding its node's room in the next run. A big
    # collection can outlast the server's request timeout: send it again until none is left.
    pods = f"/api/v1/namespaces/{namespace}/pods"
    for _ in range(20):
        with contextlib.suppress(StatusError, TransportError):
            await kube.request("DELETE", pods, params={"gracePeriodSeconds": "0"})
        left = msgspec.json.decode(await kube.request("GET", pods, params={"limit": "1"}))
        if not left.get("items"):
            break
    with contextlib.suppress(StatusError):
        await kube.request("DELETE", PODGROUPS.format(ns=namespace))
    with contextlib.suppress(StatusError):
        await kube.request("DELETE", f"/api/v1/namespaces/{namespace}")


class Creator:
    """Creates the workload's PodGroups and pods, recording when each pod was created."""

    def __init__(self, kube: KubeClient, workload: Workload, namespace: str) -> None:
        self.kube = kube
        self.workload = workload
        self.namespace = namespace
        self.created: dict[str, float] = {}  # pod name -> perf_counter when its POST returned
        self.gang_of: dict[str, str] = {}

    async def backlog(self, concurrency: int = 48) -> None:
        """Every PodGroup, then every pod, as fast as the server takes them."""
        gangs = self.workload.gangs()

        async def group(index: int) -> None:
            name, size = gangs[index]
            await self.kube.create(
                PODGROUPS.format(ns=self.namespace), podgroup_manifest(self.namespace, name, size)
            )

        await run_bounded(len(gangs), concurrency, group)
        members = [(name, i) for name, size in gangs for i in range(size)]

        async def pod(index: int) -> None:
            name, member = members[index]
            await self._create_pod(name, member)

        await run_bounded(len(members), concurrency, pod)

    async def running(self, concurrency: int = 48) -> None:
        """The pods another scheduler already runs (--running), in a namespace of their own
        beside the bench's, which the bench does not watch."""
        namespace = f"{self.namespace}-running"
        await create_namespace(self.kube, namespace)

        async def pod(index: int) -> None:
            await create_pod(
                self.kube, namespace, running_pod_manifest(self.workload, namespace, index)
            )

        await run_bounded(self.workload.running, concurrency, pod)

    async def arrivals(self, rate: float) -> None:
        """Gang by gang at `rate` pods/s on average (a gang's pods arrive together)."""
        began = time.perf_counter()
        sent = 0
        for name, size in self.workload.gangs():
            due = began + sent / rate
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            await self.kube.create(
                PODGROUPS.format(ns=self.namespace), podgroup_manifest(self.namespace, name, size)
            )
            await asyncio.gather(*(self._create_pod(name, i) for i in range(size)))
            sent += size

    async def _create_pod(self, group: str, member: int) -> None:
        manifest = pod_manifest(self.workload, self.namespace, group, member)
        await create_pod(self.kube, self.namespace, manifest)
        name = manifest["metadata"]["name"]
        self.created[name] = time.perf_counter()
        self.gang_of[name] = group


# The User-Agent of muster's lean lanes (binds, statuses, events: kube/pipeline.py).
SCHEDULER_AGENT = "muster"


async def scheduler_writes(kube: KubeClient) -> dict[str, list[int]]:
    """From sim's audit log, muster's writes by "verb resource[/subresource]": how many in
    all, and how many between its first and last bind; {} when the log no longer holds the
    run's first records (sim keeps the newest 100,000)."""
    try:
        body = await kube.request("GET", "/sim/audit", params={"since": "0", "limit": "0"})
    except Gone:
        return {}  # sim answers 410 for a start it has dropped
    records = [msgspec.json.decode(line) for line in body.splitlines() if line.strip()]
    if not records or records[0].get("seq", 1) != 1:
        return {}
    ours = [r for r in records if r.get("userAgent") == SCHEDULER_AGENT]
    binds = [r["time"] for r in ours if r["objectRef"].get("subresource") == "binding"]
    first, last = (min(binds), max(binds)) if binds else (0.0, -1.0)
    writes: dict[str, list[int]] = {}
    for record in ours:
        ref = record["objectRef"]
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        counts = writes.setdefault(f"{record['verb']} {resource}", [0, 0])
        counts[0] += 1
        counts[1] += first <= record["time"] <= last
    return writes


def env_with_bench_path(tree: Path = REPO) -> dict[str, str]:
    """The environment for bench subprocesses: `harness` and `scheduler` importable, from
    the checkout or from another tree (build/compiled)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "bench"), str(tree)])
    return env
