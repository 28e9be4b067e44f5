"""`muster explain podgroup NS/NAME` and `muster explain pod NS/NAME`: why a PodGroup (or
a pod's group) waits or where it runs, in the words of one scheduler session over the
cluster as it stands: admission, placement with per-reason figures, what happens to it if it
is partly bound, the gangs ahead of it in its queue, who holds the room it lacks, and where
each member is. Read-only.

What it is asked about is explain_target.py; the sections on a partly bound gang, on held
room, on subgroups and on scale-up are partly_bound.py, holding.py, subgroups.py and
scale_up.py (whatif reads the last too).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

import yaml

from scheduler.api.job import JobInfo
from scheduler.api.native import describe_group
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.resources import Resource
from scheduler.cache.world import World
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.cycle import close_cycle, open_cycle
from scheduler.framework.decisions import Evict, SessionResult
from scheduler.inspect.cluster import (
    Options,
    Session,
    add_cluster_arguments,
    observe,
    run_session,
)
from scheduler.inspect.config import EVICTING_ACTIONS, Configuration
from scheduler.inspect.explain_target import (
    POD_KINDS,
    PODGROUP_KINDS,
    PodAnswer,
    grouping_rule,
    object_key,
    pod_answer,
    podgroup_key,
)
from scheduler.inspect.figures import ReasonFigure, amount, figures
from scheduler.inspect.holding import holding_document, holding_lines
from scheduler.inspect.partly_bound import completion_document, completion_lines
from scheduler.inspect.room import Room, otherwise_fitting_nodes, room
from scheduler.inspect.scale_up import scale_up_document, scale_up_lines, scale_up_of
from scheduler.inspect.subgroups import subgroup_entries, subgroup_lines
from scheduler.inspect.views import (
    GroupView,
    QueueView,
    device_words,
    group_view,
    group_views,
    member_nodes,
    pod_messages,
    queue_views,
    short,
    verdict,
)
from scheduler.plugins import PLUGINS

WAITING_PHASES = (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE)


def gangs_ahead(world: World, config: SchedulerConfig, key: str, now: float) -> list[JobInfo]:
    """The gangs of the same queue that are not running yet and that the scheduler's job
    order (its plugins', at the opening of a session) serves before this one."""
    snapshot = world.snapshot(now)
    job = snapshot.jobs.get(key)
    if job is None:
        return []
    cycle = open_cycle(snapshot, config, PLUGINS)
    session = cycle.session
    ahead = [
        other
        for other in snapshot.jobs.values()
        if other.key != key
        and other.queue == job.queue
        and other.phase in WAITING_PHASES
        and session.compare_jobs(other, job) < 0
    ]
    ahead.sort(key=session.job_key)
    close_cycle(cycle)
    return ahead


def cluster_free(world: World) -> Resource:
    """Allocatable minus what the pods on the nodes request, summed over the nodes."""
    free = Resource()
    for node in world.live.nodes.values():
        free.add(node.allocatable.clone().sub(node.used))
    return free


def amounts(resource: Resource, names: list[str]) -> str:
    """cpu and memory, and the other named dimensions, zeros included ("cpu=0,memory=1Gi")."""
    listed = resource.to_list()
    wanted = ["cpu", "memory", *(n for n in names if n not in ("cpu", "memory"))]
    return ",".join(f"{name}={listed.get(name, '0')}" for name in wanted)


def placement_figures(
    world: World, config: SchedulerConfig, session: Session, key: str
) -> list[tuple[list[str], list[ReasonFigure]]]:
    """Per distinct answer among the gang's pending pods: the pods, and the reasons of
    their message with node counts and, for resources, need and largest free."""
    job = session.snapshot.jobs.get(key)
    messages = pod_messages(session.result, key)
    if job is None or not messages:
        return []
    tasks = {t.name: t for t in job.tasks.values()}
    fresh = world.snapshot(session.now)
    ended = session.snapshot.nodes
    grouped: dict[tuple[ReasonFigure, ...], list[str]] = {}
    for pod, message in sorted(messages.items()):
        task = tasks.get(pod)
        if task is None:
            continue
        # largest free among the nodes that would take the pod but for room, as the
        # session left them
        admitted = otherwise_fitting_nodes(fresh, [task], config)
        found = figures(message, task, (ended[n.name] for n in admitted if n.name in ended))
        if found:
            grouped.setdefault(tuple(found), []).append(pod)
    return [(pods, list(found)) for found, pods in grouped.items()]


def lacking_resources(found: list[tuple[list[str], list[ReasonFigure]]]) -> list[str]:
    """The resources some pending pod lacks, in the order the reasons name them."""
    names: list[str] = []
    for _, reasons in found:
        names += [r.resource for r in reasons if r.resource and r.resource not in names]
    return names


def room_lines(found: Room) -> list[str]:
    """The "What would let it run" section."""
    lines = ["", "What would let it run:"]
    if not found.nodes:
        lines.append(
            "  no node would take its pods even with nothing running on it: see the reasons above"
        )
        return lines
    lines.append(
        f"  {len(found.nodes)} {'node' if len(found.nodes) == 1 else 'nodes'} would take "
        f"its pods but for room ({', '.join(found.nodes)}); "
        f"{', '.join(found.resources)} there is held by:"
    )
    lines += [f"    {h.line(found.resources)}" for h in found.holders] or ["    nobody"]
    if found.added:
        lines.append(
            f"  {' and '.join(found.added)} {'is' if len(found.added) == 1 else 'are'} not in "
            "the configured actions; with them added to it, this session"
        )
    else:
        lines.append(f"  {' and '.join(EVICTING_ACTIONS)} are configured; this session")
    if found.evictions:
        then = "would run" if found.would_run else "still waits"
        lines.append(f"  evicts {len(found.evictions)} pods for it, and then it {then}:")
        lines += [f"    {e.namespace}/{e.name} on {e.node}: {e.reason}" for e in found.evictions]
    else:
        lines.append("  evicts none of them for it")
    return lines


def explain_document(
    view: GroupView,
    queue: QueueView | None,
    session: Session,
    ahead: list[tuple[str, str, str]],
    *,
    configuration: Configuration | None = None,
    reasons: list[tuple[list[str], list[ReasonFigure]]] | None = None,
    room_found: Room | None = None,
    pod_lines: list[str] | None = None,
    rule: str | None = None,
) -> dict[str, Any]:
    """The report as one JSON/YAML document (-o json|yaml): the same findings as the text."""
    key = view.key
    waits = verdict(view, session.result) == "waits"
    evictions = _evictions_for(session.result, key)
    document: dict[str, Any] = {
        "podgroup": view.as_dict(session.now),
        "groupingRule": rule,
        "configuration": configuration.describe() if configuration is not None else None,
        "queue": queue.as_dict() if queue is not None else None,
        "placement": {
            "pods": dict(sorted(pod_messages(session.result, key).items())),
            "reasons": [
                {"pods": pods, "figures": [asdict(figure) for figure in found]}
                for pods, found in reasons or []
            ],
            "evictions": [_eviction(e) for e in evictions],
            "devices": dict(sorted(device_words(session.result, key).items())),
        },
        "ahead": [{"podgroup": k, "phase": phase, "reason": reason} for k, phase, reason in ahead]
        if waits
        else [],
        "wouldLetItRun": _room_document(room_found) if waits and room_found else None,
        "members": {
            pod: {"node": node, "status": status}
            for pod, (node, status) in sorted(member_nodes(session, key).items())
        },
        "holding": holding_document(session.result, key),
        "partlyBound": completion_document(session, key),
        "scaleUp": scale_up_document(scale_up_of(session.result, key)),
        "verdict": verdict(view, session.result),
    }
    job = session.snapshot.jobs.get(key)
    if job is not None and job.subgroup_policies:
        document["subgroups"] = subgroup_entries(job)
    if pod_lines is not None:
        document["pod"] = [line for line in pod_lines if line]
    return document


def _evictions_for(result: SessionResult, key: str) -> list[Evict]:
    # preempt and reclaim name the gang they evict for as "... {key} (priority N) ..."; an
    # undo evicts the gang's own members, as a group named for it.
    return [
        e
        for e in result.evictions
        if f" {key} (priority " in e.reason or (e.undoes and e.preemptor == key)
    ]


def _eviction(eviction: Evict) -> dict[str, str]:
    return {
        "pod": f"{eviction.namespace}/{eviction.name}",
        "node": eviction.node,
        "reason": eviction.reason,
    }


def _room_document(found: Room) -> dict[str, Any]:
    return {
        "nodes": found.nodes,
        "resources": found.resources,
        "holders": [
            {
                "name": h.key,
                "kind": h.kind,
                "queue": h.queue,
                "priority": h.priority,
                "held": {name: amount(name, h.held.get(name)) for name in found.resources},
                "nodes": h.nodes,
            }
            for h in found.holders
        ],
        "addedActions": found.added,
        "evictions": [_eviction(e) for e in found.evictions],
        "wouldRun": found.would_run,
    }


def explain_text(
    view: GroupView,
    queue: QueueView | None,
    session: Session,
    world: World,
    ahead: list[tuple[str, str, str]],
    *,
    configuration: Configuration | None = None,
    reasons: list[tuple[list[str], list[ReasonFigure]]] | None = None,
    room_found: Room | None = None,
    pod_lines: list[str] | None = None,
    rule: str | None = None,
) -> str:
    """The report, section by section; every reason is the session's own."""
    key = view.key
    lines = [*(pod_lines or [])]
    lines.append(
        f"{view.title}: {view.phase}, {view.placed}/{view.min_member} members placed "
        f"({view.members} pods), queue {view.queue}"
    )
    if rule:
        lines.append(f"made by muster controller: {rule}")
    if configuration is not None:
        lines.append(f"configuration: {configuration.describe()}")
    lines += ["", "Admission:"]
    if queue is None:
        lines.append(f"  queue {view.queue} does not exist")
    else:
        lines += [
            f"  queue {queue.name}: {queue.state}, weight {queue.weight}"
            + (f", parent {queue.parent}" if queue.parent else ""),
            f"    capability: {short(queue.capability)}",
            f"    deserved:   {short(queue.deserved)}",
            f"    allocated:  {short(queue.allocated)}",
        ]
    job = world.live.jobs.get(key)
    min_resources = job.min_resources if job is not None else None
    free = cluster_free(world)
    names = sorted(min_resources.names()) if min_resources is not None else []
    lines.append(
        f"  minResources: {short(min_resources) if min_resources is not None else 'not set'}"
        f" (cluster free now: {amounts(free, names)})"
    )
    admitted = view.condition("Admitted")
    if admitted is not None:
        lines.append(f"  Admitted={admitted.status} ({admitted.reason}): {admitted.message}")
    elif view.phase == PodGroupPhase.PENDING.value:
        lines.append("  not admitted")
    else:
        lines.append(f"  admitted ({view.phase})")
    lines += ["", "Placement:"]
    for condition in view.conditions:
        if condition.type == "Admitted":
            continue
        lines.append(
            f"  {condition.type}={condition.status} ({condition.reason}): {condition.message}"
        )
    messages = pod_messages(session.result, key)
    by_message: dict[str, list[str]] = {}
    for pod, message in sorted(messages.items()):
        by_message.setdefault(message, []).append(pod)
    for message, pods in by_message.items():
        lines.append(f"  {'pod' if len(pods) == 1 else 'pods'} {', '.join(pods)}: {message}")
    for pods, found in reasons or []:
        lines.append(f"  by reason, for {'pod' if len(pods) == 1 else 'pods'} {', '.join(pods)}:")
        lines += [f"    {figure.line()}" for figure in found]
    for pod, words in sorted(device_words(session.result, key).items()):
        lines.append(f"  devices, for pod {pod}:")
        lines += [f"    {line}" for line in words]
    for eviction in _evictions_for(session.result, key):
        lines.append(
            f"  evicts {eviction.namespace}/{eviction.name} on {eviction.node}: {eviction.reason}"
        )
    lines += completion_lines(session, key)
    lines += holding_lines(session.result, key)
    placed_job = session.snapshot.jobs.get(key)
    if placed_job is not None and placed_job.subgroup_policies:
        lines += subgroup_lines(placed_job)
    lines += scale_up_lines(scale_up_of(session.result, key))
    waits = verdict(view, session.result) == "waits"
    if waits:
        lines += ["", f"Ahead of it in queue {view.queue}:"]
        lines += [f"  {k} ({phase}): {reason or '-'}" for k, phase, reason in ahead] or ["  none"]
    if waits and room_found is not None:
        lines += room_lines(room_found)
    nodes = member_nodes(session, key)
    if nodes:
        lines += ["", "Members:"]
        for pod, (node, status) in sorted(nodes.items()):
            lines.append(f"  {pod}: {node} ({status})")
    lines += ["", f"Verdict: {verdict(view, session.result)}"]
    return "\n".join(lines)


def add_parser(subparsers: Any) -> None:
    """The `muster explain` subcommand."""
    parser = subparsers.add_parser(
        "explain", help="why a PodGroup or pod waits, in the words of one scheduler session"
    )
    parser.add_argument(
        "kind",
        choices=(*PODGROUP_KINDS, *POD_KINDS),
        metavar="KIND",
        help="what to explain: a PodGroup (pg or podgroups.scheduling.volcano.sh for "
        "Volcano's, podgroups.scheduling.k8s.io for Kubernetes' own, podgroup for whichever "
        "exists by that name), or a pod (its group, and which member it is)",
    )
    parser.add_argument("name", help="NAMESPACE/NAME, or NAME with -n")
    parser.add_argument("-n", "--namespace", help="the object's namespace")
    parser.add_argument("-o", "--output", choices=("json", "yaml"), help="a document, not text")
    add_cluster_arguments(parser)
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Entry point of `muster explain`: 0 when the PodGroup (the pod) runs or would run, 1
    when it waits, 2 when it cannot be explained (not found, or not muster's pod)."""
    options = Options.from_args(args)
    key = object_key(args, options)
    if key is None:
        return 2
    observed = observe(options, "explain")
    if isinstance(observed, int):
        return observed
    world, configuration = observed.world, observed.configuration
    config = configuration.config
    session = run_session(world, config)
    answer: PodAnswer | None = None
    if args.kind in POD_KINDS:
        found = pod_answer(observed, session, key)
        if isinstance(found, str):
            print(f"muster explain: {found}", file=sys.stderr)
            return 2
        answer = found
        key = answer.group
    else:
        try:
            key = podgroup_key(args.kind, key, observed)
        except ValueError as both:
            print(f"muster explain: {both}", file=sys.stderr)
            return 2
    updates = {u.key: u for u in session.result.podgroups}
    job = session.snapshot.jobs.get(key)
    if job is None:
        if answer is not None:
            print("\n".join(answer.lines).rstrip())
            return 1
        print(f"muster explain: {describe_group(key)} not found", file=sys.stderr)
        return 2
    view = group_view(job, updates.get(key), world.live.jobs.get(key))
    views = {v.key: v for v in group_views(session, world)}
    queue = next((q for q in queue_views(session) if q.name == view.queue), None)
    ahead = []
    for other_job in gangs_ahead(world, config, key, session.now):
        other = views.get(other_job.key)
        reason = other.waiting_reason if other is not None else ""
        ahead.append((other_job.key, other_job.phase.value, reason))
    reasons = placement_figures(world, config, session, key)
    lacking = lacking_resources(reasons)
    waits = verdict(view, session.result) == "waits"
    room_found = room(world, configuration, session, key, lacking) if waits and lacking else None
    findings: dict[str, Any] = {
        "configuration": configuration,
        "reasons": reasons,
        "room_found": room_found,
        "pod_lines": answer.lines if answer is not None else None,
        "rule": grouping_rule(observed, key),
    }
    output = getattr(args, "output", None)
    if output is None:
        print(explain_text(view, queue, session, world, ahead, **findings))
    else:
        document = explain_document(view, queue, session, ahead, **findings)
        print(
            json.dumps(document, indent=2)
            if output == "json"
            else yaml.safe_dump(document, sort_keys=False).rstrip("\n")
        )
    if answer is not None:
        return 1 if answer.waits else 0
    return 1 if waits else 0
