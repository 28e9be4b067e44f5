"""What must hold whatever happens, checked over sim's audit records (pure functions, no I/O).

Every function takes the audit records (decoded audit.k8s.io/v1 Events, in `seq` order, as
GET /sim/audit serves them) and answers the violations it finds, each naming the audit
records that show it. The records carry the object each write stored (responseObject), so
the cluster's state at any moment is a replay of them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scheduler.api.quantity import InvalidQuantity, parse_quantity

Record = dict[str, Any]
Obj = dict[str, Any]

GROUP_NAME = "scheduling.k8s.io/group-name"
EVENT_TYPE = "sim.muster.dev/event-type"
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
TERMINAL = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class Violation:
    """One broken invariant: which, what was seen, and the audit records (seq) that show it."""

    invariant: str
    message: str
    seqs: tuple[int, ...] = field(default=())


# ---------------------------------------------------------------- record helpers


def succeeded(record: Record) -> bool:
    """Whether the write was committed (2xx)."""
    return 200 <= int(record.get("responseStatus", {}).get("code", 0)) < 300


def ref(record: Record) -> Obj:
    """The record's objectRef."""
    return dict(record.get("objectRef") or {})


def writer(record: Record) -> str:
    """Who wrote: the user, and the token's credential-id when it has one (one per replica)."""
    user = record.get("user") or {}
    credential = (user.get("extra") or {}).get(CREDENTIAL_ID) or [""]
    name = str(user.get("username", ""))
    return f"{name}[{credential[0]}]" if credential[0] else name


def event_type(record: Record) -> str:
    """ADDED, MODIFIED or DELETED: the store event the write made ("" for a refused one)."""
    return str((record.get("annotations") or {}).get(EVENT_TYPE, ""))


def group_of(pod: Obj) -> str:
    """The PodGroup a pod belongs to, as muster reads it: its group annotation, else the
    one muster's controller makes for its controlling owner (podgroup-<owner uid>), else ""."""
    meta = pod.get("metadata") or {}
    group = (meta.get("annotations") or {}).get(GROUP_NAME)
    if group:
        return str(group)
    owner = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)
    return f"podgroup-{owner['uid']}" if owner and owner.get("uid") else ""


def is_bind(record: Record) -> bool:
    """A committed pods/binding."""
    r = ref(record)
    return r.get("resource") == "pods" and r.get("subresource") == "binding" and succeeded(record)


def stored(record: Record) -> Obj | None:
    """The object the write stored (None for refused writes and Metadata-level records)."""
    obj = record.get("responseObject")
    return obj if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict) else None


def of_resource(records: Iterable[Record], resource: str) -> Iterable[tuple[Record, Obj]]:
    """Committed writes of one resource (plural) that stored an object, with the object."""
    for record in records:
        if ref(record).get("resource") != resource or not succeeded(record):
            continue
        obj = stored(record)
        if obj is not None:
            yield record, obj


def pod_requests(pod: Obj) -> dict[str, Fraction]:
    """What a pod asks of a node: max(sum of containers, each init container), its pod-level
    requests (cpu, memory, hugepages) in their place where it names them, plus overhead."""
    spec = pod.get("spec") or {}

    def of(container: Obj) -> dict[str, Fraction]:
        resources = container.get("resources") or {}
        # requests default to limits (the API server's defaulting does it on create)
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        out: dict[str, Fraction] = {}
        for name, value in merged.items():
            try:
                out[name] = parse_quantity(value)
            except InvalidQuantity:
                continue
        return out

    total: dict[str, Fraction] = defaultdict(Fraction)
    for container in spec.get("containers") or []:
        for name, value in of(container).items():
            total[name] += value
    for container in spec.get("initContainers") or []:
        for name, value in of(container).items():
            total[name] = max(total[name], value)
    pod_level = (spec.get("resources") or {}).get("requests") or {}
    for name, value in pod_level.items():
        if name in ("cpu", "memory") or name.startswith("hugepages-"):
            try:
                total[name] = parse_quantity(value)
            except InvalidQuantity:
                continue
    for name, value in (spec.get("overhead") or {}).items():
        try:
            total[name] += parse_quantity(value)
        except InvalidQuantity:
            continue
    total["pods"] += 1
    return dict(total)


def allocatable(node: Obj) -> dict[str, Fraction]:
    """A node's status.allocatable (capacity when allocatable is absent)."""
    status = node.get("status") or {}
    raw = status.get("allocatable") or status.get("capacity") or {}
    out: dict[str, Fraction] = {}
    for name, value in raw.items():
        try:
            out[name] = parse_quantity(value)
        except InvalidQuantity:
            continue
    return out


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return str(meta.get("namespace") or ""), str(meta.get("name"))


def _uid(obj: Obj) -> str:
    return str(obj["metadata"].get("uid") or "")


def slim(record: Record) -> Record:
    """The record with only what the invariants read of its object (a soak keeps millions)."""
    obj = record.get("responseObject")
    if not isinstance(obj, dict):
        return record
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    annotations = meta.get("annotations") or {}
    kept_meta = {k: meta[k] for k in ("name", "namespace", "uid", "deletionTimestamp") if k in meta}
    if GROUP_NAME in annotations:
        kept_meta["annotations"] = {GROUP_NAME: annotations[GROUP_NAME]}
    owners = [o for o in meta.get("ownerReferences") or [] if o.get("controller")]
    if owners:
        kept_meta["ownerReferences"] = [{"uid": owners[0].get("uid"), "controller": True}]
    kept_spec = {
        k: spec[k]
        for k in (
            "nodeName",
            "schedulerName",
            "overhead",
            "minMember",
            "holderIdentity",
            "leaseDurationSeconds",
        )
        if k in spec
    }
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            kept_spec[key] = [
                {"resources": c.get("resources") or {}} for c in spec[key] if isinstance(c, dict)
            ]
    kept_status = {
        k: status[k] for k in ("phase", "allocatable", "capacity", "state") if k in status
    }
    out = dict(record)
    out["responseObject"] = {"metadata": kept_meta, "spec": kept_spec, "status": kept_status}
    out.pop("requestObject", None)
    if is_bind(record):
        out["requestObject"] = {"target": (record.get("requestObject") or {}).get("target")}
    return out


# ---------------------------------------------------------------- invariants


def double_binds(records: Sequence[Record]) -> list[Violation]:
    """Never a pod bound twice, nor to two nodes (a pod is its uid: a re-created pod is new)."""
    binds: dict[str, list[tuple[int, str]]] = defaultdict(list)
    names: dict[str, str] = {}
    for record in records:
        if not is_bind(record):
            continue
        obj = stored(record)
        uid = _uid(obj) if obj is not None else str(ref(record).get("uid") or "")
        node = str(((record.get("requestObject") or {}).get("target") or {}).get("name", ""))
        binds[uid].append((int(record["seq"]), node))
        names[uid] = f"{ref(record).get('namespace')}/{ref(record).get('name')}"
    return [
        Violation(
            "pod bound twice",
            f"pod {names[uid]} (uid {uid}) bound {len(seen)} times, to "
            f"{', '.join(node for _, node in seen)}",
            tuple(seq for seq, _ in seen),
        )
        for uid, seen in binds.items()
        if len(seen) > 1
    ]


def node_overcommit(records: Sequence[Record]) -> list[Violation]:
    """Never a node given more than its allocatable (terminal and removed pods free room)."""
    nodes: dict[str, dict[str, Fraction]] = {}
    pods: dict[str, Obj] = {}
    on_node: dict[str, set[str]] = defaultdict(set)
    where: dict[str, str] = {}
    found: list[Violation] = []
    for record in records:
        r = ref(record)
        obj = stored(record)
        if not succeeded(record) or obj is None:
            continue
        if r.get("resource") == "nodes" and not r.get("apiGroup"):
            name = str(obj["metadata"]["name"])
            if event_type(record) == "DELETED":
                nodes.pop(name, None)
            else:
                nodes[name] = allocatable(obj)
            continue
        if r.get("resource") != "pods" or r.get("apiGroup"):
            continue
        uid = _uid(obj)
        pods[uid] = obj
        gone = event_type(record) == "DELETED"
        phase = (obj.get("status") or {}).get("phase")
        node = (obj.get("spec") or {}).get("nodeName")
        if gone or phase in TERMINAL or not node:
            if uid in where:
                on_node[where.pop(uid)].discard(uid)
            continue
        if where.get(uid) == node:
            continue
        where[uid] = node
        on_node[node].add(uid)
        room = nodes.get(node)
        if room is None:
            continue
        used: dict[str, Fraction] = defaultdict(Fraction)
        for other in on_node[node]:
            for resource, value in pod_requests(pods[other]).items():
                used[resource] += value
        over = [
            f"{resource} {float(value):g} > {float(room.get(resource, Fraction(0))):g}"
            for resource, value in sorted(used.items())
            if value > 0 and value > room.get(resource, Fraction(0))
        ]
        if over:
            found.append(
                Violation(
                    "node over allocatable",
                    f"node {node} after binding {_key(obj)[0]}/{_key(obj)[1]}: {'; '.join(over)}",
                    (int(record["seq"]),),
                )
            )
    return found


@dataclass
class _Term:
    holder: str
    writer: str
    start: float
    renewed: float
    duration: float
    seq: int


# What each write of the leader's role is, by its resource (and subresource): every write
# the scheduler makes as the leader, fenced at sending (scheduler/effects/fence.py).
LEADER_WRITES = {
    ("pods", "binding"): "bind",
    ("pods", "eviction"): "eviction",
    ("pods", "status"): "pod condition",
    ("pods", ""): "pod annotation",
    ("podgroups", ""): "podgroup status",
    ("queues", "status"): "queue status",
    ("hypernodes", "status"): "hypernode status",
    ("events", ""): "event",
    ("provisioningrequests", ""): "scale-up request",
    ("podtemplates", ""): "scale-up request",
    ("persistentvolumeclaims", ""): "pre-bind write",
    ("persistentvolumes", ""): "pre-bind write",
}


def leader_write(record: Record) -> str:
    """What write of the leader's role a committed request is ("bind", "eviction", "event",
    "podgroup status"...; "write" for one this table does not name), or "" for none: a
    refused write, a dry run, a write sim made itself or as a cascade, the Lease (the
    election itself), a queue's creation (the default queue, which every replica makes at
    start when it is missing, as the controller does)."""
    r = ref(record)
    uri = str(record.get("requestURI") or "")
    if not uri or "dryRun=" in uri or not succeeded(record):
        return ""
    resource = str(r.get("resource") or "")
    subresource = str(r.get("subresource") or "")
    if resource == "leases" or (resource == "queues" and record.get("verb") == "create"):
        return ""
    return LEADER_WRITES.get((resource, subresource), "write")


def _queue_state(obj: Obj | None) -> str:
    return str(((obj or {}).get("status") or {}).get("state") or "")


def lease_exclusive(
    records: Sequence[Record], namespace: str, name: str, binders: Iterable[str] = ()
) -> list[Violation]:
    """Only the holder of the leader Lease writes as the leader, and only within its term.

    The terms come from the audited Lease writes: a committed write naming holder H, by
    writer W, at time t makes H (as W) the holder until t + leaseDurationSeconds or the
    next write. A write of the leader's role (leader_write: binds, evictions, status writes,
    pod conditions and annotations, events, scale-up and PreBind writes) by W' at time t' is
    a violation unless the Lease's latest write before it names W' and t' is within its term.
    A bind counts whoever made it; the other writes count when a scheduler replica made them
    (`binders`, the writers expected to take part in the election, and every writer of the
    Lease): the controller and users write PodGroups, pods and events of their own. A
    replica's writes after it released the Lease count too: its shutdown sends what it had
    queued before the release (docs/design.md, Leader election). One write is exempt by
    what it writes: a queue's status setting a state where there was none, which is the
    default queue's creation at a replica's start (it cannot overwrite anyone's state).
    """
    found: list[Violation] = []
    term: _Term | None = None
    wrote_lease: set[str] = set()
    expected = set(binders)
    states: dict[str, str] = {}
    for record in records:
        r = ref(record)
        if (
            r.get("resource") == "leases"
            and r.get("namespace") == namespace
            and r.get("name") == name
            and succeeded(record)
        ):
            obj = stored(record)
            if obj is None:
                continue
            spec = obj.get("spec") or {}
            holder = str(spec.get("holderIdentity") or "")
            who = writer(record)
            wrote_lease.add(who)
            at = float(record["time"])
            duration = float(spec.get("leaseDurationSeconds") or 0)
            if event_type(record) == "DELETED" or not holder:
                term = None
            elif term is not None and term.holder == holder and term.writer == who:
                term.renewed, term.duration, term.seq = at, duration, int(record["seq"])
            else:
                term = _Term(holder, who, at, at, duration, int(record["seq"]))
            continue
        kind = leader_write(record)
        if r.get("resource") == "queues" and succeeded(record):
            before = states.get(str(r.get("name")), "")
            states[str(r.get("name"))] = _queue_state(stored(record))
            if kind and not before and states[str(r.get("name"))]:
                continue  # the default queue's state, set at a replica's start
        if not kind:
            continue
        who = writer(record)
        if kind != "bind" and who not in expected and who not in wrote_lease:
            continue
        lease = f"lease {namespace}/{name}"
        violation = _outside_term(record, kind, who, term, wrote_lease | expected, lease)
        if violation is not None:
            found.append(violation)
    return found


def _outside_term(
    record: Record, kind: str, who: str, term: _Term | None, replicas: set[str], lease: str
) -> Violation | None:
    """The violation a leader's write by `who` is under the Lease's `term`, if any."""
    r = ref(record)
    at = float(record["time"])
    seq = int(record["seq"])
    invariant = f"{kind} outside lease term"
    what = f"{kind} of {'/'.join(str(p) for p in (r.get('namespace'), r.get('name')) if p)}"
    if term is None:
        if who not in replicas:
            return None
        return Violation(invariant, f"{who} sent a {what} while nobody held {lease}", (seq,))
    if term.writer != who:
        return Violation(
            invariant,
            f"{who} sent a {what} while {term.writer} (holder {term.holder}) held {lease} "
            f"since record {term.seq}",
            (term.seq, seq),
        )
    if at > term.renewed + term.duration:
        return Violation(
            invariant,
            f"{who} sent a {what} {at - term.renewed:.1f}s after its last renewal of {lease} "
            f"(duration {term.duration:g}s)",
            (term.seq, seq),
        )
    return None


def longest_bind_after_renewal(records: Sequence[Record], namespace: str, name: str) -> float:
    """The longest a Lease holder bound after its own last committed renewal (seconds; 0
    with no bind). A leader that cannot renew stops binding at its renew deadline, well
    before its lease can have run out in another replica's eyes: this shows how long after."""
    longest = 0.0
    renewed: dict[str, float] = {}
    for record in records:
        r = ref(record)
        if (
            r.get("resource") == "leases"
            and r.get("namespace") == namespace
            and r.get("name") == name
            and succeeded(record)
        ):
            renewed[writer(record)] = float(record["time"])
        elif is_bind(record):
            last = renewed.get(writer(record))
            if last is not None:
                longest = max(longest, float(record["time"]) - last)
    return longest


@dataclass
class _Gang:
    min_member: int = 0
    raised_after_bind: bool = False
    disturbed: bool = False
    first_bind: int = 0
    # When minMember was last raised (time), to tell a raise the deciding session saw.
    raised_at: float = 0.0


# A session decides on a snapshot up to this old when its binds go out (the session's own
# time and the watch's lag, under this machine's load): a minMember raised this soon before
# a gang's first bind raced with the decision, as a raise just after it would.
DECISION_LAG = 2.0


def half_placed_gangs(
    records: Sequence[Record], quiescent: Iterable[float], scheduler_writers: Iterable[str]
) -> list[Violation]:
    """At no quiescent moment a gang with 0 < placed < minMember.

    Placed: bound and not being deleted, or Succeeded (Volcano counts it ready). Gangs that
    something other than the scheduler disturbed (a member deleted by another writer, lost
    with its node, or failed; minMember raised after the gang was placed, or within
    DECISION_LAG before, while the deciding session ran on the older spec) are left out: the
    scheduler can neither undo nor prevent those. Evictions by the scheduler do count.
    """
    schedulers = set(scheduler_writers)
    moments = sorted(quiescent)
    found: list[Violation] = []
    gangs: dict[tuple[str, str], _Gang] = defaultdict(_Gang)
    pods: dict[str, Obj] = {}
    members: dict[tuple[str, str], set[str]] = defaultdict(set)
    index = 0
    last_seq = 0

    def check(moment: float) -> None:
        for key, gang in sorted(gangs.items()):
            if gang.disturbed or gang.raised_after_bind or gang.min_member <= 0:
                continue
            placed = [
                uid
                for uid in members[key]
                if uid in pods
                and (
                    (pods[uid].get("status") or {}).get("phase") == "Succeeded"
                    or (
                        (pods[uid].get("spec") or {}).get("nodeName")
                        and not pods[uid]["metadata"].get("deletionTimestamp")
                    )
                )
            ]
            if 0 < len(placed) < gang.min_member:
                found.append(
                    Violation(
                        "gang half placed",
                        f"gang {key[0]}/{key[1]}: {len(placed)} of minMember "
                        f"{gang.min_member} placed at quiescent moment {moment:.3f} "
                        f"(after record {last_seq})",
                        (last_seq,),
                    )
                )

    for record in records:
        at = float(record["time"])
        while index < len(moments) and moments[index] < at:
            check(moments[index])
            index += 1
        last_seq = int(record["seq"])
        r = ref(record)
        obj = stored(record)
        if not succeeded(record) or obj is None:
            continue
        if r.get("resource") == "podgroups":
            gang = gangs[_key(obj)]
            if event_type(record) == "DELETED":
                gang.disturbed = True
                continue
            new_min = int((obj.get("spec") or {}).get("minMember") or 0)
            if gang.first_bind and new_min > gang.min_member:
                gang.raised_after_bind = True
            if new_min > gang.min_member and gang.min_member:
                gang.raised_at = at
            gang.min_member = new_min
            continue
        if r.get("resource") != "pods" or r.get("apiGroup"):
            continue
        group = group_of(obj)
        if not group:
            continue
        key = (str(obj["metadata"].get("namespace") or ""), str(group))
        uid = _uid(obj)
        members[key].add(uid)
        gang = gangs[key]
        if is_bind(record) and not gang.first_bind:
            gang.first_bind = last_seq
            if gang.raised_at and at - gang.raised_at < DECISION_LAG:
                gang.raised_after_bind = True
        if event_type(record) == "DELETED":
            pods.pop(uid, None)
        else:
            pods[uid] = obj
        if (obj.get("status") or {}).get("phase") == "Failed":
            gang.disturbed = True
        deleting = r.get("subresource") is None and record.get("verb") in (
            "delete",
            "deletecollection",
        )
        if deleting and record.get("requestURI") and writer(record) not in schedulers:
            gang.disturbed = True
    while index < len(moments):
        check(moments[index])
        index += 1
    return found


def unexplained_pending(
    pods: Iterable[Obj], scheduler_names: Iterable[str] = ("muster",)
) -> list[Violation]:
    """Every pod of the scheduler is bound, finished, or says why not (PodScheduled False)."""
    names = set(scheduler_names)
    found: list[Violation] = []
    for pod in pods:
        spec = pod.get("spec") or {}
        if spec.get("schedulerName", "default-scheduler") not in names:
            continue
        if spec.get("nodeName") or pod["metadata"].get("deletionTimestamp"):
            continue
        if (pod.get("status") or {}).get("phase") in TERMINAL:
            continue
        conditions = (pod.get("status") or {}).get("conditions") or []
        why = [
            c
            for c in conditions
            if c.get("type") == "PodScheduled"
            and c.get("status") == "False"
            and c.get("reason")
            and c.get("message")
        ]
        if not why:
            namespace, name = _key(pod)
            found.append(
                Violation(
                    "pod pending without a reason",
                    f"pod {namespace}/{name} is unbound and has no PodScheduled=False "
                    "condition with a reason and message",
                )
            )
    return found


def _active(start: float, until: float, pauses: Sequence[tuple[float, float]]) -> float:
    """Seconds of [start, until] outside every pause (a time no leader could act, or no
    write land); pauses that overlap count once."""
    paused = 0.0
    reached = start
    for a, b in sorted(pauses):
        a, b = max(a, reached), min(b, until)
        if b > a:
            paused += b - a
            reached = b
    return until - start - paused


def stale_podgroup_status(
    records: Sequence[Record],
    end: float,
    lag: float,
    pauses: Sequence[tuple[float, float]] = (),
) -> list[Violation]:
    """A PodGroup with minMember pods Running says Running within `lag` seconds (up to `end`).

    Replayed from the audit, a single ordered record, so pods and PodGroups are seen at the
    same moments; the status writer may lag its pods by a session and a write, not more.
    Time in `pauses` (no leader: a leader lost, its successor not yet binding; or no write
    could land: the API server restarting) does not count.
    """
    running: dict[tuple[str, str], set[str]] = defaultdict(set)
    minimum: dict[tuple[str, str], int] = {}
    phases: dict[tuple[str, str], str | None] = {}
    since: dict[tuple[str, str], tuple[float, int]] = {}
    found: list[Violation] = []

    def settle(key: tuple[str, str], at: float, seq: int) -> None:
        wanted = minimum.get(key, 0)
        stale = wanted >= 1 and len(running[key]) >= wanted and phases.get(key) != "Running"
        if stale:
            since.setdefault(key, (at, seq))
            return
        start = since.pop(key, None)
        if start is not None and _active(start[0], at, pauses) > lag:
            report(key, start, at)

    def report(key: tuple[str, str], start: tuple[float, int], until: float) -> None:
        found.append(
            Violation(
                "podgroup status stale",
                f"podgroup {key[0]}/{key[1]} had {len(running[key])} pods Running (minMember "
                f"{minimum.get(key)}) but said phase {phases.get(key)!r} for "
                f"{_active(start[0], until, pauses):.1f}s with a leader from record {start[1]}",
                (start[1],),
            )
        )

    for record in records:
        r = ref(record)
        obj = stored(record)
        if obj is None or not succeeded(record):
            continue
        at, seq = float(record["time"]), int(record["seq"])
        if r.get("resource") == "podgroups":
            key = _key(obj)
            if event_type(record) == "DELETED":
                since.pop(key, None)
                minimum.pop(key, None)
                continue
            value = (obj.get("spec") or {}).get("minMember")
            minimum[key] = value if isinstance(value, int) and not isinstance(value, bool) else 0
            phases[key] = (obj.get("status") or {}).get("phase")
            settle(key, at, seq)
        elif r.get("resource") == "pods" and not r.get("apiGroup"):
            group = group_of(obj)
            if not group:
                continue
            key = (str(obj["metadata"].get("namespace") or ""), str(group))
            is_running = (
                (obj.get("status") or {}).get("phase") == "Running"
                and not obj["metadata"].get("deletionTimestamp")
                and event_type(record) != "DELETED"
            )
            (running[key].add if is_running else running[key].discard)(_uid(obj))
            settle(key, at, seq)
    for key, start in list(since.items()):
        if _active(start[0], end, pauses) > lag:
            report(key, start, end)
    return found


def stuck_inqueue(
    records: Sequence[Record],
    end: float,
    timeout: float,
    pauses: Sequence[tuple[float, float]] = (),
) -> list[Violation]:
    """No PodGroup Inqueue, without starting, for longer than `timeout` seconds (up to `end`).

    Started: a member is bound. The Inqueue timeout releases the room a job that never
    started holds; a started job (say one whose minMember was raised past its pods) may
    rightly stay Inqueue.
    """
    since: dict[tuple[str, str], tuple[float, int]] = {}
    inqueue: set[tuple[str, str]] = set()
    bound: dict[tuple[str, str], set[str]] = defaultdict(set)
    found: list[Violation] = []

    def over(key: tuple[str, str], until: float) -> None:
        start, seq = since.pop(key)
        waited = _active(start, until, pauses)
        if waited > timeout:
            found.append(
                Violation(
                    "podgroup stuck Inqueue",
                    f"podgroup {key[0]}/{key[1]} Inqueue, not started, for {waited:.1f}s "
                    f"(timeout {timeout:g}s) from record {seq}",
                    (seq,),
                )
            )

    for record in records:
        r = ref(record)
        obj = stored(record)
        if obj is None or not succeeded(record):
            continue
        at = float(record["time"])
        if r.get("resource") == "pods" and not r.get("apiGroup"):
            group = group_of(obj)
            if not group:
                continue
            key = (str(obj["metadata"].get("namespace") or ""), str(group))
            on_node = (obj.get("spec") or {}).get("nodeName") and event_type(record) != "DELETED"
            if on_node:
                bound[key].add(_uid(obj))
                if key in since:
                    since.pop(key)  # it started: its Inqueue stint ends here
            else:
                bound[key].discard(_uid(obj))
                if key in inqueue and not bound[key] and key not in since:
                    since[key] = (at, int(record["seq"]))
            continue
        if r.get("resource") != "podgroups":
            continue
        key = _key(obj)
        phase = (obj.get("status") or {}).get("phase")
        if phase == "Inqueue" and event_type(record) != "DELETED":
            inqueue.add(key)
            if not bound[key]:
                since.setdefault(key, (at, int(record["seq"])))
        else:
            inqueue.discard(key)
            if key in since:
                over(key, at)
    for key in list(since):
        over(key, end)
    return found


def eviction_ping_pong(
    records: Sequence[Record], scheduler_writers: Iterable[str], window: float = 60.0
) -> list[Violation]:
    """No two gangs evicting each other back and forth.

    An eviction (the scheduler deleting a bound pod, or a pods/eviction) of a pod of gang X
    on node N benefits gang Y when a pod of Y is bound to N within `window` seconds after. X
    evicted for Y and then Y evicted for X, within the window, is ping-pong.
    """
    schedulers = set(scheduler_writers)
    pods: dict[str, Obj] = {}
    # (node, time, evicted gang, seq) waiting for their beneficiary
    open_evictions: list[tuple[str, float, tuple[str, str], int]] = []
    benefits: list[tuple[tuple[str, str], tuple[str, str], float, int]] = []
    found: list[Violation] = []

    def gang_of(obj: Obj) -> tuple[str, str]:
        group = group_of(obj) or ("pod:" + str(obj["metadata"].get("name")))
        return str(obj["metadata"].get("namespace") or ""), str(group)

    for record in records:
        r = ref(record)
        if r.get("resource") != "pods" or r.get("apiGroup") or not succeeded(record):
            continue
        obj = stored(record)
        at = float(record["time"])
        seq = int(record["seq"])
        evicting = record.get("requestURI") and (
            r.get("subresource") == "eviction"
            or (
                not r.get("subresource")
                and record.get("verb") == "delete"
                and writer(record) in schedulers
            )
        )
        if evicting:
            uid = str(r.get("uid") or (_uid(obj) if obj else ""))
            victim = pods.get(uid) or obj
            if victim is not None and (victim.get("spec") or {}).get("nodeName"):
                open_evictions.append((victim["spec"]["nodeName"], at, gang_of(victim), seq))
        if obj is not None:
            pods[_uid(obj)] = obj
        if is_bind(record) and obj is not None:
            node = (obj.get("spec") or {}).get("nodeName")
            gang = gang_of(obj)
            still: list[tuple[str, float, tuple[str, str], int]] = []
            for entry in open_evictions:
                e_node, e_at, e_gang, e_seq = entry
                if at - e_at > window:
                    continue
                if e_node == node and e_gang != gang:
                    benefits.append((e_gang, gang, at, e_seq))
                    continue
                still.append(entry)
            open_evictions = still
    seen: set[tuple[tuple[str, str], tuple[str, str]]] = set()
    for index, (victim, winner, at, seq) in enumerate(benefits):
        for victim2, winner2, at2, seq2 in benefits[index + 1 :]:
            if at2 - at > window:
                break
            pair = (victim, winner)
            if victim2 == winner and winner2 == victim and pair not in seen:
                seen.add(pair)
                found.append(
                    Violation(
                        "eviction ping-pong",
                        f"{victim[0]}/{victim[1]} evicted for {winner[1]} (record {seq}), then "
                        f"{winner[1]} evicted for {victim[1]} (record {seq2})",
                        (seq, seq2),
                    )
                )
    return found
