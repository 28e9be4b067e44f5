"""`muster status`: queues and PodGroups as the scheduler's session sees them, with why each
waiting PodGroup waits (its Unschedulable condition's message), like `kubectl get`."""

from __future__ import annotations

import argparse
import json
from typing import Any

import yaml

from scheduler.api.job import PodGroupPhase
from scheduler.inspect.cluster import (
    Options,
    add_cluster_arguments,
    context_namespace,
    observe,
    run_session,
)
from scheduler.inspect.views import (
    GroupView,
    QueueView,
    age,
    group_views,
    queue_views,
    short,
    table,
)

PHASES = [phase.value.lower() for phase in PodGroupPhase]


def queue_table(queues: list[QueueView], *, wide: bool = False) -> str:
    """The queues as columns."""
    header = ["NAME", "STATE", "WEIGHT", "PARENT", "ALLOCATED", "DESERVED", "SHARE", "PODGROUPS"]
    if wide:
        header.insert(6, "CAPABILITY")
    rows = []
    for q in queues:
        counts = ",".join(f"{p}={q.podgroups[p]}" for p in PHASES if q.podgroups.get(p))
        row = [
            q.name,
            q.state,
            str(q.weight),
            q.parent or "-",
            short(q.allocated),
            short(q.deserved),
            f"{q.share:.2f}" if q.share is not None else "-",
            counts or "-",
        ]
        if wide:
            row.insert(6, short(q.capability))
        rows.append(row)
    return table(header, rows)


def podgroup_table(
    groups: list[GroupView], now: float, *, all_namespaces: bool, wide: bool = False
) -> str:
    """The PodGroups as columns; REASON is the one line of why it waits."""
    header = ["NAME", "PHASE", "PLACED", "QUEUE", "AGE", "REASON"]
    if all_namespaces:
        header.insert(0, "NAMESPACE")
    if wide:
        header.insert(-1, "MEMBERS")
    rows = []
    for g in groups:
        row = [g.name, g.phase, f"{g.placed}/{g.min_member}", g.queue, age(g.created, now)]
        if all_namespaces:
            row.insert(0, g.namespace)
        if wide:
            row.append(str(g.members))
        reason = g.waiting_reason
        # One line: a table row must not wrap into the next one.
        row.append(reason if wide else _clip(reason))
        rows.append(row)
    return table(header, rows)


def _clip(text: str, width: int = 100) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."


def document(queues: list[QueueView], groups: list[GroupView], now: float) -> dict[str, Any]:
    """What -o json and -o yaml print."""
    return {
        "queues": [q.as_dict() for q in queues],
        "podgroups": [g.as_dict(now) for g in groups],
    }


def add_parser(subparsers: Any) -> None:
    """The `muster status` subcommand."""
    parser = subparsers.add_parser(
        "status", help="queues and PodGroups, and why each waiting PodGroup waits"
    )
    add_cluster_arguments(parser)
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", help="PodGroups of this namespace only")
    scope.add_argument(
        "-A", "--all-namespaces", action="store_true", help="PodGroups of every namespace"
    )
    parser.add_argument("-o", "--output", choices=("wide", "json", "yaml"))
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Entry point of `muster status`."""
    options = Options.from_args(args)
    observed = observe(options, "status")
    if observed is None:
        return 2
    world, config = observed
    session = run_session(world, config)
    groups = group_views(session, world)
    namespace = ""
    if not args.all_namespaces:
        namespace = args.namespace or context_namespace(options)
        groups = [g for g in groups if g.namespace == namespace]
    queues = queue_views(session)
    if args.output in ("json", "yaml"):
        doc = document(queues, groups, session.now)
        if args.output == "json":
            print(json.dumps(doc, indent=2))
        else:
            print(yaml.safe_dump(doc, sort_keys=False), end="")
        return 0
    wide = args.output == "wide"
    print(queue_table(queues, wide=wide))
    print()
    if groups:
        print(podgroup_table(groups, session.now, all_namespaces=args.all_namespaces, wide=wide))
    else:
        print("No PodGroups found" + ("" if args.all_namespaces else f" in {namespace}."))
    return 0
