"""`muster explain podgroup NS/NAME`: why a PodGroup waits (or where it runs), in the words
of one scheduler session over the cluster as it stands: admission, placement, the gangs
ahead of it in its queue, and where each member is. Read-only.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any

from scheduler.api.job import JobInfo, PodGroupPhase
from scheduler.api.resources import Resource
from scheduler.cache.world import World
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.session import Session as FrameworkSession
from scheduler.inspect.cluster import (
    Options,
    Session,
    add_cluster_arguments,
    context_namespace,
    observe,
    run_session,
)
from scheduler.inspect.views import (
    GroupView,
    QueueView,
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
    session = FrameworkSession(snapshot, config, PLUGINS)
    ahead = [
        other
        for other in snapshot.jobs.values()
        if other.key != key
        and other.queue == job.queue
        and other.phase in WAITING_PHASES
        and session.compare_jobs(other, job) < 0
    ]
    ahead.sort(key=functools.cmp_to_key(session.compare_jobs))
    session.close()
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


def explain_text(
    view: GroupView,
    queue: QueueView | None,
    session: Session,
    world: World,
    ahead: list[tuple[str, str, str]],
) -> str:
    """The report, section by section; every reason is the session's own."""
    key = view.key
    lines = [
        f"PodGroup {key}: {view.phase}, {view.placed}/{view.min_member} members placed "
        f"({view.members} pods), queue {view.queue}",
        "",
        "Admission:",
    ]
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
    # preempt and reclaim name the gang they evict for as "... {key} (priority N) ..."
    evictions = [e for e in session.result.evictions if f" {key} (priority " in e.reason]
    for eviction in evictions:
        lines.append(
            f"  evicts {eviction.namespace}/{eviction.name} on {eviction.node}: {eviction.reason}"
        )
    if verdict(view, session.result) == "waits":
        lines += ["", f"Ahead of it in queue {view.queue}:"]
        lines += [f"  {k} ({phase}): {reason or '-'}" for k, phase, reason in ahead] or ["  none"]
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
        "explain", help="why a PodGroup waits, in the words of one scheduler session"
    )
    parser.add_argument("kind", choices=("podgroup", "podgroups", "pg"), help="what to explain")
    parser.add_argument("name", help="NAMESPACE/NAME, or NAME with -n")
    parser.add_argument("-n", "--namespace", help="the PodGroup's namespace")
    add_cluster_arguments(parser)
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Entry point of `muster explain`: 0 when the PodGroup runs or would run, 1 when it
    waits, 2 when it cannot be explained."""
    options = Options.from_args(args)
    namespace, slash, name = args.name.rpartition("/")
    if not slash:
        namespace = args.namespace or context_namespace(options)
    elif args.namespace and args.namespace != namespace:
        print(
            f"muster explain: {args.name} names namespace {namespace!r} but -n says "
            f"{args.namespace!r}; give one of them",
            file=sys.stderr,
        )
        return 2
    key = f"{namespace}/{name}"
    observed = observe(options, "explain")
    if observed is None:
        return 2
    world, config = observed
    session = run_session(world, config)
    views = {v.key: v for v in group_views(session, world)}
    view = views.get(key)
    if view is None:
        print(f"muster explain: PodGroup {key} not found", file=sys.stderr)
        return 2
    queue = next((q for q in queue_views(session) if q.name == view.queue), None)
    ahead = []
    for job in gangs_ahead(world, config, key, session.now):
        other = views.get(job.key)
        reason = other.waiting_reason if other is not None else ""
        ahead.append((job.key, job.phase.value, reason))
    print(explain_text(view, queue, session, world, ahead))
    return 0 if verdict(view, session.result) != "waits" else 1
