"""One trial: start the cluster, stream work and faults for a while, drain, check invariants."""

from __future__ import annotations

import bisect
import itertools
import json
import random
import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from chaos.cluster import LEASE_SECONDS, LOCK_NAME, LOCK_NAMESPACE, ChaosCluster, tail_logs
from chaos.faults import LEADER_FAULTS, SETTLE_SECONDS, Injector, LeaderLoss, Window
from chaos.invariants import (
    Violation,
    double_binds,
    eviction_ping_pong,
    half_placed_gangs,
    is_bind,
    leader_write,
    lease_exclusive,
    longest_bind_after_renewal,
    node_overcommit,
    stale_podgroup_status,
    stuck_inqueue,
    unexplained_pending,
    writer,
)
from chaos.soak import Sampler
from chaos.workload import NODE_CPU, NODE_MEMORY, Workload

Obj = dict[str, Any]
# a gap this long with no bind, outside every fault window, is a quiescent moment
QUIET_SECONDS = 3.0
# slack on top of the Inqueue timeout: a session, the status write and its retries
INQUEUE_SLACK = 10.0
# a PodGroup's status may trail its pods by this much (sessions, a status write, its retries)
STATUS_LAG = 8.0


@dataclass
class Options:
    """How one trial runs."""

    seed: int
    seconds: float = 45.0
    nodes: int = 200
    replicas: int = 3
    work_dir: Path = Path("bench/out/chaos")
    leader_faults: tuple[str, ...] = LEADER_FAULTS
    arrivals_per_second: float = 4.0
    filler_gangs: int = 12
    inqueue_timeout: float = 20.0
    sim_faults: bool = True  # off for the soak: steady arrivals, nothing else
    sample_every: float = 0.0  # soak: seconds between RSS / connection / session samples
    # soak: finished gangs are deleted this long after they finished (0: kept)
    clean_finished_after: float = 0.0
    # soak: gangs waiting this long with nothing running are deleted, as users give up (0: kept)
    abandon_waiting_after: float = 0.0
    # soak: no arrival while more pods than this wait for a node (0: no bound)
    max_pending_pods: int = 0
    keep_logs: bool = False


@dataclass
class TrialResult:
    """What one trial did and found."""

    seed: int
    seconds: float
    faults: dict[str, int]
    skipped: dict[str, int]  # leader faults never struck
    violations: list[Violation]
    takeovers: list[tuple[str, float | None]]
    # losses with no bind after them (nothing placeable): loss to the Lease taken over
    leases_taken: list[tuple[str, float | None]]
    mid_commit_cuts: list[tuple[int, int]]
    created: dict[str, int]
    refused_writes: int
    binds: int
    audit_records: int
    replicas_started: int
    quiescent_moments: int
    # the longest a Lease holder bound after its own last renewal (its renew deadline: 10 s)
    bind_after_renewal: float = 0.0
    # the replicas' writes of the leader's role that the audit held to the lease, by kind
    leader_writes: dict[str, int] = field(default_factory=dict)
    samples: list[dict[str, float]] = field(default_factory=list)
    missed_scrapes: int = 0  # soak: scrapes of the leader's /metrics that got no answer
    retried: dict[str, int] = field(default_factory=dict)  # leader fault attempts put off
    arrivals_held_back: int = 0  # soak: arrivals skipped while max_pending_pods were waiting
    abandoned: dict[str, int] = field(default_factory=dict)  # soak: gangs given up, by reason
    logs: str = ""


# Seconds between the soak's sweeps for finished gangs to delete.
CLEAN_EVERY = 10.0
# How late past its planned end a trial may still strike the faults it planned.
OVERRUN = 1.5


def quiescent_moments(
    records: list[Obj], windows: list[Window], start: float, end: float
) -> list[float]:
    """Moments QUIET_SECONDS into each bind-free gap that no fault window (+ settle) covers."""
    binds = [float(r["time"]) for r in records if is_bind(r) and float(r["time"]) >= start]
    moments: list[float] = []
    marks = [start, *binds, end]
    for before, after in itertools.pairwise(marks):
        moment = before + QUIET_SECONDS
        if moment >= after:
            continue
        if any(w.start - QUIET_SECONDS <= moment <= w.end + SETTLE_SECONDS for w in windows):
            continue
        moments.append(moment)
    return moments


def lease_taken_after(records: list[Obj], at: float) -> float | None:
    """When the leader Lease was first written by another holder than it had at `at`."""
    holder = None
    for record in records:
        r = record.get("objectRef") or {}
        if r.get("resource") != "leases" or r.get("name") != LOCK_NAME:
            continue
        if (
            r.get("namespace") != LOCK_NAMESPACE
            or not 200 <= record["responseStatus"]["code"] < 300
        ):
            continue
        stored = record.get("responseObject") or {}
        now = str((stored.get("spec") or {}).get("holderIdentity") or "")
        if float(record["time"]) <= at:
            holder = now
        elif now and now != holder:
            return float(record["time"])
    return None


def successor_bound(chaos: ChaosCluster, loss: LeaderLoss) -> bool:
    """Whether a replica other than the one lost has bound since the loss."""
    return any(t > loss.at and w != loss.lost_writer for t, w in reversed(chaos.binds))


def leader_writes_by_kind(records: list[Obj], writers: set[str]) -> dict[str, int]:
    """The scheduler replicas' writes of the leader's role in the audit, by kind: what
    lease_exclusive held to the lease."""
    kinds = Counter(leader_write(r) for r in records if writer(r) in writers)
    kinds.pop("", None)
    return dict(sorted(kinds.items()))


def urgent_gang(workload: Workload, size: int) -> tuple[str, str]:
    """A high-priority gang in the big queue: the next leader has work the moment it leads."""
    return workload.gang(size=size, cpu="100m", queue="q-gold", klass="chaos-high")


def run_trial(options: Options, log: Callable[[str], None] = print) -> TrialResult:
    """Run one trial and check every invariant over its audit."""
    rng = random.Random(options.seed)
    work_dir = options.work_dir / f"seed-{options.seed}"
    shutil.rmtree(work_dir, ignore_errors=True)
    chaos = ChaosCluster(
        work_dir,
        nodes=options.nodes,
        replicas=options.replicas,
        inqueue_timeout=options.inqueue_timeout,
        node_cpu=NODE_CPU,
        node_memory=NODE_MEMORY,
    )
    chaos.start()
    try:
        result = _drive(chaos, options, rng, log)
    finally:
        chaos.stop()
    if not options.keep_logs and not result.violations:
        shutil.rmtree(work_dir, ignore_errors=True)
    return result


def _drive(
    chaos: ChaosCluster, options: Options, rng: random.Random, log: Callable[[str], None]
) -> TrialResult:
    workload = Workload(chaos, rng)
    workload.setup()
    workload.filler(options.filler_gangs)
    injector = Injector(chaos, rng)
    sampler = Sampler(chaos, options.sample_every) if options.sample_every else None
    plan = Injector.schedule(rng, options.seconds, list(options.leader_faults))
    if not options.sim_faults:
        plan = [(at, kind) for at, kind in plan if kind in LEADER_FAULTS]
    leader_due = [kind for _, kind in plan if kind in LEADER_FAULTS]
    sim_plan = [(at, kind) for at, kind in plan if kind not in LEADER_FAULTS]
    leader_times = [at for at, kind in plan if kind in LEADER_FAULTS]
    start = time.time()
    log(f"trial seed {options.seed}: {len(plan)} faults planned over {options.seconds:g}s")
    huge_at = rng.uniform(0, options.seconds / 2)
    huge_done = False
    next_arrival = start
    next_clean = start + CLEAN_EVERY
    pending = 0  # pods waiting for a node at the last sweep
    held_back = 0

    # a stopped leader is resumed only once its stop outlasted the lease, even past the end;
    # and the plan runs late when the driver blocks (a mid-commit kill submits a 160-pod gang
    # through the webhooks first): faults still due are struck up to OVERRUN x seconds
    def faults_due(elapsed: float) -> bool:
        return bool(sim_plan or leader_due) and elapsed < options.seconds * OVERRUN

    while (
        (elapsed := time.time() - start) < options.seconds
        or injector.resumes
        or faults_due(elapsed)
    ):
        injector.expire_rules()
        injector.resume_due()
        # one leader loss at a time: the next waits until a successor has bound, so that
        # each loss's time to the next bind is the takeover it caused
        recovered = not injector.losses or successor_bound(chaos, injector.losses[-1])
        while sim_plan and sim_plan[0][0] <= elapsed:
            _, kind = sim_plan.pop(0)
            if kind == "sim-restart" and not recovered:
                # no lease can be taken from a server that does not answer: an outage during
                # a takeover would be timed as muster's; the restart comes once it is over
                bisect.insort(sim_plan, (elapsed + 1.0, kind))
                continue
            try:
                injector.sim_fault(kind)
            except OSError:
                # sim is down (restarting): strike a moment later
                bisect.insort(sim_plan, (elapsed + 0.5, kind))
                break
        # nor is a leader lost while the API server is down or warming up after a restart
        restarting = any(w.kind == "sim-restart" and w.end > time.time() for w in injector.windows)
        due = bool(leader_due) and leader_times[0] <= elapsed and recovered and not restarting
        if due and injector.leader_fault(leader_due[0], partial(urgent_gang, workload)):
            log(f"  {elapsed:5.1f}s {leader_due[0]} of the leader")
            leader_due.pop(0)
            leader_times.pop(0)
        if not huge_done and elapsed >= huge_at:
            workload.huge_gang()
            huge_done = True
        if time.time() >= next_arrival:
            if options.max_pending_pods and pending > options.max_pending_pods:
                held_back += 1
            else:
                workload.tick()
            next_arrival += rng.expovariate(options.arrivals_per_second)
        if sampler is not None:
            sampler.maybe_sample()
        if options.clean_finished_after and time.time() >= next_clean:
            pending = workload.tidy(
                time.time(), options.clean_finished_after, options.abandon_waiting_after
            )
            next_clean = time.time() + CLEAN_EVERY
        chaos.read_audit()
        time.sleep(0.02)
    end_of_faults = time.time()
    for kind in leader_due:
        # never struck: no single leader (or no bind of a successor) before the end
        injector.skipped[kind] = injector.skipped.get(kind, 0) + 1
        log(f"  {kind} never struck: no single leader to hit before the end")
    injector.clear()
    _drain(chaos, log)
    end = time.time()
    chaos.read_audit()
    records = chaos.audit
    pods = chaos.pods()
    writers = chaos.scheduler_writers()
    moments = [*quiescent_moments(records, injector.windows, start, end_of_faults), end]
    binds = [r for r in records if is_bind(r)]
    for loss in injector.losses:
        # the lost leader's own binds in flight may still land: the takeover is the first
        # bind of another replica (the leader is the writer of the last bind before the loss)
        loss.next_bind = next(
            (
                float(r["time"])
                for r in binds
                if float(r["time"]) > loss.at and writer(r) != loss.lost_writer
            ),
            None,
        )
    for loss in injector.losses:
        loss.lease_taken = lease_taken_after(records, loss.at)
    # no leader could act from each loss until a successor bound
    pauses = [(loss.at, loss.next_bind or end) for loss in injector.losses]
    # nor could anyone write while sim was down or warming up after a restart
    pauses += [(w.start, w.end) for w in injector.windows if w.kind == "sim-restart"]
    violations = [
        *double_binds(records),
        *node_overcommit(records),
        *lease_exclusive(records, LOCK_NAMESPACE, LOCK_NAME, writers),
        *half_placed_gangs(records, moments, writers),
        *unexplained_pending(pods),
        *stuck_inqueue(records, end, options.inqueue_timeout + INQUEUE_SLACK, pauses),
        *stale_podgroup_status(records, end, STATUS_LAG, pauses),
        *eviction_ping_pong(records, writers),
    ]
    if options.keep_logs or violations:
        # the evidence: every audit record, and what the driver did when
        with (chaos.work_dir / "audit.jsonl").open("w") as out:
            out.writelines(json.dumps(r) + "\n" for r in records)
        (chaos.work_dir / "faults.json").write_text(
            json.dumps(
                {
                    "windows": [vars(w) for w in injector.windows],
                    "losses": [vars(loss) for loss in injector.losses],
                    "quiescent": moments,
                },
                indent=1,
            )
        )
    cuts = []
    for loss in injector.losses:
        if loss.gang is None:
            continue
        namespace, name = loss.gang
        mine = [
            r
            for r in binds
            if r["objectRef"].get("namespace") == namespace
            and str(r["objectRef"].get("name", "")).startswith(f"{name}-")
        ]
        cuts.append((sum(1 for r in mine if float(r["time"]) <= loss.at), len(mine)))
    return TrialResult(
        seed=options.seed,
        seconds=end - start,
        faults=dict(injector.counts),
        skipped=dict(injector.skipped),
        retried=dict(injector.retried),
        violations=violations,
        takeovers=[(loss.kind, loss.takeover) for loss in injector.losses],
        leases_taken=[
            (loss.kind, loss.lease_taken - loss.at if loss.lease_taken is not None else None)
            for loss in injector.losses
            if loss.next_bind is None
        ],
        mid_commit_cuts=cuts,
        created=dict(workload.created),
        refused_writes=workload.refused,
        binds=len(binds),
        audit_records=len(records),
        replicas_started=chaos.started,
        quiescent_moments=len(moments),
        bind_after_renewal=longest_bind_after_renewal(records, LOCK_NAMESPACE, LOCK_NAME),
        leader_writes=leader_writes_by_kind(records, writers),
        samples=sampler.samples if sampler is not None else [],
        missed_scrapes=sampler.missed_scrapes if sampler is not None else 0,
        arrivals_held_back=held_back,
        abandoned=dict(workload.abandoned),
        logs=tail_logs(chaos.processes) if violations else "",
    )


def _drain(chaos: ChaosCluster, log: Callable[[str], None], timeout: float = 40.0) -> None:
    """Wait for a leader, then until no bind for QUIET_SECONDS and every pending pod says why."""
    deadline = time.time() + timeout
    while chaos.leader() is None and time.time() < deadline:
        time.sleep(0.2)
    last_bind = time.time()
    while time.time() < deadline:
        for record in chaos.read_audit():
            if is_bind(record):
                last_bind = float(record["time"])
        if time.time() - last_bind >= QUIET_SECONDS and not unexplained_pending(chaos.pods()):
            return
        time.sleep(0.5)
    log(f"  drain: still settling after {timeout:g}s (lease {LEASE_SECONDS:g}s)")
