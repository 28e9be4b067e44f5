"""One full scheduling session over a synthetic backlog: how long, and how it grows.

    python bench/session_bench.py [--pods 10000] [--nodes 1000] [--gang 8] [--repeat 3]

Prints the session time (snapshot clone + every action + status computation)
at the given size, at 2x pods and at 2x nodes. Target (docs/design.md): 10,000
pending pods in gangs of 8 on 1,000 nodes in at most 200 ms.
"""

from __future__ import annotations

import argparse
import statistics
import time

from scheduler.api.job import JobInfo, PodGroupPhase
from scheduler.api.node import NodeInfo
from scheduler.api.queue import QueueInfo
from scheduler.api.resources import Resource
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskInfo
from scheduler.engine import default_config, schedule

GIB = 2**30


def build(pods: int, nodes: int, gang: int) -> ClusterSnapshot:
    """Nodes of 32 cpu / 128Gi; gangs of 1-cpu / 2Gi pods over two queues, all pending."""
    snapshot = ClusterSnapshot()
    for index in range(nodes):
        name = f"node-{index:05d}"
        snapshot.nodes[name] = NodeInfo(name, Resource(32_000, 128 * GIB))
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
        for member in range(gang):
            job.add_task(
                TaskInfo(
                    uid=f"pod-uid-{group}-{member}",
                    namespace="bench",
                    name=f"pg-{group:06d}-{member}",
                    request=Resource(1000, 2 * GIB),
                    job=job.key,
                    scheduler_name="muster",
                )
            )
        snapshot.jobs[job.key] = job
    return snapshot


def measure(pods: int, nodes: int, gang: int, repeat: int) -> tuple[float, int]:
    """Median session seconds and pods bound, over `repeat` sessions on fresh clones."""
    snapshot = build(pods, nodes, gang)
    config = default_config()
    times = []
    bound = 0
    for _ in range(repeat):
        start = time.perf_counter()
        result = schedule(snapshot, config)
        times.append(time.perf_counter() - start)
        bound = len(result.binds)
    return statistics.median(times), bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--gang", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
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
