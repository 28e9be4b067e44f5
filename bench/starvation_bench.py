"""Sharing over time: a big gang under a stream of small ones, with and without holding.

    python bench/starvation_bench.py [--waiting-time 60] [--minutes 10] [--seed 1]
                                     [--holding-gangs 1]

Replays two workloads through the scheduling engine on a simulated clock (a session every
0.5 s; binds land at once; a pod runs for its duration, then finishes), once with
starving gangs holding room (the default) and once with holding turned off (`sla`
argument holdResources: false), and prints, for each:

- stream: 4 nodes x 4 cpu; a gang of 2 x 1 cpu every 0.5 s, each running 3 s; a gang
  of 16 x 1 cpu at 4 s. The big gang's wait (or "never" within the run), the small
  gangs' mean and 95th-percentile wait, and the cpu-seconds held idle for the big gang;
- mixed: 16 nodes x 8 cpu; gangs of 2 to 64 x 1 cpu arriving at random (seeded) to keep
  the cluster busy, each running 10 to 60 s. Per size class, the mean and the longest
  wait; the utilization of the cluster over the run; the cpu-seconds held idle.

"Utilization lost to holding" is the cpu-seconds held (free, kept for a starving gang)
over the cluster's cpu-seconds, and the drop in utilization against holding off.
"""

from __future__ import annotations

import argparse
import random
import statistics
from dataclasses import dataclass, field

from scheduler.api.job import JobInfo
from scheduler.api.node import NodeInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.queue import QueueInfo
from scheduler.api.resources import Resource
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.api.timestamps import format_rfc3339
from scheduler.engine import load_config, schedule
from scheduler.framework.config import DEFAULT_CONFIG_YAML, SchedulerConfig

TICK = 0.5
START = 1_800_000_000.0
GIB = 2**30


def config(waiting_time: float, hold: bool, holding_gangs: int = 1) -> SchedulerConfig:
    """The default config with the sla plugin's waiting time, holding on or off, and how
    many gangs hold at once."""
    sla = (
        "  - name: sla\n"
        f"    arguments: {{sla-waiting-time: {waiting_time}, holdResources: {str(hold).lower()}, "
        f"holdingGangs: {holding_gangs}}}\n"
    )
    first_tier_end = "  - name: conformance\n"
    return load_config(DEFAULT_CONFIG_YAML.replace(first_tier_end, first_tier_end + sla, 1))


@dataclass
class Gang:
    """One gang of the trace: when it comes, its size, how long its pods run."""

    name: str
    arrives: float
    size: int
    runs: float
    placed: float | None = None
    ends: float | None = None


@dataclass
class Run:
    """What one replay measured."""

    gangs: list[Gang]
    cpu_seconds: float
    used_cpu_seconds: float = 0.0
    held_cpu_seconds: float = 0.0
    placements: dict[str, float] = field(default_factory=dict)

    def wait(self, gang: Gang) -> float | None:
        return None if gang.placed is None else gang.placed - gang.arrives


def replay(gangs: list[Gang], nodes: int, cpu: int, seconds: float, cfg: SchedulerConfig) -> Run:
    """Run the trace through the engine for `seconds` of simulated time."""
    run = Run(gangs, cpu_seconds=nodes * cpu * seconds)
    pending = sorted(gangs, key=lambda g: g.arrives)
    arrived: list[Gang] = []
    now = 0.0
    while now < seconds:
        while pending and pending[0].arrives <= now:
            arrived.append(pending.pop(0))
        live = [g for g in arrived if g.ends is None or g.ends > now]
        snap = _snapshot(live, nodes, cpu, now)
        result = schedule(snap, cfg, copy=False)
        placed = {bind.job.partition("/")[2] for bind in result.binds}
        for gang in live:
            if gang.name in placed and gang.placed is None:
                gang.placed = now
                gang.ends = now + gang.runs
        running = sum(g.size for g in live if g.placed is not None and (g.ends or 0) > now)
        run.used_cpu_seconds += running * TICK
        held = sum(amount.cpu for room in result.holds for amount in room.nodes.values())
        run.held_cpu_seconds += held / 1000 * TICK
        now += TICK
    return run


def _snapshot(live: list[Gang], nodes: int, cpu: int, now: float) -> ClusterSnapshot:
    infos = {
        f"n{i}": NodeInfo(f"n{i}", Resource(cpu * 1000, 64 * GIB), max_pods=110)
        for i in range(nodes)
    }
    snap = ClusterSnapshot(nodes=infos, queues={"default": QueueInfo("default")})
    snap.now = START + now
    cursor = 0
    for gang in live:
        created = format_rfc3339(START + gang.arrives)
        running = gang.placed is not None
        job = JobInfo(
            namespace="bench",
            name=gang.name,
            uid=gang.name,
            min_member=gang.size,
            phase=PodGroupPhase.RUNNING if running else PodGroupPhase.INQUEUE,
            creation_timestamp=created,
        )
        for index in range(gang.size):
            task = TaskInfo(
                uid=f"{gang.name}-{index}",
                namespace="bench",
                name=f"{gang.name}-{index}",
                request=Resource(1000, GIB),
                job=job.key,
                scheduler_name="muster",
                creation_timestamp=created,
            )
            if running:
                # Placed pods keep their room wherever there is some (the replay does not
                # track nodes between sessions; every node is alike).
                node = _room_on(infos, cursor)
                cursor += 1
                task.status = TaskStatus.RUNNING
                task.node_name = node.name
                node.add_task(task)
            job.add_task(task)
        snap.jobs[job.key] = job
    return snap


def _room_on(nodes: dict[str, NodeInfo], cursor: int) -> NodeInfo:
    ordered = sorted(nodes.values(), key=lambda n: n.name)
    for offset in range(len(ordered)):
        node = ordered[(cursor + offset) % len(ordered)]
        if node.idle.cpu >= 1000:
            return node
    return ordered[cursor % len(ordered)]


def stream_trace(seconds: float) -> list[Gang]:
    """Gangs of 2 every 0.5 s (3 s each) and one of 16 at 4 s."""
    gangs = [Gang(f"small-{i}", i * 0.5, 2, 3.0) for i in range(int(seconds / 0.5))]
    gangs.append(Gang("big", 4.0, 16, 3.0))
    return gangs


def mixed_trace(seconds: float, seed: int, cpu_total: int) -> list[Gang]:
    """Gangs of 2-64 arriving at random, sized to keep the cluster about 1.3x busy."""
    rng = random.Random(seed)
    sizes = [2, 2, 2, 4, 4, 8, 8, 16, 32, 64]
    gangs: list[Gang] = []
    now = 0.0
    index = 0
    while now < seconds:
        size = rng.choice(sizes)
        runs = rng.uniform(10, 60)
        gangs.append(Gang(f"g{index}-{size}", now, size, runs))
        index += 1
        # cpu-seconds arriving per second about 1.3x the cluster's cpu
        now += size * runs / (1.3 * cpu_total) * rng.expovariate(1.0)
    return gangs


def _fmt(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f}s"


def report_stream(waiting_time: float, holding_gangs: int) -> None:
    seconds = 90.0
    print(f"stream: 4 nodes x 4 cpu, {seconds:.0f} s, waiting time {waiting_time:g} s")
    for hold in (True, False):
        run = replay(
            stream_trace(seconds), 4, 4, seconds, config(waiting_time, hold, holding_gangs)
        )
        big = next(g for g in run.gangs if g.name == "big")
        small = [w for g in run.gangs if g.name != "big" if (w := run.wait(g)) is not None]
        unplaced = sum(
            1
            for g in run.gangs
            if g.name != "big" and g.placed is None and g.arrives < seconds - 10
        )
        print(
            f"  holding {'on ' if hold else 'off'}: big gang waits {_fmt(run.wait(big))}; "
            f"small gangs wait {statistics.mean(small):.2f}s mean, "
            f"{sorted(small)[int(0.95 * (len(small) - 1))]:.2f}s p95 ({unplaced} not placed); "
            f"utilization {run.used_cpu_seconds / run.cpu_seconds:.1%}, "
            f"held idle {run.held_cpu_seconds:.0f} cpu-s "
            f"({run.held_cpu_seconds / run.cpu_seconds:.1%})"
        )


def report_mixed(waiting_time: float, minutes: float, seed: int, holding_gangs: int) -> None:
    seconds = minutes * 60
    nodes, cpu = 16, 8
    print(
        f"mixed: {nodes} nodes x {cpu} cpu, {minutes:g} min, seed {seed}, "
        f"waiting time {waiting_time:g} s"
    )
    for hold in (True, False):
        trace = mixed_trace(seconds * 0.8, seed, nodes * cpu)
        run = replay(trace, nodes, cpu, seconds, config(waiting_time, hold, holding_gangs))
        print(
            f"  holding {'on ' if hold else 'off'}: utilization "
            f"{run.used_cpu_seconds / run.cpu_seconds:.1%}, held idle "
            f"{run.held_cpu_seconds:.0f} cpu-s ({run.held_cpu_seconds / run.cpu_seconds:.1%})"
        )
        for size in sorted({g.size for g in trace}):
            of_size = [g for g in trace if g.size == size]
            waits = [w for g in of_size if (w := run.wait(g)) is not None]
            never = len(of_size) - len(waits)
            longest = max(waits) if waits else None
            mean = statistics.mean(waits) if waits else None
            print(
                f"    size {size:>2}: {len(of_size):>3} gangs, wait mean {_fmt(mean)}, "
                f"longest {_fmt(longest)}, {never} never placed"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waiting-time", type=float, default=60.0)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--holding-gangs", type=int, default=1)
    args = parser.parse_args()
    report_stream(args.waiting_time, args.holding_gangs)
    report_mixed(args.waiting_time, args.minutes, args.seed, args.holding_gangs)


if __name__ == "__main__":
    main()
