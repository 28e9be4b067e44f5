"""The e2e harness: muster processes, the API server they talk to, object builders, polling."""

from __future__ import annotations

import base64
import ctypes
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from prometheus_client.parser import text_string_to_metric_families

from muster_sim.access.kubeconfig import write_token_kubeconfig
from muster_sim.cluster.kubelet import DURATION_ANNOTATION as DURATION
from muster_sim.cluster.kubelet import parse_duration

Obj = dict[str, Any]
T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]
CRDS = REPO / "crds"
DEPLOY = REPO / "deploy" / "base"
MUSTER_NAMESPACE = "muster-system"
# the console script installed next to the interpreter running the tests
MUSTER = str(Path(sys.executable).with_name("muster"))
KUBECONFIG_ENV = "MUSTER_E2E_KUBECONFIG"

GROUP = "scheduling.volcano.sh"
VERSION = "v1beta1"
GROUP_NAME = "scheduling.k8s.io/group-name"
TASK_SPEC = "volcano.sh/task-spec"
QUEUE_NAME = "scheduling.volcano.sh/queue-name"
# Kubernetes' own gang API (scheduling.k8s.io Workloads and PodGroups).
NATIVE_GROUP = "scheduling.k8s.io"
# on a real cluster the suite's simulated nodes carry this label and taint, so that
# only the suite's pods land there and the suite's pods land nowhere else
POOL_KEY = "muster.dev/e2e-pool"
NODE_PREFIX = "muster-e2e-"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
DEFAULT_SERVICE_ACCOUNT = "default"
PR_SET_PDEATHSIG = 1


# ---------------------------------------------------------------- polling


def wait_for(
    predicate: Callable[[], T | None],
    timeout: float,
    interval: float = 0.05,
    message: str | Callable[[], str] = "condition",
) -> T:
    """Poll until `predicate()` is truthy and return it; fail naming what was awaited.

    `message` may be a callable, evaluated only on failure, to describe the state seen last.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout}s waiting for: {text}")
        time.sleep(interval)


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_get(
    url: str, timeout: float = 2.0, context: ssl.SSLContext | None = None
) -> tuple[int, str]:
    """Status and body of a GET; status 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")
    except (OSError, urllib.error.URLError):
        return 0, ""


# ---------------------------------------------------------------- processes


class Process:
    """A subprocess whose output goes to a log file; stopped with SIGTERM, then SIGKILL."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = log_path.open("ab")
        self.popen = subprocess.Popen(
            self.argv,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL, as a crashed node or an OOM kill would."""
        if self.alive:
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(timeout=10)
        self._log.close()

    def stop(self, grace: float = 5.0) -> int | None:
        """SIGTERM, then SIGKILL after `grace` seconds; the exit code (negative: a signal)."""
        if self.alive:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.popen.send_signal(signal.SIGKILL)
                self.popen.wait(timeout=10)
        self._log.close()
        return self.popen.returncode

    def tail(self, lines: int = 40) -> str:
        """The last lines of the process's output."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def describe(self) -> str:
        state = "running" if self.alive else f"exited {self.popen.returncode}"
        return f"{self.name} (pid {self.pid}, {state}, log {self.log_path})"


def _die_with_parent() -> None:
    # if pytest itself is killed, teardown never runs: let the kernel SIGKILL the child
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def kubeconfig_access(kubeconfig: Path) -> tuple[str, ssl.SSLContext | None, str | None]:
    """The server URL, an SSL context trusting its CA (and presenting the user's client
    certificate, as kind's and kubeadm's admin kubeconfigs authenticate), and the bearer
    token of a kubeconfig."""
    doc = yaml.safe_load(kubeconfig.read_text())
    context = {c["name"]: c["context"] for c in doc["contexts"]}[doc["current-context"]]
    cluster = {c["name"]: c["cluster"] for c in doc["clusters"]}[context["cluster"]]
    user = {u["name"]: u["user"] for u in doc["users"]}[context["user"]]
    url = str(cluster["server"])
    ssl_context = None
    if url.startswith("https:"):
        ca_data = cluster.get("certificate-authority-data")
        ssl_context = ssl.create_default_context(
            cadata=base64.b64decode(ca_data).decode() if ca_data else None,
            cafile=cluster.get("certificate-authority"),
        )
        if user.get("client-certificate-data") or user.get("client-certificate"):
            _present_client_certificate(ssl_context, kubeconfig, user)
    return url, ssl_context, user.get("token")


def _present_client_certificate(
    ssl_context: ssl.SSLContext, kubeconfig: Path, user: dict[str, Any]
) -> None:
    """Load a kubeconfig user's client certificate and key into the context, from their
    files or from their inline data (ssl reads only files: a private temporary directory,
    removed once they are loaded)."""
    with tempfile.TemporaryDirectory(prefix="muster-e2e-") as scratch:
        paths = []
        for field_name in ("client-certificate", "client-key"):
            inline = user.get(f"{field_name}-data")
            if inline:
                path = Path(scratch) / f"{field_name}.pem"
                path.write_bytes(base64.b64decode(inline))
                paths.append(str(path))
            else:
                paths.append(str(kubeconfig.parent / str(user[field_name])))
        ssl_context.load_cert_chain(certfile=paths[0], keyfile=paths[1])


class Sim:
    """A `muster sim` subprocess and its admin endpoint (faults, compaction, dropped watches).

    sim runs with its default, as strict as kube-apiserver: HTTPS with its own CA, tokens and
    RBAC. Its kubeconfig holds the CA and the admin token (group system:masters).
    """

    def __init__(self, process: Process, kubeconfig: Path, url: str) -> None:
        self.process = process
        self.kubeconfig = kubeconfig
        self.url = url
        _, self._ssl, self._token = kubeconfig_access(kubeconfig)

    @classmethod
    def start(
        cls, work_dir: Path, nodes: int, node_cpu: str, node_memory: str, extra: Sequence[str] = ()
    ) -> Sim:
        """Start sim on a free port with the suite's CRDs; return once /readyz answers."""
        kubeconfig = work_dir / "sim.kubeconfig"
        argv = [
            MUSTER,
            "sim",
            "--port",
            "0",
            "--kubeconfig-out",
            str(kubeconfig),
            "--crds",
            str(CRDS),
            "--nodes",
            str(nodes),
            "--node-cpu",
            node_cpu,
            "--node-memory",
            node_memory,
            "--pod-start-delay",
            "0.05",
            "--terminate-delay",
            "0.05",
            "--bookmark-interval",
            "0.5",
            *extra,
        ]
        process = Process("muster sim", argv, work_dir / "sim.log")

        def server_url() -> str | None:
            if not process.alive:
                raise AssertionError(f"muster sim exited early:\n{process.tail()}")
            if not kubeconfig.exists():
                return None
            url, context, _ = kubeconfig_access(kubeconfig)
            # /readyz is open without credentials, as on kube-apiserver
            return url if http_get(url + "/readyz", context=context)[0] == 200 else None

        url = wait_for(server_url, 20, message=lambda: f"muster sim ready\n{process.tail()}")
        return cls(process, kubeconfig, url)

    def set_faults(self, faults: Obj) -> None:
        """Put a fault configuration in force (the JSON shape of sim's FaultConfig)."""
        self._admin("PUT", "/sim/faults", faults)

    def compact(self) -> None:
        """Forget the watch history, so that clients resuming from before get 410 Gone."""
        self._admin("POST", "/sim/compact")

    def drop_watches(self) -> None:
        """Close every open watch connection."""
        self._admin("POST", "/sim/drop-watches")

    def restart(self, downtime: float) -> None:
        """Restart the API server, keeping its store (sim answers at once, then goes down for
        `downtime` seconds and warms up as kube-apiserver does)."""
        self._admin("POST", f"/sim/restart?downtime={downtime:g}")

    def _admin(self, method: str, path: str, body: Obj | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        headers = {"Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=5, context=self._ssl) as response:
            assert 200 <= response.status < 300, f"{method} {path}: {response.status}"


class Metrics:
    """One scrape of a Prometheus endpoint: samples by name and labels."""

    def __init__(self, text: str) -> None:
        self.samples: list[tuple[str, dict[str, str], float]] = [
            (sample.name, dict(sample.labels), sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        ]

    def names(self) -> set[str]:
        return {name for name, _, _ in self.samples}

    def series(self, name: str) -> list[tuple[dict[str, str], float]]:
        return [(labels, value) for n, labels, value in self.samples if n == name]

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples of `name` whose labels include `labels` (0 when none)."""
        return sum(
            value
            for labels_seen, value in self.series(name)
            if all(labels_seen.get(k) == v for k, v in labels.items())
        )


class Scheduler:
    """A `muster scheduler` subprocess and its metrics endpoint."""

    def __init__(self, process: Process, metrics_port: int, period: float) -> None:
        self.process = process
        self.metrics_port = metrics_port
        self.period = period
        self.base = f"http://127.0.0.1:{metrics_port}"

    def ready(self) -> bool:
        return http_get(self.base + "/readyz")[0] == 200

    def healthy(self) -> bool:
        return http_get(self.base + "/healthz")[0] == 200

    def metrics(self) -> Metrics:
        status, text = http_get(self.base + "/metrics")
        assert status == 200, f"GET {self.base}/metrics answered {status}\n{self.process.tail()}"
        return Metrics(text)

    def sessions(self) -> float:
        """Sessions run so far (the count of the session-duration histogram)."""
        # Every schedule period counts, whether its session ran or was skipped because
        # nothing had changed (a skipped period is one where muster chose to do nothing).
        return self.metrics().value("muster_scheduling_cycles_total")

    def wait_sessions(self, count: int, timeout: float = 10.0) -> None:
        """Return after at least `count` more whole sessions have run."""
        target = self.sessions() + count + 1  # +1: the session running now may be half done
        wait_for(
            lambda: self.sessions() >= target,
            timeout,
            message=lambda: f"{count} scheduling sessions of {self.process.describe()}",
        )

    def binds(self) -> float:
        return self.metrics().value("muster_binds_total", result="success")

    def is_leader(self) -> bool:
        return self.metrics().value("muster_is_leader") == 1


# ---------------------------------------------------------------- the API


@dataclass
class Cluster:
    """The API server under test, through the official client (explicit ApiClient)."""

    kubeconfig: Path
    sim: Sim | None
    api: client.ApiClient = field(init=False)
    core: client.CoreV1Api = field(init=False)
    custom: client.CustomObjectsApi = field(init=False)
    # real cluster only: the pool value this test's nodes and pods share
    pool: str | None = None
    nodes_created: list[str] = field(default_factory=list)
    queues_created: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.api = config.new_client_from_config(config_file=str(self.kubeconfig))
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)

    def close(self) -> None:
        self.api.close()

    def serves_native(self, version: str) -> bool:
        """Whether the API server serves Kubernetes' own PodGroups at `version`."""
        url, context, token = kubeconfig_access(self.kubeconfig)
        request = urllib.request.Request(
            f"{url}/apis/{NATIVE_GROUP}/{version}",
            headers={"Authorization": f"Bearer {token}"} if token else {},
        )
        try:
            with urllib.request.urlopen(request, timeout=5, context=context) as response:
                found = json.loads(response.read())
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return False
            raise
        return any(r.get("name") == "podgroups" for r in found.get("resources", []))

    def ready(self) -> bool:
        """Whether the API server's /readyz answers 200 to the suite's admin."""
        url, context, token = kubeconfig_access(self.kubeconfig)
        request = urllib.request.Request(
            url + "/readyz", headers={"Authorization": f"Bearer {token}"} if token else {}
        )
        try:
            with urllib.request.urlopen(request, timeout=2, context=context) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    @property
    def lock_name(self) -> str:
        """The leader-election Lease the replicas share (one per test on a real cluster)."""
        return "muster-scheduler" if self.pool is None else f"muster-e2e-{self.pool}"

    def lease_holder(self, namespace: str) -> str | None:
        try:
            lease = client.CoordinationV1Api(self.api).read_namespaced_lease(
                self.lock_name, namespace
            )
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        return lease.spec.holder_identity if lease.spec else None

    # namespaces and nodes

    def create_namespace(self, name: str) -> None:
        """Create the namespace; where a ServiceAccount controller runs, return only once it
        has made the namespace's `default` ServiceAccount (below)."""
        self.core.create_namespace({"metadata": {"name": name}})
        if self.makes_service_accounts:
            wait_for(
                lambda: self._has_service_account(name, DEFAULT_SERVICE_ACCOUNT),
                timeout=60,
                message=f"ServiceAccount {name}/{DEFAULT_SERVICE_ACCOUNT}, which "
                "kube-controller-manager makes in every new namespace",
            )

    @cached_property
    def makes_service_accounts(self) -> bool:
        """Whether the cluster runs kube-controller-manager's ServiceAccount controller (it
        made the `default` namespace's `default` ServiceAccount). There, the API server's
        ServiceAccount admission refuses a pod in a namespace whose `default` ServiceAccount
        the controller has not made yet (403 "serviceaccount default not found": it retries
        for a second or two, not longer), so the suite waits for it, as kubectl users learn
        to. sim runs no such controller and no such admission."""
        return self._has_service_account("default", DEFAULT_SERVICE_ACCOUNT)

    def _has_service_account(self, namespace: str, name: str) -> bool:
        try:
            self.core.read_namespaced_service_account(name, namespace)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    def ensure_namespace(self, name: str) -> None:
        try:
            self.create_namespace(name)
        except ApiException as error:
            if error.status != 409:
                raise

    def delete_namespace(self, name: str) -> None:
        """Delete the namespace; on a real cluster, its pods and PodGroups first.

        A namespace's contents go only when the controller manager's namespace
        controller gets to them, and pods bound to the suite's nodes only when a
        kubelet confirms: on a bare API server neither happens, and the leftovers
        would count as demand in the queues of the tests after this one.
        """
        if self.pool is not None:
            self.core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
            self.custom.delete_collection_namespaced_custom_object(
                GROUP, VERSION, name, "podgroups"
            )
        try:
            self.core.delete_namespace(name)
        except ApiException as error:
            if error.status != 404:
                raise

    def add_node(self, name: str, cpu: str, memory: str = "16Gi") -> None:
        """Register a Ready node (on a real cluster: named, labelled and tainted for the suite)."""
        if self.pool is not None:
            name = f"{NODE_PREFIX}{self.pool}-{name}"
        created = self.core.create_node(make_node(name, cpu, memory, pool=self.pool))
        self.nodes_created.append(name)
        # The API server's TaintNodesByCondition admission taints every new node
        # not-ready; the node lifecycle controller lifts it once the kubelet says Ready.
        # The suite's nodes have no kubelet and a bare API server no controller manager,
        # so the suite plays both parts.
        taints = [
            {"key": t.key, "value": t.value, "effect": t.effect}
            for t in (created.spec.taints or [])
            if t.key != NOT_READY_TAINT
        ]
        if len(taints) != len(created.spec.taints or []):
            self.core.patch_node(name, {"spec": {"taints": taints}})

    def confirm_deletions(self, stop: threading.Event, interval: float = 0.1) -> None:
        """Play the kubelet of the suite's nodes (real clusters): a pod on one of them that
        is being deleted (an eviction, a graceful delete) is removed at once, as a
        kubelet does once its containers stopped. Runs until `stop` is set."""
        while not stop.wait(interval):
            if not self.nodes_created:
                continue
            try:
                pods = self.core.list_pod_for_all_namespaces().items
            except ApiException:
                continue
            for pod in pods:
                if pod.metadata.deletion_timestamp is None:
                    continue
                if pod.spec.node_name not in self.nodes_created:
                    continue
                try:
                    self.core.delete_namespaced_pod(
                        pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0
                    )
                except ApiException as error:
                    if error.status != 404:
                        raise

    def run_pods(self, stop: threading.Event, interval: float = 0.1) -> None:
        """Play the kubelet of the suite's nodes for the pods they run (real clusters): a
        pod bound to one of them becomes Running and Ready, and Succeeded once its
        `sim.muster.dev/duration` has passed, as sim's kubelet does. Runs until `stop`."""
        started: dict[str, float] = {}
        while not stop.wait(interval):
            try:
                pods = self.core.list_pod_for_all_namespaces().items
            except ApiException:
                continue
            for pod in pods:
                if pod.spec.node_name not in self.nodes_created or pod.metadata.deletion_timestamp:
                    continue
                try:
                    self._kubelet_step(pod, started)
                except ApiException as error:
                    if error.status not in (404, 409):
                        raise

    def _kubelet_step(self, pod: Any, started: dict[str, float]) -> None:
        uid, phase = pod.metadata.uid, pod.status.phase
        now = time.monotonic()
        if phase == "Pending":
            started[uid] = now
            self._set_phase(pod, "Running", ready=True)
            return
        duration = (pod.metadata.annotations or {}).get(DURATION)
        if phase == "Running" and duration is not None:
            since = started.setdefault(uid, now)
            if now - since >= (parse_duration(duration) or 0.0):
                self._set_phase(pod, "Succeeded", ready=False)

    def _set_phase(self, pod: Any, phase: str, *, ready: bool) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status: Obj = {
            "phase": phase,
            "conditions": [
                {"type": "Ready", "status": str(ready), "lastTransitionTime": stamp},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp},
            ],
        }
        if phase == "Running":
            status["startTime"] = stamp
        self.core.patch_namespaced_pod_status(
            pod.metadata.name, pod.metadata.namespace, {"status": status}
        )

    def create_queue(self, queue: Obj) -> None:
        """Create a Queue; cluster-scoped, so on a real cluster it is deleted after the test."""
        self.custom.create_cluster_custom_object(GROUP, VERSION, "queues", queue)
        self.queues_created.append(queue["metadata"]["name"])

    def delete_created_queues(self) -> None:
        # children before parents: a parent in use may be refused
        for name in reversed(self.queues_created):
            try:
                self.custom.delete_cluster_custom_object(GROUP, VERSION, "queues", name)
            except ApiException as error:
                if error.status != 404:
                    raise

    def delete_created_nodes(self) -> None:
        for name in self.nodes_created:
            try:
                self.core.delete_node(name)
            except ApiException as error:
                if error.status != 404:
                    raise

    # workloads

    def create_pod(self, namespace: str, pod: Obj) -> None:
        if self.pool is not None:
            confine_to_pool(pod, self.pool)
        self.core.create_namespaced_pod(namespace, pod)

    def submit(self, namespace: str, podgroup: Obj, pods: Iterable[Obj]) -> None:
        """Create a PodGroup, then its pods."""
        self.create_podgroup(namespace, podgroup)
        for pod in pods:
            self.create_pod(namespace, pod)

    def create_podgroup(self, namespace: str, podgroup: Obj) -> None:
        self.custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "podgroups", podgroup
        )

    def podgroup(self, namespace: str, name: str) -> Obj:
        return dict(
            self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "podgroups", name)
        )

    def patch_podgroup(self, namespace: str, name: str, patch: Obj) -> None:
        self.custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, "podgroups", name, patch
        )

    def queue(self, name: str) -> Obj | None:
        try:
            return dict(self.custom.get_cluster_custom_object(GROUP, VERSION, "queues", name))
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def pods(self, namespace: str) -> list[Obj]:
        """The namespace's pods as plain JSON."""
        response = self.core.list_namespaced_pod(namespace, _preload_content=False)
        return list(json.loads(response.data)["items"])

    def placements(self, namespace: str) -> dict[str, str | None]:
        """Pod name -> node name (None while pending)."""
        return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in self.pods(namespace)}

    def events(self, namespace: str, kind: str, name: str) -> list[Obj]:
        """core/v1 Events about one object."""
        response = self.core.list_namespaced_event(
            namespace,
            field_selector=f"involvedObject.kind={kind},involvedObject.name={name}",
            _preload_content=False,
        )
        return list(json.loads(response.data)["items"])

    def describe(self, namespace: str) -> str:
        """A one-screen summary of the namespace's pods and PodGroups, for failure messages."""
        lines = [
            f"{n}: {node or '<pending>'}" for n, node in sorted(self.placements(namespace).items())
        ]
        groups = self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "podgroups")
        for pg in groups["items"]:
            lines.append(f"podgroup {pg['metadata']['name']}: {json.dumps(pg.get('status'))}")
        return "\n".join(lines)


def scheduled_events(cluster: Cluster, namespace: str) -> dict[str, int]:
    """How many times each pod of the namespace was reported Scheduled (event counts summed)."""
    response = cluster.core.list_namespaced_event(namespace, _preload_content=False)
    counts: dict[str, int] = {}
    for event in json.loads(response.data)["items"]:
        involved = event["involvedObject"]
        if event["reason"] == "Scheduled" and involved["kind"] == "Pod":
            counts[involved["name"]] = counts.get(involved["name"], 0) + int(
                event.get("count") or 1
            )
    return counts


def bound(placements: dict[str, str | None], names: Iterable[str] | None = None) -> list[str]:
    """The pods (of `names`, or all) that have a node."""
    chosen = placements.keys() if names is None else names
    return [n for n in chosen if placements.get(n)]


def node_names(cluster: Cluster) -> list[str]:
    """The nodes a test may place on, sorted (on a real cluster: the suite's own)."""
    if cluster.pool is not None:
        return sorted(cluster.nodes_created)
    return sorted(node.metadata.name for node in cluster.core.list_node().items)


def label_nodes(cluster: Cluster, key: str, values: dict[str, str]) -> None:
    """Give each node (by name) the label `key` with its value."""
    for name, value in values.items():
        cluster.core.patch_node(name, {"metadata": {"labels": {key: value}}})


def condition(obj: Obj, kind: str) -> Obj | None:
    """The status condition of type `kind`, if any."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


def wait_for_phase(
    cluster: Cluster, namespace: str, name: str, phase: str, timeout: float = 10.0
) -> None:
    """Wait until the PodGroup's status.phase is `phase`; fail naming what the namespace shows."""
    wait_for(
        lambda: cluster.podgroup(namespace, name).get("status", {}).get("phase") == phase,
        timeout=timeout,
        message=lambda: f"podgroup {name} {phase}\n{cluster.describe(namespace)}",
    )


def placement_verdict(podgroup: Obj) -> Obj | None:
    """The PodGroup's Unschedulable=True condition once it is about placing the gang. While
    its pods are still being created the gang first says it waits for them (NotEnoughTasks:
    "has 0 pods but minMember is 4"), which is not the verdict a test waits for."""
    found = condition(podgroup, "Unschedulable")
    if not found or found.get("status") != "True" or found.get("reason") == "NotEnoughTasks":
        return None
    return found


class BindingLog:
    """Watches a namespace's pods and records every node each pod was seen on, in order.

    A pod that shows up on two nodes, or twice on one after leaving it, was bound twice.
    Resumes after dropped connections and relists after 410 Gone, like any reflector.
    """

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.nodes: dict[str, list[str]] = {}
        self._last: dict[str, str | None] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="binding-log", daemon=True)

    def __enter__(self) -> BindingLog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def double_binds(self) -> dict[str, list[str]]:
        with self._lock:
            return {pod: list(nodes) for pod, nodes in self.nodes.items() if len(nodes) > 1}

    def _see(self, pod: Obj) -> None:
        name = pod["metadata"]["name"]
        node = pod["spec"].get("nodeName")
        with self._lock:
            if node and self._last.get(name) != node:
                self.nodes.setdefault(name, []).append(node)
            self._last[name] = node

    def _run(self) -> None:
        core = self.cluster.core
        rv = ""
        while not self._stop.is_set():
            try:
                if not rv:
                    response = core.list_namespaced_pod(self.namespace, _preload_content=False)
                    listed = json.loads(response.data)
                    for pod in listed["items"]:
                        self._see(pod)
                    rv = listed["metadata"]["resourceVersion"]
                stream = watch.Watch().stream(
                    core.list_namespaced_pod,
                    self.namespace,
                    resource_version=rv,
                    allow_watch_bookmarks=True,
                    timeout_seconds=2,
                )
                for event in stream:
                    obj = event["raw_object"]
                    if event["type"] == "ERROR":
                        rv = ""  # 410 Gone: relist
                        break
                    rv = obj["metadata"].get("resourceVersion", rv)
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._see(obj)
                    if self._stop.is_set():
                        break
            except ApiException as error:
                if error.status == 410:
                    rv = ""
                time.sleep(0.05)
            except Exception:  # connection dropped by a fault: resume from rv
                time.sleep(0.05)


# ---------------------------------------------------------------- builders


def make_podgroup(
    name: str,
    min_member: int,
    *,
    queue: str | None = None,
    min_task_member: dict[str, int] | None = None,
    min_resources: dict[str, str] | None = None,
    priority_class: str | None = None,
) -> Obj:
    """A PodGroup manifest."""
    spec: Obj = {"minMember": min_member}
    if queue is not None:
        spec["queue"] = queue
    if min_task_member is not None:
        spec["minTaskMember"] = min_task_member
    if min_resources is not None:
        spec["minResources"] = min_resources
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }


def make_pod(
    name: str,
    *,
    group: str | None = None,
    cpu: str = "1",
    memory: str = "128Mi",
    role: str | None = None,
    scheduler_name: str = "muster",
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> Obj:
    """A pod manifest for muster: a gang member when `group` is given, `role` its task-spec."""
    meta_annotations = dict(annotations or {})
    if group is not None:
        meta_annotations[GROUP_NAME] = group
    if role is not None:
        meta_annotations[TASK_SPEC] = role
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": meta_annotations, "labels": dict(labels or {})},
        "spec": {
            "schedulerName": scheduler_name,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.36",
                    "command": ["sleep", "3600"],
                    "resources": {
                        "requests": {"cpu": cpu, "memory": memory},
                        "limits": {"cpu": cpu, "memory": memory},
                    },
                }
            ],
        },
    }


def make_gang(
    name: str, size: int, *, cpu: str = "1", min_member: int | None = None, **pod: Any
) -> tuple[Obj, list[Obj]]:
    """A PodGroup and `size` member pods named `<name>-<i>`."""
    podgroup = make_podgroup(name, size if min_member is None else min_member)
    pods = [make_pod(f"{name}-{i}", group=name, cpu=cpu, **pod) for i in range(size)]
    return podgroup, pods


def make_node(name: str, cpu: str, memory: str = "16Gi", pool: str | None = None) -> Obj:
    """A Ready Node with the given allocatable; in a suite pool, labelled and tainted for it."""
    capacity = {"cpu": cpu, "memory": memory, "pods": "110"}
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    spec: Obj = {}
    if pool is not None:
        labels[POOL_KEY] = pool
        spec["taints"] = [{"key": POOL_KEY, "value": pool, "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                }
            ],
            "addresses": [{"type": "Hostname", "address": name}],
        },
    }


def confine_to_pool(pod: Obj, pool: str) -> None:
    """Let the pod go only to the suite's nodes of `pool` (real clusters only)."""
    spec = pod["spec"]
    spec.setdefault("nodeSelector", {})[POOL_KEY] = pool
    spec.setdefault("tolerations", []).append(
        {"key": POOL_KEY, "operator": "Equal", "value": pool, "effect": "NoSchedule"}
    )


def scheduler_conf(
    path: Path,
    actions: str = "enqueue, allocate, backfill",
    configurations: Sequence[Obj] = (),
    plugins: Sequence[Obj] = (),
) -> Path:
    """Write the Volcano-shaped config the suite runs the scheduler with (`plugins` are
    added to the second tier)."""
    path.write_text(
        yaml.safe_dump(
            {
                "actions": actions,
                **({"configurations": list(configurations)} if configurations else {}),
                "tiers": [
                    {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
                    {
                        "plugins": [
                            {"name": "drf"},
                            {"name": "predicates"},
                            {"name": "proportion"},
                            {"name": "nodeorder"},
                            *plugins,
                        ]
                    },
                ],
            },
            sort_keys=False,
        )
    )
    return path


def autoscaler_flags(work_dir: Path, groups: Sequence[Obj], **timings: float) -> list[str]:
    """`muster sim` flags for its stand-in autoscaler: the node groups written to a file,
    and each timing (node_delay=0.5 -> --autoscaler-node-delay 0.5)."""
    path = work_dir / "node-groups.yaml"
    path.write_text(yaml.safe_dump({"nodeGroups": list(groups)}))
    flags = ["--autoscaler-node-groups", str(path)]
    for name, seconds in timings.items():
        flags += [f"--autoscaler-{name.replace('_', '-')}", str(seconds)]
    return flags


def environ_kubeconfig() -> Path | None:
    """The real cluster to run against, when MUSTER_E2E_KUBECONFIG is set."""
    value = os.environ.get(KUBECONFIG_ENV)
    return Path(value) if value else None


# ---------------------------------------------------------------- the controller


def controller_argv(kubeconfig: Path, *, health: int, webhook: int, ca: Path) -> list[str]:
    """`muster controller` as the suites run it: standalone, its webhook server on
    127.0.0.1:`webhook` with its CA written to `ca`, /healthz on `health`, and metrics on a
    port of its own (suites on one machine run controllers side by side)."""
    return [
        MUSTER,
        "controller",
        "--kubeconfig",
        str(kubeconfig),
        "--standalone",
        "--webhook-address",
        "127.0.0.1",
        "--webhook-port",
        str(webhook),
        "--webhook-cadump",
        str(ca),
        "--health-address",
        f"127.0.0.1:{health}",
        "--metrics-address",
        f"127.0.0.1:{free_port()}",
        "--log-level",
        "info",
    ]


class Controller:
    """A `muster controller` subprocess, its liveness endpoint and its HTTPS webhook server."""

    def __init__(self, process: Process, health_port: int, webhook_port: int, ca: Path) -> None:
        self.process = process
        self.health = f"http://127.0.0.1:{health_port}/healthz"
        self.webhooks = f"https://127.0.0.1:{webhook_port}"
        self.ca = ca

    def healthy(self) -> bool:
        return http_get(self.health)[0] == 200

    def review(
        self,
        path: str,
        resource: tuple[str, str, str],
        operation: str,
        obj: Obj | None,
        old: Obj | None = None,
        namespace: str | None = None,
    ) -> Obj:
        """POST an AdmissionReview to the webhook server, as the API server would; the response."""
        group, version, plural = resource
        request: Obj = {
            "uid": "e2e",
            "kind": {"group": group, "version": version, "kind": (obj or old or {}).get("kind")},
            "resource": {"group": group, "version": version, "resource": plural},
            "operation": operation,
            "userInfo": {"username": "e2e"},
            "object": obj,
            "oldObject": old,
        }
        if namespace is not None:
            request["namespace"] = namespace
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
        review["request"] = request
        # the self-signed certificate names 127.0.0.1, so the host name is checked too
        context = ssl.create_default_context(cafile=str(self.ca))
        data = json.dumps(review).encode()
        http = urllib.request.Request(
            self.webhooks + path, data=data, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(http, timeout=5, context=context) as answer:
            return dict(json.loads(answer.read())["response"])


# ---------------------------------------------------------------- identities


def apply_manifest(api: client.ApiClient, doc: Obj) -> None:
    """Create the object, or replace it when it exists (ServiceAccounts and RBAC only)."""
    kind, meta = doc["kind"], doc["metadata"]
    name, namespace = meta["name"], meta.get("namespace")
    rbac, core = client.RbacAuthorizationV1Api(api), client.CoreV1Api(api)
    # kind -> (create, replace); an existing ServiceAccount is kept, with its uid and tokens
    calls: dict[str, tuple[Callable[[], Any], Callable[[], Any] | None]] = {
        "ServiceAccount": (partial(core.create_namespaced_service_account, namespace, doc), None),
        "ClusterRole": (
            partial(rbac.create_cluster_role, doc),
            partial(rbac.replace_cluster_role, name, doc),
        ),
        "ClusterRoleBinding": (
            partial(rbac.create_cluster_role_binding, doc),
            partial(rbac.replace_cluster_role_binding, name, doc),
        ),
        "Role": (
            partial(rbac.create_namespaced_role, namespace, doc),
            partial(rbac.replace_namespaced_role, name, namespace, doc),
        ),
        "RoleBinding": (
            partial(rbac.create_namespaced_role_binding, namespace, doc),
            partial(rbac.replace_namespaced_role_binding, name, namespace, doc),
        ),
    }
    if kind not in calls:
        raise ValueError(f"apply_manifest: {kind} {name} is not a ServiceAccount or RBAC object")
    create, replace = calls[kind]
    try:
        create()
    except ApiException as error:
        if error.status != 409:
            raise
        if replace is not None:
            replace()


# A token's lifetime: a kubelet rotates a projected token before it runs out (its default
# lifetime is an hour); a process started here keeps its first one, so it asks for a day
# (the reliability campaign's hour-long soak ran into the hour: every write then a 401).
TOKEN_SECONDS = 86_400


def token_request() -> dict[str, Any]:
    """A TokenRequest body for a token that outlives any run of the suite or the campaign."""
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": TOKEN_SECONDS},
    }


class Identities:
    """Each muster process's ServiceAccount, its RBAC from deploy/, and a kubeconfig per process.

    The ServiceAccounts, Roles and bindings are those of deploy/base/<component>/ exactly, and
    the tokens come from the TokenRequest API: on sim and on a real cluster alike, a process
    gets no permission deploy/ does not grant it.
    """

    def __init__(self, cluster: Cluster, work_dir: Path) -> None:
        self.cluster = cluster
        self.work_dir = work_dir
        self._kubeconfigs: dict[str, Path] = {}

    def kubeconfig(self, component: str) -> Path:
        """The kubeconfig of `component` (scheduler, controller), provisioned on first use."""
        if component not in self._kubeconfigs:
            self._kubeconfigs[component] = self._provision(component)
        return self._kubeconfigs[component]

    def _provision(self, component: str) -> Path:
        directory = DEPLOY / component
        self.cluster.ensure_namespace(MUSTER_NAMESPACE)
        account = ""
        for file in ("serviceaccount.yaml", "rbac.yaml"):
            for doc in yaml.safe_load_all((directory / file).read_text()):
                if not isinstance(doc, dict):
                    continue
                apply_manifest(self.cluster.api, doc)
                if doc["kind"] == "ServiceAccount":
                    account = doc["metadata"]["name"]
        if not account:
            raise AssertionError(f"{directory}/serviceaccount.yaml defines no ServiceAccount")
        answer = self.cluster.core.create_namespaced_service_account_token(
            account,
            MUSTER_NAMESPACE,
            token_request(),
        )
        return write_token_kubeconfig(
            self.work_dir / f"{component}.kubeconfig",
            self.cluster.kubeconfig,
            answer.status.token,
            f"system:serviceaccount:{MUSTER_NAMESPACE}:{account}",
        )
