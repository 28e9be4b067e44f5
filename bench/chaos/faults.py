"""The faults a trial injects, when (seeded), and how each is done to the cluster.

Leader faults (SIGKILL, SIGKILL mid-commit of a gang, SIGTERM, SIGSTOP past the lease then
SIGCONT) wait until exactly one replica leads and hit that one; a killed replica is
replaced by a fresh one (a new token: a new identity in the audit). The SIGSTOP too strikes
mid-commit of a gang whose binds are slowed: the leader is stopped with binds queued, and
the statuses and events held behind them, which it must not send once it is resumed past its
term (the audit holds each to its writer's term). sim faults go through
its admin endpoint: error answers (5xx, 429) on binds, patches and evictions, added
latency, dropped watches, forced 410s (a compaction with every watch cut), a compaction
alone, and a restart of sim keeping its store (POST /sim/restart: serving stops for two
seconds, then resumes over the same store with a fresh watch cache and warms up as
kube-apiserver does: 403 to the ServiceAccounts for 3 s, 404 on the CRDs' resources for
4 s). Each has a window, during which (and a settle time after) no moment counts as
quiescent. A restart waits while a takeover is under way: no standby can take a lease
from an API server that does not answer, so an outage there would be timed as muster's.
"""

from __future__ import annotations

import random
import signal
import time
from dataclasses import dataclass, field
from typing import Any

from chaos.cluster import LEASE_SECONDS, ChaosCluster, Replica

Obj = dict[str, Any]

LEADER_FAULTS = ("sigkill-mid-commit", "sigkill", "sigterm", "sigstop")
SIM_FAULTS = (
    "bind-5xx",
    "patch-429",
    "evict-5xx",
    "latency",
    "drop-watches",
    "forced-410",
    "compaction",
    "sim-restart",
)
# every fault the issue names is injected (sim-restart: serving stops and resumes in the same
# process, keeping the store; the process itself is not replaced)
NOT_INJECTED: tuple[str, ...] = ()
# a restarted sim is down this long: every client sees connections refused
RESTART_DOWNTIME = 2.0
# and then warms up this long (sim's default --restart-crd-delay; its --restart-warmup of
# 403s is shorter): custom resources answer 404 until then
RESTART_WARMUP = 4.0
# how long a rule stays in force
RULE_SECONDS = 3.0
# SIGSTOP for longer than the lease: the others take over; the paused one must not bind again
STOP_SECONDS = LEASE_SECONDS + 2.0
# members of the gang a mid-commit kill cuts: three waves of the binder's 64 workers
MID_COMMIT_GANG = 160
# after a fault ends, in-flight work may still be settling
SETTLE_SECONDS = 4.0


@dataclass
class Window:
    """A fault in force from `start` to `end` (Unix time)."""

    kind: str
    start: float
    end: float


@dataclass
class LeaderLoss:
    """A leader fault: when it struck, the replica hit, and the first bind after it."""

    kind: str
    at: float
    replica: int
    next_bind: float | None = None
    # the mid-commit kill's gang (namespace, name): how far its commit had got when it struck
    gang: tuple[str, str] | None = None
    # the audit identity the lost leader bound as (the writer of the last bind before it)
    lost_writer: str = ""
    # when another holder's first Lease write after the loss was committed: what times a
    # takeover that had nothing to bind
    lease_taken: float | None = None

    @property
    def takeover(self) -> float | None:
        """Seconds from the fault to the next bind (None: there was none)."""
        return None if self.next_bind is None else self.next_bind - self.at


@dataclass
class Injector:
    """Does the faults and remembers what it did."""

    chaos: ChaosCluster
    rng: random.Random
    counts: dict[str, int] = field(default_factory=dict)
    windows: list[Window] = field(default_factory=list)
    losses: list[LeaderLoss] = field(default_factory=list)
    # by kind: until when, and the sim rules it sets
    rules: dict[str, tuple[float, list[Obj]]] = field(default_factory=dict)
    # SIGCONTs owed: (when, replica)
    resumes: list[tuple[float, Replica]] = field(default_factory=list)
    # leader faults never struck (no single leader before the end of the faults)
    skipped: dict[str, int] = field(default_factory=dict)
    # leader fault attempts put off (its gang's first bind did not come in time): tried again
    retried: dict[str, int] = field(default_factory=dict)

    def _count(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1

    # -- sim faults -------------------------------------------------------------

    def _push_rules(self) -> None:
        latency: list[Obj] = []
        errors: list[Obj] = []
        for _, rules in self.rules.values():
            for rule in rules:
                (latency if "ms" in rule else errors).append(rule)
        config = {"latency": latency, "errors": errors, "seed": self.rng.randrange(1 << 30)}
        deadline = time.time() + RESTART_DOWNTIME + RESTART_WARMUP + 10
        while True:
            try:
                self.chaos.sim.set_faults(config)
                return
            except OSError:
                # sim is restarting: the rules must still reach it
                if time.time() > deadline:
                    raise
                time.sleep(0.1)

    def _rule(self, kind: str, *rules: Obj, seconds: float = RULE_SECONDS) -> None:
        start = time.time()
        self.rules[kind] = (start + seconds, list(rules))
        self.windows.append(Window(kind, start, start + seconds))
        self._push_rules()

    def sim_fault(self, kind: str) -> None:
        """One sim fault of `kind`."""
        sim = self.chaos.sim
        code = self.rng.choice((500, 503, 504))
        if kind == "bind-5xx":
            self._rule(
                kind,
                {"rate": 0.3, "code": code, "verbs": ["create"], "resources": ["pods/binding"]},
            )
        elif kind == "patch-429":
            resources = ["pods/status", "podgroups", "queues/status"]
            self._rule(kind, {"rate": 0.5, "code": 429, "verbs": ["patch"], "resources": resources})
        elif kind == "evict-5xx":
            # a pod's deletion and its eviction, each its own rule: one rule of both verbs and
            # both resources would also refuse the workload's pod creates, and leave a gang
            # submitted meanwhile short of members for good
            evict = {"rate": 0.5, "code": code}
            self._rule(
                kind,
                {**evict, "verbs": ["delete"], "resources": ["pods"]},
                {**evict, "verbs": ["create"], "resources": ["pods/eviction"]},
            )
        elif kind == "latency":
            self._rule(kind, {"ms": self.rng.choice((50, 150, 300))})
        elif kind == "drop-watches":
            sim.drop_watches()
            self.windows.append(Window(kind, time.time(), time.time()))
        elif kind == "forced-410":
            sim.compact()
            sim.drop_watches()
            self.windows.append(Window(kind, time.time(), time.time()))
        elif kind == "sim-restart":
            at = time.time()
            self.chaos.restart_sim(RESTART_DOWNTIME)
            self.windows.append(Window(kind, at, at + RESTART_DOWNTIME + RESTART_WARMUP))
        elif kind == "compaction":
            sim.compact()
            self.windows.append(Window(kind, time.time(), time.time()))
        else:
            raise ValueError(f"unknown sim fault {kind!r}; known: {', '.join(SIM_FAULTS)}")
        self._count(kind)

    def expire_rules(self) -> None:
        """Lift the rules whose time is up (called every tick)."""
        now = time.time()
        gone = [kind for kind, (until, _) in self.rules.items() if until <= now]
        for kind in gone:
            del self.rules[kind]
        if gone:
            self._push_rules()

    def clear(self) -> None:
        """Lift every sim fault and resume every stopped replica (the drain)."""
        self.rules.clear()
        self._push_rules()
        for _, replica in self.resumes:
            replica.signal(signal.SIGCONT)
        self.resumes.clear()

    # -- leader faults ----------------------------------------------------------

    def leader_fault(self, kind: str, gang: Any) -> bool:
        """Hit the leader with `kind`; False when no single leader is there to hit.

        `gang` submits a gang of work and answers its (namespace, name): the mid-commit kill
        strikes once its first member is bound.
        """
        leader = self.chaos.leader()
        if leader is None:
            # a takeover is under way: the driver tries again on its next tick
            return False
        cut: tuple[str, str] | None = None
        if kind in ("sigkill-mid-commit", "sigstop"):
            # slow binds down and make the gang several times the binder's 64 requests in
            # flight, so that the kill (or the stop) lands after the first wave committed,
            # before the rest, with statuses and events held behind the binds
            self._rule(
                "bind-latency", {"ms": 400, "verbs": ["create"], "resources": ["pods/binding"]}
            )
            cut = gang(MID_COMMIT_GANG)
            if not self._wait_first_bind(*cut, timeout=10):
                self.retried[kind] = self.retried.get(kind, 0) + 1
                return False
        at = time.time()
        if kind in ("sigkill", "sigkill-mid-commit"):
            leader.process.kill()
        elif kind == "sigterm":
            leader.process.stop(grace=5)
        elif kind == "sigstop":
            leader.signal(signal.SIGSTOP)
            self.resumes.append((at + STOP_SECONDS, leader))
        else:
            raise ValueError(f"unknown leader fault {kind!r}; known: {', '.join(LEADER_FAULTS)}")
        self.chaos.read_audit()
        lost = next((w for t, w in reversed(self.chaos.binds) if t <= at), "")
        self.losses.append(LeaderLoss(kind, at, leader.index, gang=cut, lost_writer=lost))
        self.windows.append(
            Window(kind, at, at + (STOP_SECONDS if kind == "sigstop" else LEASE_SECONDS) + 2)
        )
        self._count(kind)
        if cut is None:
            # work waiting for the successor: its first bind times the takeover
            gang(4)
        if kind != "sigstop":
            # keep two candidates besides: the replacement has a token (an identity) of its own
            self.chaos.start_replica(wait=False)
        return True

    def _wait_first_bind(self, namespace: str, name: str, timeout: float) -> bool:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for record in self.chaos.read_audit():
                r = record.get("objectRef") or {}
                if (
                    r.get("subresource") == "binding"
                    and r.get("namespace") == namespace
                    and str(r.get("name", "")).startswith(f"{name}-")
                    and 200 <= record["responseStatus"]["code"] < 300
                ):
                    return True
            time.sleep(0.01)
        return False

    def resume_due(self) -> None:
        """SIGCONT the replicas whose stop is over (called every tick)."""
        now = time.time()
        for entry in list(self.resumes):
            if entry[0] <= now:
                entry[1].signal(signal.SIGCONT)
                self.resumes.remove(entry)

    # -- the schedule -----------------------------------------------------------

    @staticmethod
    def schedule(
        rng: random.Random, seconds: float, leader_faults: list[str]
    ) -> list[tuple[float, str]]:
        """When each fault strikes: every sim fault at least once, more at random, seeded.

        Leader faults come in the given order, spread over the run; each waits (in the
        driver) for a leader to hit, so that a loss is always measured from a live leader.
        """
        plan: list[tuple[float, str]] = []
        for kind in SIM_FAULTS:
            plan.append((rng.uniform(1, seconds * 0.9), kind))
        for _ in range(max(0, int(seconds / 10))):
            plan.append((rng.uniform(1, seconds * 0.9), rng.choice(SIM_FAULTS)))
        step = seconds / (len(leader_faults) + 1)
        for index, kind in enumerate(leader_faults):
            plan.append((step * index + rng.uniform(1, step / 3), kind))
        return sorted(plan)
