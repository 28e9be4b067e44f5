"""The campaign's cluster: a strict `muster sim`, scheduler replicas, the controller, the audit.

Processes come from the e2e harness (tests/e2e/harness.py): each muster process runs as its
ServiceAccount of deploy/ with exactly that RBAC. Every scheduler replica gets a token of its
own from TokenRequest, so sim's audit tells the replicas apart (the token's credential-id).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
for _path in (REPO, REPO / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import urllib3  # noqa: E402
import yaml  # noqa: E402
from kubernetes import client  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

from chaos.invariants import is_bind, slim, writer  # noqa: E402
from muster_sim.access.kubeconfig import write_token_kubeconfig  # noqa: E402
from tests.e2e.harness import (  # noqa: E402
    MUSTER,
    MUSTER_NAMESPACE,
    Cluster,
    Controller,
    Identities,
    Process,
    Scheduler,
    Sim,
    controller_argv,
    free_port,
    kubeconfig_access,
    scheduler_conf,
    token_request,
    wait_for,
)

Obj = dict[str, Any]
# what a call through the official client raises when sim refuses it or is down
# How long a replacement replica waits for sim to issue its token (a restart's downtime
# and the faults' rules, with room to spare).
TOKEN_WAIT_SECONDS = 30.0
API_FAILURES = (ApiException, urllib.error.URLError, urllib3.exceptions.HTTPError, OSError)
LOCK_NAMESPACE = MUSTER_NAMESPACE
LOCK_NAME = "muster-scheduler"
# scheduler/kube/lease.py's defaults (no flag changes them): a dead leader's lease runs out
# after this long, and a live one steps down when it could not renew for RENEW_DEADLINE
LEASE_SECONDS = 15.0
WEBHOOKS = REPO / "deploy" / "base" / "controller" / "webhooks"
ACTIONS = "enqueue, allocate, preempt, reclaim, backfill"


@dataclass
class Replica:
    """One `muster scheduler` process with leader election, and the token it runs with."""

    index: int
    scheduler: Scheduler
    kubeconfig: Path
    stopped: bool = False

    @property
    def process(self) -> Process:
        return self.scheduler.process

    @property
    def alive(self) -> bool:
        return self.process.alive

    def leading(self) -> bool:
        """Whether its metrics say it leads (False when it does not answer)."""
        if not self.alive or self.stopped:
            return False
        try:
            return self.scheduler.is_leader()
        except AssertionError:
            return False

    def signal(self, sig: signal.Signals) -> None:
        """Send `sig` to the process (SIGSTOP/SIGCONT leave it in place)."""
        if self.alive:
            os.kill(self.process.pid, sig)
        if sig == signal.SIGSTOP:
            self.stopped = True
        elif sig == signal.SIGCONT:
            self.stopped = False


@dataclass
class ChaosCluster:
    """sim, the replicas and the controller of one trial, and the audit read so far."""

    work_dir: Path
    nodes: int = 200
    replicas: int = 3
    period: float = 0.2
    inqueue_timeout: float = 20.0
    node_cpu: str = "16"
    node_memory: str = "64Gi"
    # deploy/'s admission webhooks, served by the controller, as on a cluster
    webhooks: bool = True
    sim: Sim = field(init=False)
    cluster: Cluster = field(init=False)
    identities: Identities = field(init=False)
    members: list[Replica] = field(default_factory=list)
    controller: Controller | None = None
    processes: list[Process] = field(default_factory=list)
    started: int = 0
    audit: list[Obj] = field(default_factory=list)
    audit_seq: int = 0
    # sim's time of the newest bind read from the audit
    last_bind: float = 0.0
    # (time, writer) of every bind read so far
    binds: list[tuple[float, str]] = field(default_factory=list)

    def start(self) -> None:
        """sim with the nodes, then the controller and the replicas; returns once all are up."""
        # a fresh directory: a CA or kubeconfig left by an earlier run would be trusted
        shutil.rmtree(self.work_dir, ignore_errors=True)
        self.work_dir.mkdir(parents=True)
        self.sim = Sim.start(
            self.work_dir,
            self.nodes,
            self.node_cpu,
            self.node_memory,
            # the driver reads the audit as it goes: sim need keep only the recent part
            ["--log-level", "WARNING", "--history-size", "200000", "--audit-capacity", "100000"],
        )
        self.processes.append(self.sim.process)
        self.cluster = Cluster(self.sim.kubeconfig, self.sim)
        self.identities = Identities(self.cluster, self.work_dir)
        self.cluster.ensure_namespace(LOCK_NAMESPACE)
        self.conf = scheduler_conf(
            self.work_dir / "scheduler.yaml",
            ACTIONS,
            [{"name": "enqueue", "arguments": {"inqueue-timeout": self.inqueue_timeout}}],
        )
        self.start_controller()
        pending = [self.start_replica(wait=False) for _ in range(self.replicas)]
        if self.webhooks:
            self.register_webhooks()
        for replica in pending:
            self.wait_ready(replica)

    def register_webhooks(self) -> None:
        """deploy/'s webhook configurations, calling the controller by URL, once in force."""
        controller = self.controller
        assert controller is not None

        def healthy() -> bool:
            if not controller.process.alive:
                raise RuntimeError(f"{controller.process.describe()}:\n{controller.process.tail()}")
            return controller.healthy() and controller.ca.exists()

        wait_for(healthy, 30, message="muster controller healthy")
        bundle = base64.b64encode(controller.ca.read_bytes()).decode()
        api = client.AdmissionregistrationV1Api(self.cluster.api)
        for file, create in (
            ("mutating.yaml", api.create_mutating_webhook_configuration),
            ("validating.yaml", api.create_validating_webhook_configuration),
        ):
            configuration = yaml.safe_load((WEBHOOKS / file).read_text())
            for webhook in configuration["webhooks"]:
                path = webhook["clientConfig"]["service"]["path"]
                webhook["clientConfig"] = {"url": controller.webhooks + path, "caBundle": bundle}
            create(configuration)

        def in_force() -> bool:
            probe = {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": "probe"},
                "spec": {"minMember": 1, "queue": "ghost-queue"},
            }
            try:
                self.cluster.custom.create_namespaced_custom_object(
                    "scheduling.volcano.sh", "v1beta1", "default", "podgroups", probe, dry_run="All"
                )
            except ApiException as error:
                return error.status == 400
            return False

        wait_for(in_force, 45, message="the controller's validating webhook in force")

    # -- processes ------------------------------------------------------------

    def replica_kubeconfig(self) -> Path:
        """A kubeconfig with a fresh token of the scheduler's ServiceAccount."""
        self.identities.kubeconfig("scheduler")  # the account and its RBAC, once
        request = token_request()
        # A replacement replica may start while sim restarts or refuses writes (faults in
        # force): ask until it answers, as a kubelet asks for a projected token again.
        answer = wait_for(
            lambda: self.try_api(
                self.cluster.core.create_namespaced_service_account_token,
                "muster-scheduler",
                MUSTER_NAMESPACE,
                request,
            ),
            TOKEN_WAIT_SECONDS,
            interval=0.2,
            message="a token for a new scheduler replica",
        )
        return write_token_kubeconfig(
            self.work_dir / f"scheduler-{self.started}.kubeconfig",
            self.cluster.kubeconfig,
            answer.status.token,
            f"system:serviceaccount:{MUSTER_NAMESPACE}:muster-scheduler",
        )

    def start_replica(self, wait: bool = True) -> Replica:
        """A new replica with leader election and a token of its own."""
        self.started += 1
        kubeconfig = self.replica_kubeconfig()
        port = free_port()
        argv = [
            MUSTER,
            "scheduler",
            "--kubeconfig",
            str(kubeconfig),
            "--scheduler-conf",
            str(self.conf),
            "--schedule-period",
            f"{self.period}s",
            "--default-queue",
            "default",
            "--metrics-address",
            f"127.0.0.1:{port}",
            "--log-level",
            "info",
            "--kube-api-qps",
            "500",
            "--kube-api-burst",
            "1000",
            "--leader-elect",
            "--lock-namespace",
            LOCK_NAMESPACE,
            "--lock-name",
            LOCK_NAME,
        ]
        log = self.work_dir / f"scheduler-{self.started}.log"
        process = Process(f"muster scheduler #{self.started}", argv, log)
        self.processes.append(process)
        replica = Replica(self.started, Scheduler(process, port, self.period), kubeconfig)
        self.members.append(replica)
        if wait:
            self.wait_ready(replica)
        return replica

    @staticmethod
    def wait_ready(replica: Replica, timeout: float = 30.0) -> None:
        def ready() -> bool:
            if not replica.alive:
                raise RuntimeError(
                    f"{replica.process.describe()} exited:\n{replica.process.tail()}"
                )
            return replica.scheduler.ready()

        wait_for(ready, timeout, message=f"{replica.process.describe()} ready")

    def start_controller(self) -> Controller:
        """`muster controller` as its ServiceAccount, standalone, webhooks on a local port."""
        health, webhook = free_port(), free_port()
        ca = self.work_dir / "webhook-ca.pem"
        kubeconfig = self.identities.kubeconfig("controller")
        argv = controller_argv(kubeconfig, health=health, webhook=webhook, ca=ca)
        process = Process("muster controller", argv, self.work_dir / "controller.log")
        self.processes.append(process)
        self.controller = Controller(process, health, webhook, ca)
        return self.controller

    def live(self) -> list[Replica]:
        """Replicas whose process runs (stopped ones included)."""
        return [r for r in self.members if r.alive]

    def leader(self) -> Replica | None:
        """The one replica leading, if exactly one says so."""
        leading = [r for r in self.live() if r.leading()]
        return leading[0] if len(leading) == 1 else None

    def stop(self) -> None:
        """Every process, newest first: SIGCONT any stopped one, then SIGTERM/SIGKILL."""
        for replica in self.members:
            if replica.stopped:
                replica.signal(signal.SIGCONT)
        for process in reversed(self.processes):
            process.stop(grace=3)
        self.cluster.close()

    # -- the audit ------------------------------------------------------------

    def read_audit(self) -> list[Obj]:
        """The audit records written since the last call (and keeps them all in `audit`)."""
        url, context, token = kubeconfig_access(self.sim.kubeconfig)
        fresh: list[Obj] = []
        while True:
            request = urllib.request.Request(
                f"{url}/sim/audit?since={self.audit_seq}&limit=20000",
                headers={"Authorization": f"Bearer {token}"},
            )
            try:
                with urllib.request.urlopen(request, timeout=30, context=context) as response:
                    body = response.read()
            except OSError:
                # sim is restarting: read on at the next call
                return fresh
            lines = [slim(json.loads(line)) for line in body.splitlines() if line.strip()]
            if not lines:
                return fresh
            fresh.extend(lines)
            self.audit.extend(lines)
            for record in lines:
                if is_bind(record):
                    self.last_bind = max(self.last_bind, float(record["time"]))
                    self.binds.append((float(record["time"]), writer(record)))
            self.audit_seq = int(lines[-1]["seq"])

    def restart_sim(self, downtime: float) -> None:
        """POST /sim/restart: sim stops serving for `downtime` seconds, keeping its store."""
        url, context, token = kubeconfig_access(self.sim.kubeconfig)
        request = urllib.request.Request(
            f"{url}/sim/restart?downtime={downtime:g}",
            data=b"",
            method="POST",
            headers={"Authorization": f"Bearer {token}"},
        )
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            if response.status != 202:
                raise RuntimeError(f"POST /sim/restart answered {response.status}")

    def scheduler_writers(self) -> set[str]:
        """The audit identities the replicas wrote as (user[credential-id])."""
        prefix = f"system:serviceaccount:{MUSTER_NAMESPACE}:muster-scheduler"
        return {writer(r) for r in self.audit if writer(r).startswith(prefix)}

    def pods(self) -> list[Obj]:
        """Every pod, as plain JSON (retried while sim restarts)."""
        deadline = time.time() + 30
        while True:
            try:
                response = self.cluster.core.list_pod_for_all_namespaces(_preload_content=False)
                return list(json.loads(response.data)["items"])
            except API_FAILURES:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)

    def attempt(self, call: Any, *args: Any, **kwargs: Any) -> bool:
        """Call the official client; False when sim refuses (faults are in force)."""
        try:
            call(*args, **kwargs)
        except API_FAILURES:
            return False
        return True

    def podgroups(self) -> list[Obj]:
        """Every PodGroup, as plain JSON."""
        listed = self.cluster.custom.list_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "podgroups"
        )
        return list(listed["items"])

    def try_api(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        """Call the official client; None when sim refuses (faults are in force)."""
        try:
            return call(*args, **kwargs)
        except API_FAILURES:
            return None


def tail_logs(processes: Sequence[Process], lines: int = 20) -> str:
    """The last lines of each process's log, for a failure report."""
    return "\n".join(f"--- {p.describe()}\n{p.tail(lines)}" for p in processes)


def now() -> float:
    """Wall-clock time: the audit's `time` is sim's, on the same machine."""
    return time.time()
