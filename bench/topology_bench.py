"""Placement quality of topology gangs and of HyperNode binpacking.

    python bench/topology_bench.py [--racks 10] [--nodes-per-rack 16] [--gangs 40] [--seed 14]

A cluster of racks (tier 1, label example.com/rack) in two zones (tier 2) of nodes of 8
cpus. Three scenarios, each printed as a table:

1. Soft topology gangs. The racks are partly full at random (some nearly empty, some
   nearly full) and take a backlog of gangs of 4 to 24 one-cpu pods, placed by:
   - muster with topology: network-topology-aware, every gang soft, tier 1 (the lowest
     tier that holds the whole gang, the domain it leaves fullest first: HyperNode
     binpacking, hypernode.binpack.cpu and .memory 1), else anywhere;
   - the same with hypernode.binpack.cpu and .memory 0 (domains in name order);
   - muster without topology: the default config (least-allocated spreading);
   - first fit: each pod on the first node, in name order, with room (all or nothing).
   Printed: gangs placed, the share inside one rack and one zone, racks per gang.
2. Normal pods, then rack-sized gangs. The racks are empty; first a backlog of small
   gangs without networkTopology (1 to 4 pods) fills about a third of the cluster, then
   hard tier-1 gangs of a whole rack's cpus arrive. With
   hypernode.binpack.normal-pod.enable (fading 0.8, and 0: racks only) the small pods
   fill the fullest racks first and leave racks whole; without it least-allocated
   spreads them. The weight matters: the score is 100 x weight x a rack's fill, beside
   nodeorder's scores of several hundred. Printed: racks left empty, and rack-sized gangs
   placed after.
3. Evictions for hard gangs. Every node is full; the racks with most free room hold
   high-priority pods, the others low-priority ones; a rack-sized high-priority hard
   gang preempts. Printed, per hypernode.gradient.evict.max-hypernodes: whether it was
   given room, the pods evicted, and the session's time.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import defaultdict
from dataclasses import dataclass

from session_bench import bench_pod

from scheduler.api.job import JobInfo, NetworkTopology
from scheduler.api.node import NodeInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.queue import QueueInfo
from scheduler.api.resources import Resource
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskStatus
from scheduler.engine import default_config, load_config, schedule
from scheduler.framework.config import DEFAULT_CONFIG_YAML

GIB = 2**30
RACK = "example.com/rack"
ZONE = "topology.kubernetes.io/zone"
CPU = 8
TIERS = f"tiers: [{{tier: 1, nodeLabel: {RACK}}}, {{tier: 2, nodeLabel: {ZONE}}}]"


def topology_config(arguments: str = "", actions: str = "") -> str:
    """The default config with network-topology-aware and the label tiers, plus
    `arguments` (YAML flow items) and, when given, other actions."""
    extra = f", {arguments}" if arguments else ""
    text = (
        f"{DEFAULT_CONFIG_YAML}  - name: network-topology-aware\n"
        f"    arguments: {{{TIERS}{extra}}}\n"
    )
    if actions:
        text = text.replace('actions: "enqueue, allocate, backfill"', f'actions: "{actions}"')
    return text


TOPOLOGY_CONFIG = topology_config()


@dataclass(frozen=True, slots=True)
class Quality:
    """How one placement of the backlog turned out."""

    placed: int
    one_rack: float
    one_zone: float
    racks_per_gang: float


def build(racks: int, per_rack: int, gangs: int, seed: int, topology: bool) -> ClusterSnapshot:
    """The partly full cluster and the pending backlog (soft tier-1 gangs with `topology`)."""
    rng = random.Random(seed)
    snapshot = ClusterSnapshot()
    snapshot.queues["default"] = QueueInfo("default")
    filler = JobInfo(namespace="bench", name="filler", min_member=0, phase=PodGroupPhase.RUNNING)
    snapshot.jobs[filler.key] = filler
    for rack in range(racks):
        # How full this rack is: anywhere from empty to nearly full.
        fullness = rng.random() * 0.9
        for index in range(per_rack):
            name = f"r{rack:02d}-n{index:02d}"
            labels = {RACK: f"rack-{rack:02d}", ZONE: f"zone-{rack % 2}"}
            node = NodeInfo(name, Resource(CPU * 1000, 64 * GIB), labels=labels)
            snapshot.nodes[name] = node
            for pod in range(sum(rng.random() < fullness for _ in range(CPU))):
                task = bench_pod(
                    filler,
                    f"fill-{name}-{pod}",
                    f"fill-{name}-{pod}",
                    Resource(1000, GIB),
                    node_name=name,
                    status=TaskStatus.RUNNING,
                )
                filler.add_task(task)
                node.add_task(task)
    for group in range(gangs):
        size = rng.choice((4, 8, 8, 16, 24))
        job = JobInfo(
            namespace="bench",
            name=f"pg-{group:03d}",
            uid=f"pg-{group}",
            min_member=size,
            phase=PodGroupPhase.INQUEUE,
            creation_timestamp=f"2026-01-01T00:{group // 60:02d}:{group % 60:02d}Z",
        )
        if topology:
            job.network_topology = NetworkTopology("soft", 1)
        for member in range(size):
            job.add_task(
                bench_pod(
                    job,
                    f"pod-{group}-{member}",
                    f"pg-{group:03d}-{member:02d}",
                    Resource(1000, GIB),
                )
            )
        snapshot.jobs[job.key] = job
    return snapshot


def first_fit(snapshot: ClusterSnapshot) -> dict[str, list[str]]:
    """Each gang in creation order, each pod on the first node with room; all or nothing."""
    free = {name: node.idle.clone() for name, node in sorted(snapshot.nodes.items())}
    placed: dict[str, list[str]] = {}
    jobs = sorted(
        (job for job in snapshot.jobs.values() if job.pending_tasks()),
        key=lambda job: (job.creation_timestamp, job.key),
    )
    for job in jobs:
        taken: list[str] = []
        for task in sorted(job.pending_tasks(), key=lambda t: t.name):
            name = next((n for n, room in free.items() if task.request.fits_in(room)), None)
            if name is None:
                break
            free[name].sub(task.request)
            taken.append(name)
        if len(taken) == len(job.pending_tasks()):
            placed[job.key] = taken
        else:
            for name, task in zip(taken, job.pending_tasks(), strict=False):
                free[name].add(task.request)
    return placed


def muster(snapshot: ClusterSnapshot, topology: bool, arguments: str = "") -> dict[str, list[str]]:
    """One session of muster (every gang fits in one session or waits)."""
    config = load_config(topology_config(arguments)) if topology else default_config()
    placed: dict[str, list[str]] = defaultdict(list)
    for bind in schedule(snapshot, config).binds:
        placed[bind.job].append(bind.node)
    return dict(placed)


def quality(snapshot: ClusterSnapshot, placed: dict[str, list[str]]) -> Quality:
    """The share of placed gangs inside one rack and one zone, and racks per gang."""
    if not placed:
        return Quality(0, 0.0, 0.0, 0.0)
    racks = [{snapshot.nodes[n].labels[RACK] for n in nodes} for nodes in placed.values()]
    zones = [{snapshot.nodes[n].labels[ZONE] for n in nodes} for nodes in placed.values()]
    count = len(placed)
    return Quality(
        count,
        sum(len(r) == 1 for r in racks) / count,
        sum(len(z) == 1 for z in zones) / count,
        sum(len(r) for r in racks) / count,
    )


def empty_racks(racks: int, per_rack: int) -> ClusterSnapshot:
    """Empty racks of `per_rack` nodes of CPU cpus, alternating over two zones."""
    snapshot = ClusterSnapshot()
    snapshot.queues["default"] = QueueInfo("default")
    for rack in range(racks):
        for index in range(per_rack):
            name = f"r{rack:02d}-n{index:02d}"
            labels = {RACK: f"rack-{rack:02d}", ZONE: f"zone-{rack % 2}"}
            snapshot.nodes[name] = NodeInfo(name, Resource(CPU * 1000, 64 * GIB), labels=labels)
    return snapshot


def add_gang(
    snapshot: ClusterSnapshot,
    name: str,
    size: int,
    *,
    topology: NetworkTopology | None = None,
    priority: int = 0,
    created: int = 0,
) -> JobInfo:
    """A pending gang of `size` one-cpu pods."""
    job = JobInfo(
        namespace="bench",
        name=name,
        uid=name,
        min_member=size,
        priority=priority,
        phase=PodGroupPhase.INQUEUE,
        creation_timestamp=_stamp(created),
    )
    job.network_topology = topology
    for member in range(size):
        task = bench_pod(job, f"{name}-{member}", f"{name}-{member:02d}", Resource(1000, GIB))
        task.priority = priority
        job.add_task(task)
    snapshot.jobs[job.key] = job
    return job


def _stamp(seconds: int) -> str:
    return f"2026-01-01T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}Z"


def run_bound(snapshot: ClusterSnapshot, config_text: str) -> ClusterSnapshot:
    """One session; its binds applied to the snapshot, as the next session would see them."""
    for bind in schedule(snapshot, load_config(config_text)).binds:
        job = snapshot.jobs[bind.job]
        task = job.tasks[bind.uid]
        job.set_task_status(task, TaskStatus.RUNNING)
        task.node_name = bind.node
        snapshot.nodes[bind.node].add_task(task)
    return snapshot


def normal_then_whole_racks(
    racks: int, per_rack: int, seed: int, arguments: str
) -> tuple[int, int, int]:
    """Scenario 2: small gangs without topology fill about a third of the cluster, then
    rack-sized hard tier-1 gangs come; the racks left empty and the big gangs placed."""
    rng = random.Random(seed)
    snapshot = empty_racks(racks, per_rack)
    target = racks * per_rack * CPU // 3
    small = 0
    while sum(len(j.tasks) for j in snapshot.jobs.values()) < target:
        add_gang(snapshot, f"small-{small:03d}", rng.choice((1, 2, 2, 4)), created=small)
        small += 1
    run_bound(snapshot, topology_config(arguments))
    used = {
        snapshot.nodes[t.node_name].labels[RACK]
        for j in snapshot.jobs.values()
        for t in j.tasks.values()
        if t.node_name
    }
    empty = racks - len(used)
    for big in range(racks):
        add_gang(
            snapshot,
            f"rack-gang-{big:02d}",
            per_rack * CPU,
            topology=NetworkTopology("hard", 1),
            created=10_000 + big,
        )
    result = schedule(snapshot, load_config(topology_config(arguments)))
    placed = len({bind.job for bind in result.binds if "rack-gang" in bind.job})
    return small, empty, placed


def evictions_for_hard_gangs(
    racks: int, per_rack: int, max_domains: int
) -> tuple[bool, int, float]:
    """Scenario 3: full racks, the roomiest guarded by high-priority pods; one rack-sized
    high-priority hard gang preempts. Whether it got room, pods evicted, seconds."""
    snapshot = empty_racks(racks, per_rack)
    filler_low = JobInfo(namespace="bench", name="low", min_member=0, phase=PodGroupPhase.RUNNING)
    filler_high = JobInfo(
        namespace="bench", name="guard", min_member=0, priority=1000, phase=PodGroupPhase.RUNNING
    )
    for job in (filler_low, filler_high):
        snapshot.jobs[job.key] = job
    for rack in range(racks):
        # The first half of the racks keep one cpu free per node and are guarded.
        guarded = rack < racks // 2
        owner = filler_high if guarded else filler_low
        for index in range(per_rack):
            name = f"r{rack:02d}-n{index:02d}"
            for pod in range(CPU - 1 if guarded else CPU):
                task = bench_pod(
                    owner,
                    f"{owner.name}-{name}-{pod}",
                    f"{owner.name}-{name}-{pod}",
                    Resource(1000, GIB),
                    node_name=name,
                    status=TaskStatus.RUNNING,
                )
                task.priority = owner.priority
                owner.add_task(task)
                snapshot.nodes[name].add_task(task)
    add_gang(
        snapshot, "hard", per_rack * CPU // 2, topology=NetworkTopology("hard", 1), priority=500
    )
    config = topology_config(
        f"hypernode.gradient.evict.max-hypernodes: {max_domains}",
        actions="enqueue, allocate, preempt, backfill",
    )
    start = time.perf_counter()
    result = schedule(snapshot, load_config(config))
    seconds = time.perf_counter() - start
    return bool(result.evictions), len(result.evictions), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--racks", type=int, default=10)
    parser.add_argument("--nodes-per-rack", type=int, default=16)
    parser.add_argument("--gangs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    size = (args.racks, args.nodes_per_rack, args.gangs, args.seed)
    with_topology = build(*size, topology=True)
    unpacked = build(*size, topology=True)
    without = build(*size, topology=False)
    no_binpack = "hypernode.binpack.cpu: 0, hypernode.binpack.memory: 0"
    rows = (
        ("muster, topology", quality(with_topology, muster(with_topology, topology=True))),
        (
            "topology, no binpack",
            quality(unpacked, muster(unpacked, topology=True, arguments=no_binpack)),
        ),
        ("muster, no topology", quality(without, muster(without, topology=False))),
        ("first fit", quality(without, first_fit(without))),
    )
    print(
        f"1. {args.racks} racks x {args.nodes_per_rack} nodes ({CPU} cpu), partly full; "
        f"{args.gangs} gangs of 4-24 one-cpu pods"
    )
    print(f"{'placement':>22} {'placed':>7} {'one rack':>9} {'one zone':>9} {'racks/gang':>11}")
    for label, q in rows:
        print(
            f"{label:>22} {q.placed:>7} {q.one_rack:>9.0%} {q.one_zone:>9.0%} "
            f"{q.racks_per_gang:>11.2f}"
        )
    print(
        f"\n2. {args.racks} empty racks x {args.nodes_per_rack} nodes: small gangs without "
        f"topology fill a third, then rack-sized hard gangs"
    )
    print(f"{'normal-pod packing':>22} {'small gangs':>12} {'racks empty':>12} {'rack gangs':>11}")
    for label, arguments in (
        ("off", "hypernode.binpack.normal-pod.enable: false"),
        ("on, weight 1", ""),
        ("on, weight 10", "weight: 10"),
        ("weight 10, fading 0", "weight: 10, hypernode.binpack.normal-pod.fading: 0"),
        ("on, weight 50", "weight: 50"),
    ):
        small, empty, placed = normal_then_whole_racks(
            args.racks, args.nodes_per_rack, args.seed, arguments
        )
        print(f"{label:>22} {small:>12} {empty:>12} {placed:>11}")
    print(
        f"\n3. {args.racks} full racks, the roomiest half guarded; a hard gang of half a "
        f"rack preempts"
    )
    print(f"{'max-hypernodes':>22} {'given room':>11} {'evicted':>8} {'session ms':>11}")
    for max_domains in (1, args.racks // 2, args.racks // 2 + 1, 8):
        got, evicted, seconds = evictions_for_hard_gangs(
            args.racks, args.nodes_per_rack, max_domains
        )
        print(f"{max_domains:>22} {got!s:>11} {evicted:>8} {seconds * 1000:>11.0f}")


if __name__ == "__main__":
    main()
