"""One full scheduling session over a synthetic backlog: how long, and how it grows.

    python bench/session_bench.py [--pods 10000] [--nodes 1000] [--gang 8] [--repeat 3]
                                  [--mixed 0.2] [--topology 0.5] [--dra --pods 4000 --gpus 8]

Prints which core ran (compiled with mypyc, as in the image, or plain Python), then the
session time (snapshot clone + every action + status computation) at the given size, at 2x
pods and at 2x nodes. Target (docs/design.md): 10,000 pending pods on 1,000 nodes in at most
100 ms, 50,000 pods on 5,000 nodes in at most 300 ms. Run from build/compiled with
PYTHONPATH=. (after `make compiled`) to time the compiled core.

With --mixed F, it also times the same backlog where a fraction F of the gangs use
pod-to-pod constraints (half required anti-affinity to their own gang on hostname,
half DoNotSchedule zone spread with maxSkew 1), and prints its ratio to the plain
session of the same run. Target: at most 1.5x.

With --topology F, the nodes sit in 5 zones x 10 racks (labels example.com/rack and
topology.kubernetes.io/zone, tiers 1 and 2 of the network-topology-aware plugin) and a
fraction F of the gangs (0.5 in docs/performance.md) are hard-constrained to one rack
(spec.networkTopology mode hard, highestTierAllowed 1); it prints that session's ratio
to the unconstrained one (the same cluster and backlog, no gang constrained, the
default config) in the same run. Target: at most 1.5x.

With --dra, the nodes publish --gpus GPUs each through Dynamic Resource Allocation and every
pod claims one from a ResourceClaimTemplate (bench/dra_workload.py: the DeviceClass, the
ResourceSlices and the pods' ResourceClaims as the cache holds them, built through its
handlers); it prints that session's time and pods placed per second beside the same backlog
without claims on the same nodes without devices, and their ratio, from the same run. It
checks first that both place the same gangs and that every bind writes its claim's
allocation (one GPU on the bind's node, none given twice). Target: at most 1.5x, with
--pods 4000 (500 gangs of 8 on 1,000 nodes of 8 GPUs).

With --incremental, it runs sessions as the scheduler does (through its cache, cache/world.py)
over nodes with 1 cpu free each and a backlog that cannot move (gangs of 2-cpu pods, created an
hour ago: they starve, and the oldest holds room), and prints, per backlog size (--backlogs),
the time of a whole session over the backlog plus one new gang (of 100m pods), of the session
that places the new gang while the backlog is settled (framework/settled.py), and of a session
that places one gang on the same nodes with no backlog. Target: the settled column about the
last one, whatever the backlog.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import msgspec
from dra_workload import gpu_world, unallocated_binds

from scheduler import gc_policy
from scheduler.api import wire
from scheduler.api.job import JobInfo, NetworkTopology
from scheduler.api.node import NodeInfo
from scheduler.api.pod_topology import PodTopologySpec, topology_spec
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.queue import QueueInfo
from scheduler.api.resources import Resource
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.build import core
from scheduler.cache.kinds import nodes as cached_nodes
from scheduler.cache.kinds import podgroups, queues
from scheduler.cache.kinds import pods as cached_pods
from scheduler.cache.world import World
from scheduler.engine import default_config, load_config, schedule
from scheduler.framework.config import DEFAULT_CONFIG_YAML, SchedulerConfig
from scheduler.framework.settled import WHOLE_SESSION_SECONDS

GIB = 2**30
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ZONES = 10
RACK = "example.com/rack"
# The topology mode's cluster: 5 zones of 10 racks each.
TOPOLOGY_ZONES = 5
RACKS_PER_ZONE = 10
LABEL_TIERS = f"[{{tier: 1, nodeLabel: {RACK}}}, {{tier: 2, nodeLabel: {ZONE}}}]"
TOPOLOGY_CONFIG = (
    f"{DEFAULT_CONFIG_YAML}  - name: network-topology-aware\n"
    f"    arguments: {{tiers: {LABEL_TIERS}}}\n"
)


def topology_config() -> SchedulerConfig:
    """The default config with network-topology-aware placing by rack and zone labels."""
    return load_config(TOPOLOGY_CONFIG)


def _constraints(group: int, name: str) -> dict[str, object]:
    """A pod spec fragment: anti-affinity to the gang on hostname, or zone spread."""
    selector = {"matchLabels": {"gang": name}}
    if group % 2:
        term = {"topologyKey": HOST, "labelSelector": selector}
        return {
            "affinity": {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        }
    spread = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
    return {"topologySpreadConstraints": [{**spread, "labelSelector": selector}]}


def bench_pod(
    job: JobInfo,
    uid: str,
    name: str,
    request: Resource,
    *,
    node_name: str = "",
    status: TaskStatus = TaskStatus.PENDING,
    labels: dict[str, str] | None = None,
    topology: PodTopologySpec | None = None,
) -> TaskInfo:
    """A pod of `job` for muster in the benches' namespace: pending, or on `node_name`."""
    return TaskInfo(
        uid=uid,
        namespace="bench",
        name=name,
        request=request,
        job=job.key,
        scheduler_name="muster",
        node_name=node_name,
        status=status,
        labels=labels,
        topology=topology,
    )


def build(
    pods: int,
    nodes: int,
    gang: int,
    mixed: float = 0.0,
    *,
    racks: bool = False,
    constrained: float = 0.0,
) -> ClusterSnapshot:
    """Nodes of 32 cpu / 128Gi in ZONES zones; gangs of 1-cpu / 2Gi pods over two queues,
    all pending; a `mixed` fraction of the gangs with pod-to-pod constraints. With
    `racks`, the nodes are in 5 zones x 10 racks instead, and a `constrained` fraction
    of the gangs keeps to one rack (hard)."""
    snapshot = ClusterSnapshot()
    per_rack = max(1, nodes // (TOPOLOGY_ZONES * RACKS_PER_ZONE))
    for index in range(nodes):
        name = f"node-{index:05d}"
        labels = {HOST: name, ZONE: f"zone-{index % ZONES}"}
        if racks:
            rack = min(index // per_rack, TOPOLOGY_ZONES * RACKS_PER_ZONE - 1)
            labels[RACK] = f"rack-{rack:02d}"
            labels[ZONE] = f"zone-{rack // RACKS_PER_ZONE}"
        snapshot.nodes[name] = NodeInfo(name, Resource(32_000, 128 * GIB), labels=labels)
    every = round(1 / mixed) if mixed > 0 else 0
    hard_every = round(1 / constrained) if constrained > 0 else 0
    for name, weight in (("default", 1), ("team-a", 3)):
        snapshot.queues[name] = QueueInfo(name, weight=weight)
    for group in range(pods // gang):
        queue = "team-a" if group % 2 else "default"
        job = JobInfo(
            namespace="bench",
            name=f"pg-{group:06d}",
            uid=f"pg-uid-{group}",
            queue=queue,
            min_member=gang,
            min_resources=Resource(1000 * gang, 2 * GIB * gang),
            phase=PodGroupPhase.PENDING,
            creation_timestamp=f"2026-01-01T00:{group // 60 % 60:02d}:{group % 60:02d}Z",
        )
        if hard_every and group % hard_every == 0:
            job.network_topology = NetworkTopology("hard", 1)
        labels = {"gang": job.name}
        topology = None
        if every and group % every == 0:
            spec = wire.from_dict(_constraints(group // every, job.name), wire.PodSpec)
            topology = topology_spec(spec, "bench", labels)
        for member in range(gang):
            job.add_task(
                bench_pod(
                    job,
                    f"pod-uid-{group}-{member}",
                    f"pg-{group:06d}-{member}",
                    Resource(1000, 2 * GIB),
                    labels=labels,
                    topology=topology,
                )
            )
        snapshot.jobs[job.key] = job
    return snapshot


def measure(
    pods: int,
    nodes: int,
    gang: int,
    repeat: int,
    mixed: float = 0.0,
    *,
    racks: bool = False,
    constrained: float = 0.0,
) -> tuple[float, int]:
    """Median session seconds and pods bound, over `repeat` sessions on fresh clones."""
    snapshot = build(pods, nodes, gang, mixed, racks=racks, constrained=constrained)
    config = topology_config() if constrained > 0 else default_config()
    times = []
    bound = 0
    settle_collector()
    for _ in range(repeat):
        with as_the_scheduler_runs():
            start = time.perf_counter()
            result = schedule(snapshot, config)
            times.append(time.perf_counter() - start)
        bound = len(result.binds)
    return statistics.median(times), bound


# Whether the benchmark runs the collector as `muster scheduler` does (scheduler/gc_policy.py);
# --cpython-gc leaves CPython's defaults, to show what the policy saves.
COLLECTOR = {"policy": True}


def settle_collector() -> None:
    """As the scheduler once its cache is loaded: the snapshots built are the cache."""
    if COLLECTOR["policy"]:
        gc_policy.settle()


def as_the_scheduler_runs() -> contextlib.AbstractContextManager[None]:
    """A session as the scheduler runs one: with the collector paused (gc_policy.paused)."""
    return gc_policy.paused() if COLLECTOR["policy"] else contextlib.nullcontext()


def alternated(
    runs: list[tuple[ClusterSnapshot, SchedulerConfig]], repeat: int
) -> list[tuple[float, int]]:
    """Median seconds and pods bound of each (snapshot, config), the sessions alternated
    repeat by repeat so that all of them see the same load on a shared machine."""
    times: list[list[float]] = [[] for _ in runs]
    bound = [0] * len(runs)
    settle_collector()
    for _ in range(repeat):
        for index, (snapshot, config) in enumerate(runs):
            with as_the_scheduler_runs():
                start = time.perf_counter()
                bound[index] = len(schedule(snapshot, config).binds)
                times[index].append(time.perf_counter() - start)
    return [(statistics.median(t), b) for t, b in zip(times, bound, strict=True)]


def measure_mixed(
    pods: int, nodes: int, gang: int, repeat: int, mixed: float
) -> list[tuple[float, int]]:
    """The plain backlog and the one with a `mixed` fraction of constrained gangs."""
    config = default_config()
    runs = [(build(pods, nodes, gang), config), (build(pods, nodes, gang, mixed), config)]
    return alternated(runs, repeat)


def measure_topology(
    pods: int, nodes: int, gang: int, repeat: int, constrained: float
) -> list[tuple[float, int]]:
    """The unconstrained session (default config) and the one with a `constrained`
    fraction of rack-bound gangs."""
    plain = build(pods, nodes, gang, racks=True)
    kept = build(pods, nodes, gang, racks=True, constrained=constrained)
    return alternated([(plain, default_config()), (kept, topology_config())], repeat)


class MisleadingFigure(SystemExit):
    """The sessions compared do not do the same work, so their ratio would mean nothing."""


def measure_dra(
    pods: int, nodes: int, gang: int, gpus: int, repeat: int
) -> list[tuple[float, int]]:
    """The backlog without claims on nodes without devices, and the same with one GPU
    claimed per pod on nodes of `gpus` GPUs: once each to check that they place the same
    gangs and that every bind carries its claim's allocation, then timed alternately."""
    plain = gpu_world(nodes, gpus, pods // gang, gang, claims=False)
    claimed = gpu_world(nodes, gpus, pods // gang, gang, claims=True)
    runs = [(world.snapshot(EPOCH), default_config()) for world in (plain, claimed)]
    without, with_claims = (schedule(snapshot, config).binds for snapshot, config in runs)
    placed = [{bind.job for bind in binds} for binds in (without, with_claims)]
    if placed[0] != placed[1]:
        raise MisleadingFigure(
            f"--dra: {len(placed[1])} gangs placed with claims, {len(placed[0])} without"
        )
    wrong = unallocated_binds(claimed, with_claims)
    if wrong:
        raise MisleadingFigure(f"--dra: {len(wrong)} binds without their devices: {wrong[:3]}")
    return alternated(runs, repeat)


# The incremental runs' clock: a fixed epoch second, the backlog created an hour before.
EPOCH = 1_800_000_000.0
_encode = msgspec.json.Encoder().encode


def _node(index: int) -> wire.Node:
    """A 32-cpu node with a foreign pod's worth of room taken (see _filler)."""
    name = f"node-{index:05d}"
    room = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    body = {
        "metadata": {"name": name, "labels": {HOST: name, ZONE: f"zone-{index % ZONES}"}},
        "status": {
            "allocatable": room,
            "capacity": room,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    return wire.from_dict(body, wire.Node)


def _pod(name: str, group: str, cpu: str, *, node: str = "", scheduler: str = "muster") -> bytes:
    body: dict[str, object] = {
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"uid-{name}",
            "annotations": {"scheduling.k8s.io/group-name": group} if group else {},
            "creationTimestamp": "2027-01-15T07:00:00Z",
        },
        "spec": {
            "schedulerName": scheduler,
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
        },
        "status": {"phase": "Running" if node else "Pending"},
    }
    return _encode(body)


def _gang(world: World, name: str, size: int, cpu: str, created: str) -> None:
    group = {
        "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}"},
        "spec": {"minMember": size, "queue": "default"},
    }
    group["metadata"]["creationTimestamp"] = created  # type: ignore[index]
    podgroups.upsert(world, wire.from_dict(group, wire.PodGroup))
    for member in range(size):
        cached_pods.upsert(world, wire.decode_pod(_pod(f"{name}-{member}", name, cpu)))


def full_cluster(nodes: int, backlog: int, gang: int) -> World:
    """Nodes with 1 cpu free each (a foreign pod runs on 31), and `backlog` pods of ours in
    gangs of `gang` 2-cpu pods, created an hour before EPOCH: nothing of it can move."""
    world = World(frozenset({"muster"}))
    queues.upsert(world, wire.from_dict({"metadata": {"name": "default"}}, wire.Queue))
    for index in range(nodes):
        node = _node(index)
        cached_nodes.upsert(world, node)
        filler = _pod(f"filler-{index}", "", "31", node=node.metadata.name, scheduler="other")
        cached_pods.upsert(world, wire.decode_pod(filler))
    for group in range(backlog // gang):
        _gang(world, f"backlog-{group:06d}", gang, "2", "2027-01-15T07:00:00Z")
    return world


class IncrementalRun:
    """One World run through sessions as the scheduler runs them, one new gang at a time."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.config = default_config()
        self.now = EPOCH
        self.gangs = 0

    def session(self, *, whole: bool) -> tuple[float, int]:
        """One session (whole: past the whole-session period) after one new gang arrives:
        seconds, and pods bound."""
        self.gangs += 1
        _gang(self.world, f"new-{self.gangs:05d}", 8, "100m", "2027-01-15T08:00:00Z")
        self.now += WHOLE_SESSION_SECONDS if whole else 1.0
        with as_the_scheduler_runs():
            start = time.perf_counter()
            snapshot = self.world.snapshot(self.now)
            result = schedule(snapshot, self.config, copy=False)
            self.world.record_session(result, self.now)
            seconds = time.perf_counter() - start
        for bind in result.binds:
            self.world.assume_bound(bind.uid, bind.node)
        return seconds, len(result.binds)


def measure_incremental(
    nodes: int, backlogs: list[int], gang: int, repeat: int
) -> list[tuple[int, float, float, float, int]]:
    """Per backlog size: median seconds of a whole session, of a session with the backlog
    settled, and of one with no backlog, each placing one new gang; and the pods the last
    settled session bound."""
    alone = IncrementalRun(full_cluster(nodes, 0, gang))
    rows = []
    for backlog in backlogs:
        run = IncrementalRun(full_cluster(nodes, backlog, gang))
        settle_collector()
        run.session(whole=True)  # settles the backlog
        run.session(whole=False)  # settles what the first left to try again
        whole: list[float] = []
        settled: list[float] = []
        single: list[float] = []
        bound = 0
        for _ in range(repeat):
            whole.append(run.session(whole=True)[0])
            run.session(whole=False)
            seconds, bound = run.session(whole=False)
            settled.append(seconds)
            single.append(alone.session(whole=True)[0])
        rows.append(
            (
                backlog,
                statistics.median(whole),
                statistics.median(settled),
                statistics.median(single),
                bound,
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--gang", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--mixed", type=float, default=0.0, help="fraction of gangs with affinity or spread"
    )
    parser.add_argument(
        "--topology", type=float, default=0.0, help="fraction of gangs kept to one rack (hard)"
    )
    parser.add_argument(
        "--dra", action="store_true", help="every pod claims a GPU through DRA (see --gpus)"
    )
    parser.add_argument("--gpus", type=int, default=8, help="--dra: GPUs each node publishes")
    parser.add_argument(
        "--incremental",
        action="store_true",
        help="time a session over a settled backlog plus one new gang (see the module doc)",
    )
    parser.add_argument(
        "--backlogs", default="0,10000,100000", help="--incremental: backlog sizes, in pods"
    )
    parser.add_argument(
        "--cpython-gc",
        action="store_true",
        help="CPython's collector settings, not the scheduler's (scheduler/gc_policy.py)",
    )
    args = parser.parse_args()
    # Compiled (the image; `make compiled`, then run from build/compiled with PYTHONPATH=.)
    # or plain Python (a checkout): a third of the time apart (docs/design.md).
    print(f"core: {core()}")
    COLLECTOR["policy"] = not args.cpython_gc
    if COLLECTOR["policy"]:
        gc_policy.tune()
    if args.incremental:
        backlogs = [int(size) for size in args.backlogs.split(",")]
        rows = measure_incremental(args.nodes, backlogs, args.gang, args.repeat)
        print(f"{args.nodes} nodes, 1 cpu free on each; backlog in gangs of {args.gang}")
        print(f"{'backlog':>8} {'whole ms':>9} {'settled ms':>11} {'alone ms':>9} {'bound':>6}")
        for backlog, whole, settled, single, bound in rows:
            print(
                f"{backlog:>8} {whole * 1000:>9.1f} {settled * 1000:>11.1f}"
                f" {single * 1000:>9.1f} {bound:>6}"
            )
        return
    if args.dra:
        (plain, plain_bound), (claimed, claimed_bound) = measure_dra(
            args.pods, args.nodes, args.gang, args.gpus, args.repeat
        )
        print(f"{args.nodes} nodes, {args.gpus} GPUs each with --dra; gangs of {args.gang}")
        print(f"{'workload':>10} {'pods':>8} {'bound':>7} {'session ms':>11} {'pods/s':>9}")
        for label, seconds, bound in (
            ("plain", plain, plain_bound),
            ("dra", claimed, claimed_bound),
        ):
            rate = bound / seconds
            print(f"{label:>10} {args.pods:>8} {bound:>7} {seconds * 1000:>11.1f} {rate:>9,.0f}")
        print(f"dra / plain: {claimed / plain:.2f}x (target at most 1.5x)")
        return
    if args.topology > 0:
        (plain, plain_bound), (kept, kept_bound) = measure_topology(
            args.pods, args.nodes, args.gang, args.repeat, args.topology
        )
        print(f"{'workload':>10} {'pods':>8} {'nodes':>6} {'bound':>7} {'session ms':>11}")
        for label, seconds, bound in (
            ("plain", plain, plain_bound),
            ("topology", kept, kept_bound),
        ):
            print(f"{label:>10} {args.pods:>8} {args.nodes:>6} {bound:>7} {seconds * 1000:>11.1f}")
        print(f"topology / plain: {kept / plain:.2f}x (target at most 1.5x)")
        return
    if args.mixed > 0:
        (plain, plain_bound), (mixed, mixed_bound) = measure_mixed(
            args.pods, args.nodes, args.gang, args.repeat, args.mixed
        )
        print(f"{'workload':>10} {'pods':>8} {'nodes':>6} {'bound':>7} {'session ms':>11}")
        print(
            f"{'plain':>10} {args.pods:>8} {args.nodes:>6} {plain_bound:>7} {plain * 1000:>11.1f}"
        )
        print(
            f"{'mixed':>10} {args.pods:>8} {args.nodes:>6} {mixed_bound:>7} {mixed * 1000:>11.1f}"
        )
        print(f"mixed / plain: {mixed / plain:.2f}x (target at most 1.5x)")
        return
    print(f"{'pods':>8} {'nodes':>6} {'gang':>5} {'bound':>7} {'session ms':>11}")
    for pods, nodes in (
        (args.pods, args.nodes),
        (args.pods * 2, args.nodes),
        (args.pods, args.nodes * 2),
    ):
        seconds, bound = measure(pods, nodes, args.gang, args.repeat)
        print(f"{pods:>8} {nodes:>6} {args.gang:>5} {bound:>7} {seconds * 1000:>11.1f}")


if __name__ == "__main__":
    main()
