"""The `muster scheduler` command line: its flags, and the SchedulerOptions they make."""

from __future__ import annotations

import argparse
import asyncio
import re
from pathlib import Path
from typing import Any

from scheduler import gc_policy
from scheduler.api.names import DEFAULT_QUEUE, DEFAULT_SCHEDULER_NAME
from scheduler.api.partition import NodePartition, parse_node_selector
from scheduler.cache.wiring import LIST_PAGE_SIZE
from scheduler.logs import configure
from scheduler.process_options import (
    BIND_CONNECTIONS,
    BIND_DEPTH,
    FIRST_SESSION_PODS,
    SchedulerOptions,
)
from scheduler.server import SchedulerProcess

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m)?$")


def parse_duration(text: str) -> float:
    """Seconds from "1s", "200ms", "0.5" or "2m"."""
    match = _DURATION.match(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 1s or 200ms")
    value = float(match[1])
    unit = match[2] or "s"
    seconds = value / 1000 if unit == "ms" else value * 60 if unit == "m" else value
    if seconds <= 0:
        raise argparse.ArgumentTypeError("the schedule period must be more than 0")
    return seconds


def positive_int(text: str) -> int:
    """A whole number above 0, e.g. a page size."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number above 0")
    return value


def non_negative_int(text: str) -> int:
    """A whole number, 0 or more (0: no bound)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 0 or more")
    return value


def node_selector(text: str) -> NodePartition:
    """--node-selector's KEY=VALUE (api/partition.py)."""
    try:
        return parse_node_selector(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_parser(subparsers: Any) -> None:
    """The `muster scheduler` subcommand."""
    parser = subparsers.add_parser("scheduler", help="run the scheduler against an API server")
    parser.add_argument("--kubeconfig", help="kubeconfig file (in-cluster config when absent)")
    parser.add_argument(
        "--scheduler-name",
        action="append",
        dest="scheduler_names",
        help="a schedulerName to serve (repeatable; default muster; add volcano for KubeRay)",
    )
    parser.add_argument(
        "--claim-podgroups-without-pods",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="treat a PodGroup with no pods yet and no muster.dev/scheduler-name annotation "
        "as muster's (default on, as Volcano; turn off beside another scheduler that admits "
        "such PodGroups)",
    )
    parser.add_argument(
        "--scheduler-conf", type=Path, help="scheduler config YAML (reloaded on change)"
    )
    parser.add_argument("--schedule-period", type=parse_duration, default=1.0, help="default 1s")
    parser.add_argument("--default-queue", default=DEFAULT_QUEUE)
    parser.add_argument("--metrics-address", default=":8080")
    parser.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="elect one active replica through a Lease (default on)",
    )
    parser.add_argument("--lock-namespace", default="muster-system")
    parser.add_argument("--lock-name", default="muster-scheduler")
    parser.add_argument("--kube-api-qps", type=float, default=0.0, help="0 means unlimited")
    parser.add_argument("--kube-api-burst", type=int, default=100)
    parser.add_argument(
        "--list-page-size",
        type=positive_int,
        default=LIST_PAGE_SIZE,
        help=f"objects per page of the initial lists (default {LIST_PAGE_SIZE})",
    )
    parser.add_argument(
        "--bind-pipeline-depth",
        type=positive_int,
        default=BIND_DEPTH,
        help=f"binds in flight on each of the bind lane's {BIND_CONNECTIONS} connections "
        f"(default {BIND_DEPTH}; 1 for a proxy that does not take HTTP/1.1 pipelining)",
    )
    parser.add_argument(
        "--first-session-pods",
        type=non_negative_int,
        default=FIRST_SESSION_PODS,
        help="the pending pods the first session of a leader's term is offered at most, in "
        f"whole gangs, the rest going to the next session at once (default "
        f"{FIRST_SESSION_PODS}; 0: no bound)",
    )
    parser.add_argument(
        "--node-selector",
        type=node_selector,
        metavar="KEY=VALUE",
        help="own only the nodes and the queues labelled KEY=VALUE, and the gangs of those "
        "queues (one instance per node pool; give each its own --lock-name)",
    )
    parser.add_argument("--log-format", choices=("text", "json"), default="text")
    parser.add_argument("--log-level", default="info")
    parser.set_defaults(func=run_scheduler)


def options_from_args(args: argparse.Namespace) -> SchedulerOptions:
    """The process's options from the parsed flags (logging flags are not among them)."""
    return SchedulerOptions(
        kubeconfig=args.kubeconfig,
        scheduler_names=tuple(args.scheduler_names or [DEFAULT_SCHEDULER_NAME]),
        claim_podgroups_without_pods=args.claim_podgroups_without_pods,
        scheduler_conf=args.scheduler_conf,
        schedule_period=args.schedule_period,
        default_queue=args.default_queue,
        metrics_address=args.metrics_address,
        leader_elect=args.leader_elect,
        lock_namespace=args.lock_namespace,
        lock_name=args.lock_name,
        qps=args.kube_api_qps,
        burst=args.kube_api_burst,
        list_page_size=args.list_page_size,
        bind_depth=args.bind_pipeline_depth,
        first_session_pods=args.first_session_pods,
        partition=args.node_selector,
    )


def run_scheduler(args: argparse.Namespace) -> int:
    """Entry point of `muster scheduler`."""
    configure(args.log_format, args.log_level)
    options = options_from_args(args)
    gc_policy.tune()

    async def main() -> int:
        return await SchedulerProcess(options).run()

    return asyncio.run(main())
