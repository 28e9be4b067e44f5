"""A digest of every decision one session makes over the bench's workloads, to tell whether
two builds of muster decide alike (plain Python against the mypyc-compiled core:
`make test-compiled` diffs their outputs).

    python bench/decisions.py [--expect plain|compiled]

Each line: the workload, how many binds, PodGroup updates and pod messages it made, and a
digest of all of them (binds, evictions, statuses, messages, attempts, admissions). The
workloads: gangs of 8 on an empty cluster; a fifth of them with pod-to-pod constraints;
gangs of 16 on a cluster too small for all; rack-constrained topology gangs; queues held
by capacity limits; and a cluster half full of running pods of lower priority that a
backlog of higher priority preempts. --expect refuses to run on any other core than the one
named (a diff of two runs that both ran plain Python would prove nothing).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from typing import Any

import msgspec
import session_bench

from scheduler.api.job import JobInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.resources import Resource
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskStatus
from scheduler.build import core
from scheduler.engine import default_config, load_config, schedule
from scheduler.framework.config import DEFAULT_CONFIG_YAML, SchedulerConfig
from scheduler.framework.decisions import SessionResult

GIB = 2**30
# Every list of decisions a session returns, in a fixed order.
DECIDED = (
    "binds",
    "evictions",
    "podgroups",
    "unschedulable",
    "queues",
    "invalid",
    "field_warnings",
    "nominated",
    "admitted",
    "dequeued",
)
PREEMPTING_CONFIG = DEFAULT_CONFIG_YAML.replace(
    'actions: "enqueue, allocate, backfill"', 'actions: "enqueue, allocate, preempt, backfill"'
)


def digest(result: SessionResult) -> str:
    """A digest of what the session decided (not of its timings)."""
    state = hashlib.sha256()
    for name in DECIDED:
        state.update(msgspec.json.encode(getattr(result, name), enc_hook=repr))
    state.update(msgspec.json.encode(sorted(result.attempts.items())))
    state.update(str(result.pending).encode())
    return state.hexdigest()[:16]


def capacity_limited() -> tuple[ClusterSnapshot, SchedulerConfig]:
    """Gangs of 8 whose queues' capability holds 3,000 pods each (capacity plugin)."""
    snapshot = session_bench.build(10_000, 1_000, 8)
    for queue in snapshot.queues.values():
        queue.capability = Resource(3_000 * 1_000, 6_000 * GIB)
    return snapshot, load_config(DEFAULT_CONFIG_YAML.replace("proportion", "capacity"))


def preempting() -> tuple[ClusterSnapshot, SchedulerConfig]:
    """Half the cluster's room held by running gangs of priority 0 with spare members; a
    backlog of priority 100 that needs some of it, with preempt among the actions."""
    snapshot = session_bench.build(6_000, 200, 8)
    for job in snapshot.jobs.values():
        job.priority = 100
        for task in job.tasks.values():
            task.priority = 100
    nodes = list(snapshot.nodes.values())
    for group in range(200):
        job = JobInfo(
            namespace="bench",
            name=f"running-{group:04d}",
            uid=f"running-uid-{group}",
            queue="default",
            # Half of each is spare: preempt evicts spare members, never below minMember.
            min_member=4,
            phase=PodGroupPhase.RUNNING,
            creation_timestamp="2025-12-31T00:00:00Z",
        )
        snapshot.jobs[job.key] = job
        for member in range(8):
            node = nodes[(group * 8 + member) % len(nodes)]
            task = session_bench.bench_pod(
                job,
                f"running-{group}-{member}",
                f"running-{group:04d}-{member}",
                Resource(2_000, 4 * GIB),
                node_name=node.name,
                status=TaskStatus.RUNNING,
            )
            job.add_task(task)
            node.add_task(task)
    return snapshot, load_config(PREEMPTING_CONFIG)


def workloads() -> list[tuple[str, ClusterSnapshot, SchedulerConfig]]:
    """The workloads, each with the config it runs under."""
    config = default_config()
    return [
        ("plain", session_bench.build(10_000, 1_000, 8), config),
        ("mixed", session_bench.build(10_000, 1_000, 8, 0.2), config),
        ("gangs-16", session_bench.build(12_000, 300, 16), config),
        (
            "topology",
            session_bench.build(10_000, 1_000, 8, racks=True, constrained=0.5),
            session_bench.topology_config(),
        ),
        ("capacity", *capacity_limited()),
        ("preempt", *preempting()),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--expect",
        choices=("plain", "compiled"),
        help="refuse to run unless the core runs so (scheduler/build.py)",
    )
    args = parser.parse_args()
    kind = core()
    if args.expect and kind != args.expect:
        sys.exit(f"decisions: the core runs {kind}, not {args.expect} (`make compiled` builds it)")
    print(f"core: {kind}", file=sys.stderr)
    for label, snapshot, config in workloads():
        result: Any = schedule(snapshot, config)
        print(
            f"{label:>10} binds={len(result.binds):>6} evictions={len(result.evictions):>5} "
            f"podgroups={len(result.podgroups):>5} messages={len(result.unschedulable):>5} "
            f"{digest(result)}"
        )


if __name__ == "__main__":
    main()
