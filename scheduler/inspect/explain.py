"""`muster explain podgroup NS/NAME` and `muster explain pod NS/NAME`: why a PodGroup (or
a pod's group) waits or where it runs, in the words of one scheduler session over the
cluster as it stands: admission, placement with per-reason figures, what happens to it if it
is partly bound, the gangs ahead of it in its queue, who holds the room it lacks, and where
each member is. Read-only.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from typing import Any

import yaml

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.gang_state import PLACED_STATUSES
from scheduler.api.job import JobInfo
from scheduler.api.names import GROUP, GROUP_NAME_ANNOTATION, GROUPING_RULE_ANNOTATION
from scheduler.api.native import GROUP as NATIVE_GROUP
from scheduler.api.native import PODGROUP_RESOURCE, describe_group, native_key
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.reasons import (
    PARTLY_BOUND_COMPLETED,
    PARTLY_BOUND_HOLDING,
    PARTLY_BOUND_UNDO_REFUSED,
    PARTLY_BOUND_UNDOING,
    PARTLY_BOUND_UNDONE,
)
from scheduler.api.resources import Resource, describe
from scheduler.api.snapshot import shadow_key
from scheduler.api.subgroups import split
from scheduler.api.task import TaskInfo
from scheduler.api.timestamps import format_rfc3339
from scheduler.api.verdicts import Completion
from scheduler.cache.world import World
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.cycle import close_cycle, open_cycle
from scheduler.framework.decisions import Evict, HeldRoom, SessionResult
from scheduler.inspect.cluster import (
    Observed,
    Options,
    Session,
    add_cluster_arguments,
    context_namespace,
    observe,
    run_session,
)
from scheduler.inspect.config import EVICTING_ACTIONS, Configuration
from scheduler.inspect.figures import ReasonFigure, amount, figures
from scheduler.inspect.room import Room, otherwise_fitting_nodes, room
from scheduler.inspect.scale_up import scale_up_document, scale_up_lines, scale_up_of
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


def subgroup_entries(job: JobInfo) -> list[dict[str, Any]]:
    """Each subgroup of the gang's subGroupPolicy: its policy, how many of its pods are
    placed of its subGroupSize, whether it is placed or waits, and why it waits."""
    groups, _ = split(job.subgroup_policies, job.tasks.values())
    return [
        {
            "policy": group.policy.label,
            "subgroup": group.name,
            "placed": group.placed(PLACED_STATUSES),
            "subGroupSize": group.policy.size,
            "verdict": "placed" if group.whole(PLACED_STATUSES) else "waits",
            "why": ""
            if group.whole(PLACED_STATUSES)
            else job.subgroup_waits.get(group.name, "not tried in this session"),
        }
        for group in groups
    ]


def subgroup_lines(job: JobInfo) -> list[str]:
    """The Subgroups section: per policy its counts, then each subgroup and why it waits."""
    entries = subgroup_entries(job)
    lines = ["", "Subgroups:"]
    for policy in job.subgroup_policies:
        mine = [e for e in entries if e["policy"] == policy.label]
        whole = sum(1 for e in mine if e["verdict"] == "placed")
        lines.append(
            f"  {policy.label}: {whole} of {len(mine)} subgroups of {policy.size} pods placed, "
            f"minSubGroups {policy.min_subgroups}"
        )
        for entry in mine:
            placed = f"{entry['placed']}/{entry['subGroupSize']} pods placed"
            why = f": {entry['why']}" if entry["why"] else ""
            lines.append(f"    {entry['subgroup']}: {entry['verdict']} ({placed}){why}")
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
        "holding": _holding_document(session.result, key),
        "partlyBound": _completion_document(session, key),
        "scaleUp": scale_up_document(scale_up_of(session.result, key)),
        "verdict": verdict(view, session.result),
    }
    job = session.snapshot.jobs.get(key)
    if job is not None and job.subgroup_policies:
        document["subgroups"] = subgroup_entries(job)
    if pod_lines is not None:
        document["pod"] = [line for line in pod_lines if line]
    return document


# What each PartlyBound reason means for what happens next.
_COMPLETION_OUTCOMES = {
    PARTLY_BOUND_COMPLETED: "completed now, on the room that is left",
    PARTLY_BOUND_HOLDING: "held for: the room its missing members need is kept from every "
    "other gang",
    PARTLY_BOUND_UNDOING: "undone now: its bound members are evicted",
    PARTLY_BOUND_UNDO_REFUSED: "its undo was refused; held for, and tried again after a backoff",
    PARTLY_BOUND_UNDONE: "past its time with nothing to undo (its placed members finished): "
    "no longer held for, still placed first",
}


def completion_of(session: Session, key: str) -> Completion | None:
    """What the session did about the gang if it is partly bound (api/gang_state.py)."""
    job = session.snapshot.jobs.get(key)
    return job.completion if job is not None else None


def completion_lines(session: Session, key: str) -> list[str]:
    """A partly bound gang: since when, what the session does about it, and when it is
    undone if it cannot be completed by then (its PartlyBound condition, under Placement,
    says why)."""
    verdict = completion_of(session, key)
    if verdict is None:
        return []
    since = format_rfc3339(verdict.since) if verdict.since is not None else "a time unknown"
    lines = ["", f"Partly bound (some members bound since {since}, the gang not yet whole):"]
    lines.append(f"  {_COMPLETION_OUTCOMES.get(verdict.reason, verdict.reason)}")
    if verdict.reason in (PARTLY_BOUND_HOLDING, PARTLY_BOUND_UNDO_REFUSED):
        lines.append(f"  undone at {format_rfc3339(verdict.deadline)} unless complete by then")
    return lines


def _completion_document(session: Session, key: str) -> dict[str, Any] | None:
    verdict = completion_of(session, key)
    if verdict is None:
        return None
    return {
        "since": format_rfc3339(verdict.since) if verdict.since is not None else None,
        "undoneAt": format_rfc3339(verdict.deadline),
        "reason": verdict.reason,
        "message": verdict.message,
    }


def _evictions_for(result: SessionResult, key: str) -> list[Evict]:
    # preempt and reclaim name the gang they evict for as "... {key} (priority N) ..."; an
    # undo evicts the gang's own members, as a group named for it.
    return [
        e
        for e in result.evictions
        if f" {key} (priority " in e.reason or (e.undoes and e.preemptor == key)
    ]


def held_room(result: SessionResult, key: str) -> HeldRoom | None:
    """The room the session held for the gang (it starves, or an autoscaler provisioned
    capacity for it), if any."""
    return next((room for room in result.holds if room.job == key), None)


def holding_lines(result: SessionResult, key: str) -> list[str]:
    """What the session holds for a gang, node by node (framework/holds.py)."""
    room = held_room(result, key)
    if room is None:
        return []
    if room.kind == "provisioned":
        title = f"Holding provisioned capacity (since {format_rfc3339(room.since)}):"
    elif room.kind == "partly-bound":
        title = (
            f"Holding for its missing members (partly bound since {format_rfc3339(room.since)}):"
        )
    else:
        title = f"Holding (starving since {format_rfc3339(room.since)}):"
    lines = ["", title]
    lines += [f"  {node}: {describe(amount)}" for node, amount in sorted(room.nodes.items())]
    if not room.nodes:
        lines.append("  nothing free yet on the nodes it waits for")
    return lines


def _holding_document(result: SessionResult, key: str) -> dict[str, Any] | None:
    room = held_room(result, key)
    if room is None:
        return None
    return {
        "kind": room.kind,
        "since": format_rfc3339(room.since),
        "nodes": {node: amount.to_list() for node, amount in sorted(room.nodes.items())},
    }


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


# Which PodGroups a kind names: Volcano's (its short name pg, or its resource), the native
# ones (podgroups.scheduling.k8s.io), or whichever exists by the name asked (plain
# podgroup(s), as kubectl reads it: both existing is a question to ask again, qualified).
VOLCANO_KINDS = ("pg", f"podgroups.{GROUP}", f"podgroup.{GROUP}")
NATIVE_KINDS = (PODGROUP_RESOURCE, f"podgroup.{NATIVE_GROUP}")
EITHER_KINDS = ("podgroup", "podgroups")
PODGROUP_KINDS = (*EITHER_KINDS, *VOLCANO_KINDS, *NATIVE_KINDS)
POD_KINDS = ("pod", "pods", "po")


def object_key(args: argparse.Namespace, options: Options) -> str | None:
    """namespace/name of the object asked about; None (said on stderr) when the name and
    -n disagree."""
    namespace, slash, name = args.name.rpartition("/")
    if not slash:
        return f"{args.namespace or context_namespace(options)}/{name}"
    if args.namespace and args.namespace != namespace:
        print(
            f"muster explain: {args.name} names namespace {namespace!r} but -n says "
            f"{args.namespace!r}; give one of them",
            file=sys.stderr,
        )
        return None
    return f"{namespace}/{name}"


@dataclass(frozen=True)
class PodAnswer:
    """Which group a pod of ours belongs to, and where the session leaves it."""

    group: str
    lines: list[str]
    waits: bool


def pod_answer(observed: Observed, session: Session, key: str) -> PodAnswer | str:
    """The pod's group and place; or, as a string, why it cannot be explained as ours."""
    namespace, _, name = key.partition("/")
    pod = next(
        (
            p
            for p in observed.objects.pods
            if p.metadata.namespace == namespace and p.metadata.name == name
        ),
        None,
    )
    if pod is None:
        return f"pod {key} not found"
    names = observed.world.scheduler_names
    if pod.spec.scheduler_name not in names:
        return (
            f"pod {key} is not muster's: its spec.schedulerName is "
            f"{pod.spec.scheduler_name!r} and muster serves {', '.join(sorted(names))} "
            "(pass --scheduler-name if the scheduler serves more); `kubectl describe pod` "
            "shows what its scheduler says"
        )
    try:
        task = TaskInfo.from_pod(pod)
    except InvalidObject as error:
        return f"pod {key} cannot be scheduled by muster as written: {error}"
    # the key the World files it under: its PodGroup's, else its one-pod group's
    group = task.job or shadow_key(task)
    job = session.snapshot.jobs.get(group)
    where = describe_group(group)
    if group == shadow_key(task):
        where = f"no PodGroup: it is its own one-pod group {group}"
    role = f" (role {task.role})" if task.role else ""
    lines = [f"Pod {key}: member of {where}{role}"]
    if task.ignored_group:
        lines.append(
            f"  its spec.schedulingGroup names {PODGROUP_RESOURCE} {task.ignored_group}, "
            "which muster does not use: the annotation scheduling.k8s.io/group-name wins"
        )
    if job is None:
        owner = f" muster controller makes it for the pod's owner (uid {task.owner_uid})"
        made = task.owner_uid and not _annotated(pod) and not pod.spec.scheduling_group
        lines.append(
            f"  waits: {describe_group(group)} does not exist; the scheduler places no member "
            f"of a group it cannot see.{owner if made else ''}"
        )
        return PodAnswer(group, lines, waits=True)
    placed = member_nodes(session, group).get(name)
    pending = pod_messages(session.result, group).get(name)
    waits = False
    if placed is not None:
        node, status = placed
        if status in ("Allocated", "Pipelined", "Binding"):
            lines.append(f"  this session places it on {node} ({status})")
        else:
            lines.append(f"  on node {node} ({status})")
    elif pending is not None:
        lines.append(f"  waits: {pending}")
        waits = True
    else:
        current = job.tasks.get(task.uid)
        status = current.status.value if current is not None else task.status.value
        lines.append(f"  {status}: the session does not place it")
        waits = status == "Pending"
    lines.append("")
    return PodAnswer(group, lines, waits)


def podgroup_key(kind: str, key: str, observed: Observed) -> str:
    """The gang key of the PodGroup namespace/name that `kind` names: Volcano's, the
    native one, or for a plain podgroup whichever of the two exists; raises ValueError
    (its message for the user) when both do."""
    namespace, _, name = key.partition("/")
    native = native_key(namespace, name)
    if kind in VOLCANO_KINDS:
        return key
    if kind in NATIVE_KINDS:
        return native
    volcano_exists = any(
        g.metadata.namespace == namespace and g.metadata.name == name
        for g in observed.objects.podgroups
    )
    native_exists = native in observed.world.native_podgroups
    if volcano_exists and native_exists:
        raise ValueError(
            f"both a PodGroup {key} of Volcano's API and a {PODGROUP_RESOURCE} {key} exist; "
            f"ask for one by its qualified kind: `muster explain pg {key}` or "
            f"`muster explain {PODGROUP_RESOURCE} {key}`"
        )
    return native if native_exists else key


def grouping_rule(observed: Observed, key: str) -> str | None:
    """The rule `muster controller` made the PodGroup by (its annotation), None for a
    PodGroup it did not make."""
    namespace, _, name = key.partition("/")
    for group in observed.objects.podgroups:
        if group.metadata.namespace == namespace and group.metadata.name == name:
            return group.metadata.annotations.get(GROUPING_RULE_ANNOTATION)
    return None


def _annotated(pod: wire.Pod) -> bool:
    return bool(pod.metadata.annotations.get(GROUP_NAME_ANNOTATION))


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
