"""Placement quality of topology gangs: how many land inside one rack, and over how many.

    python bench/topology_bench.py [--racks 10] [--nodes-per-rack 16] [--gangs 40] [--seed 14]

A cluster of racks (tier 1, label example.com/rack) in two zones (tier 2), whose nodes
are partly full at random (some racks nearly empty, some nearly full), takes a backlog
of gangs of 4 to 24 one-cpu pods. Three placements of the same backlog are compared:

- muster with topology: the network-topology-aware plugin, every gang soft, tier 1
  (the lowest tier that holds the whole gang, tightest fit first, else anywhere);
- muster without topology: the default config (least-allocated spreading);
- first fit: each pod on the first node, in name order, with room (all or nothing).

For each it prints the gangs placed, the share of placed gangs inside one rack and
inside one zone, and the mean number of racks per placed gang.
"""

from __future__ import annotations

import argparse
import random
from collections import defaultdict
from dataclasses import dataclass

from session_bench import bench_pod

from scheduler.api.job import JobInfo, NetworkTopology, PodGroupPhase
from scheduler.api.node import NodeInfo
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
TOPOLOGY_CONFIG = (
    f"{DEFAULT_CONFIG_YAML}  - name: network-topology-aware\n"
    f"    arguments: {{tiers: [{{tier: 1, nodeLabel: {RACK}}}, {{tier: 2, nodeLabel: {ZONE}}}]}}\n"
)


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


def muster(snapshot: ClusterSnapshot, topology: bool) -> dict[str, list[str]]:
    """One session of muster (every gang fits in one session or waits)."""
    config = load_config(TOPOLOGY_CONFIG) if topology else default_config()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--racks", type=int, default=10)
    parser.add_argument("--nodes-per-rack", type=int, default=16)
    parser.add_argument("--gangs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    size = (args.racks, args.nodes_per_rack, args.gangs, args.seed)
    with_topology = build(*size, topology=True)
    without = build(*size, topology=False)
    rows = (
        ("muster, topology", quality(with_topology, muster(with_topology, topology=True))),
        ("muster, no topology", quality(without, muster(without, topology=False))),
        ("first fit", quality(without, first_fit(without))),
    )
    print(
        f"{args.racks} racks x {args.nodes_per_rack} nodes ({CPU} cpu), partly full; "
        f"{args.gangs} gangs of 4-24 one-cpu pods"
    )
    print(f"{'placement':>20} {'placed':>7} {'one rack':>9} {'one zone':>9} {'racks/gang':>11}")
    for label, q in rows:
        print(
            f"{label:>20} {q.placed:>7} {q.one_rack:>9.0%} {q.one_zone:>9.0%} "
            f"{q.racks_per_gang:>11.2f}"
        )


if __name__ == "__main__":
    main()
