"""`muster status`: queues and PodGroups as the scheduler's session sees them, with why each
waiting PodGroup waits (its Unschedulable condition's message), like `kubectl get`; with
--watch, again whenever a PodGroup or Queue changes, like `kubectl get -w`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass
from typing import Any

import yaml

from scheduler.api import paths
from scheduler.api.native import GROUP as NATIVE_GROUP
from scheduler.api.native import PODGROUPS as NATIVE_PODGROUPS
from scheduler.api.native import VERSIONS as NATIVE_VERSIONS
from scheduler.api.podgroup import PodGroupPhase
from scheduler.inspect.cluster import (
    PODGROUPS,
    QUEUES,
    Observed,
    Options,
    add_cluster_arguments,
    answer_or_exit,
    build_world,
    connection,
    context_namespace,
    list_cluster,
    observe,
    run_session,
)
from scheduler.inspect.config import fallback_notice
from scheduler.inspect.views import (
    GroupView,
    QueueView,
    age,
    group_views,
    queue_views,
    short,
    table,
)
from scheduler.kube.client import KubeClient
from scheduler.kube.discovery import served_version

PHASES = [phase.value.lower() for phase in PodGroupPhase]
NATIVE_SINGULAR = f"podgroup.{NATIVE_GROUP}"


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
        # A native PodGroup by its resource, as `kubectl get -o name` names it: Volcano's and
        # a native one of the same name are two rows.
        name = f"{NATIVE_SINGULAR}/{g.name}" if g.native else g.name
        row = [name, g.phase, f"{g.placed}/{g.min_member}", g.queue, age(g.created, now)]
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
    parser.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="print the tables again each time a PodGroup or Queue changes (Ctrl-C stops)",
    )
    parser.set_defaults(func=main)


@dataclass(frozen=True)
class Frame:
    """What one read of the cluster prints, and what tells two reads apart (the ages,
    which move every second, left out)."""

    text: str
    content: str


def render(
    args: argparse.Namespace, options: Options, observed: Observed, now: float | None = None
) -> Frame:
    """The tables (or the document) of one session (at `now`) over what was read."""
    world = observed.world
    session = run_session(world, observed.configuration.config, now)
    groups = group_views(session, world)
    namespace = ""
    if not args.all_namespaces:
        namespace = args.namespace or context_namespace(options)
        groups = [g for g in groups if g.namespace == namespace]
    queues = queue_views(session)
    doc = document(queues, groups, session.now)
    doc["configuration"] = observed.configuration.as_dict()
    content = json.dumps(
        {**doc, "podgroups": [{**g, "age": None} for g in doc["podgroups"]]}, sort_keys=True
    )
    if args.output == "json":
        return Frame(json.dumps(doc, indent=2), content)
    if args.output == "yaml":
        return Frame(yaml.safe_dump(doc, sort_keys=False).rstrip("\n"), content)
    wide = args.output == "wide"
    lines = [queue_table(queues, wide=wide), ""]
    if groups:
        lines.append(
            podgroup_table(groups, session.now, all_namespaces=args.all_namespaces, wide=wide)
        )
    else:
        lines.append("No PodGroups found" + ("" if args.all_namespaces else f" in {namespace}."))
    return Frame("\n".join(lines), content)


def main(args: argparse.Namespace) -> int:
    """Entry point of `muster status`."""
    options = Options.from_args(args)
    if args.watch:
        return watch(args, options)
    observed = observe(options, "status")
    if isinstance(observed, int):
        return observed
    print(render(args, options, observed).text)
    return 0


# How often --watch asks whether a PodGroup or Queue changed (two small GETs).
WATCH_INTERVAL = 1.0


async def collection_versions(client: KubeClient, native: str = "") -> tuple[str, ...]:
    """The resourceVersion of the PodGroup and Queue lists (and of the native PodGroups at
    `native`, their path when served): when none moved, nothing the tables show has changed."""
    versions = []
    for path in (PODGROUPS, QUEUES, native):
        if not path:
            continue
        body = await client.get_json(path, params={"limit": "1"})
        versions.append(str(((body or {}).get("metadata") or {}).get("resourceVersion", "")))
    return tuple(versions)


async def _watch(args: argparse.Namespace, options: Options) -> int:
    shown = ""
    said: str | None = None
    seen: tuple[str, ...] | None = None
    async with KubeClient(connection(options)) as client:
        served = await served_version(client, NATIVE_GROUP, NATIVE_PODGROUPS, NATIVE_VERSIONS)
        native = paths.native_collection(served, NATIVE_PODGROUPS) if served else ""
        while True:
            versions = await collection_versions(client, native)
            if versions != seen:
                seen = versions
                configuration = await options.configuration(client)
                objects = await list_cluster(client)
                notice = fallback_notice(configuration)
                if notice is not None and notice != said:
                    print(f"muster status: {notice}", file=sys.stderr, flush=True)
                said = notice
                world = build_world(objects, options.scheduler_names, options.default_queue)
                frame = render(args, options, Observed(world, objects, configuration))
                if frame.content != shown:
                    # kubectl get -w style: a new frame only when something changed;
                    # a blank line ends each, so a reader knows the frame is whole
                    print(frame.text, end="\n\n", flush=True)
                    shown = frame.content
            await asyncio.sleep(WATCH_INTERVAL)


def watch(args: argparse.Namespace, options: Options) -> int:
    """`muster status --watch`: print the tables, then again on every change, until
    interrupted (exit 0, as kubectl get -w) or the cluster cannot be read (exit 2)."""
    try:
        return answer_or_exit("status", lambda: asyncio.run(_watch(args, options)))
    except KeyboardInterrupt:
        return 0
