"""Fixtures for the e2e suite: a fresh API server, a namespace and muster schedulers per test.

By default each test gets its own `muster sim` subprocess whose nodes come from the
test's `nodes` marker; sim runs as strict as kube-apiserver (HTTPS, authentication, RBAC).
The test code uses the admin kubeconfig; each muster process runs as its ServiceAccount of
deploy/base/<component>/, with exactly the RBAC there and a token from TokenRequest.
With MUSTER_E2E_KUBECONFIG set, tests run against that cluster instead (the same
ServiceAccounts, RBAC and TokenRequest), each on simulated Node objects of its own (named
`muster-e2e-...`, labelled and tainted so that only that test's pods go there).
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import (
    MUSTER,
    Cluster,
    Controller,
    Identities,
    Process,
    Scheduler,
    Sim,
    autoscaler_flags,
    controller_argv,
    environ_kubeconfig,
    free_port,
    scheduler_conf,
    wait_for,
)

PROCESSES = pytest.StashKey[list[Process]]()
LOCK_NAMESPACE = "muster-system"
StartScheduler = Callable[..., Scheduler]
StartController = Callable[..., Controller]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "nodes(count, cpu, memory): the nodes the test's cluster starts with"
    )
    config.addinivalue_line(
        "markers",
        "autoscaler(groups, **timings): sim runs its stand-in cluster autoscaler with these "
        "node groups (the test is skipped on a real cluster)",
    )
    config.addinivalue_line(
        "markers",
        "native_api(version): sim serves Kubernetes' own gang API at this version (on a real "
        "cluster, the test is skipped unless the server serves it)",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """On failure, attach the tail of every process the test started to its report."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    for process in item.stash.get(PROCESSES, []):
        report.sections.append((f"{process.describe()}: last lines", process.tail(60)))


@pytest.fixture
def processes(request: pytest.FixtureRequest) -> Iterator[list[Process]]:
    """Every process the test starts; all stopped at teardown, whatever happened."""
    started: list[Process] = []
    request.node.stash[PROCESSES] = started
    yield started
    for process in reversed(started):
        process.stop()


@pytest.fixture
def cluster(
    request: pytest.FixtureRequest, tmp_path: Path, processes: list[Process]
) -> Iterator[Cluster]:
    """The API server for this test, with the nodes its `nodes` marker asks for."""
    marker = request.node.get_closest_marker("nodes")
    spec: dict[str, Any] = {"count": 2, "cpu": "4", "memory": "16Gi"}
    if marker is not None:
        spec.update(dict(zip(("count", "cpu", "memory"), marker.args, strict=False)))
        spec.update(marker.kwargs)
    real = environ_kubeconfig()
    autoscaler = request.node.get_closest_marker("autoscaler")
    native = request.node.get_closest_marker("native_api")
    if real is None:
        extra = list(autoscaler_flags(tmp_path, **autoscaler.kwargs) if autoscaler else ())
        if native is not None:
            extra += ["--native-api", native.args[0]]
        sim = Sim.start(tmp_path, spec["count"], str(spec["cpu"]), str(spec["memory"]), extra=extra)
        processes.append(sim.process)
        api = Cluster(sim.kubeconfig, sim)
        yield api
        api.close()
        return
    if autoscaler is not None:
        pytest.skip("needs muster sim's stand-in autoscaler (MUSTER_E2E_KUBECONFIG is set)")
    api = Cluster(real, None, pool=uuid.uuid4().hex[:8])
    if native is not None and not api.serves_native(native.args[0]):
        api.close()
        pytest.skip(f"the API server does not serve scheduling.k8s.io/{native.args[0]} podgroups")
    stop = threading.Event()
    kubelet = threading.Thread(target=api.confirm_deletions, args=(stop,), daemon=True)
    kubelet.start()
    try:
        for index in range(spec["count"]):
            api.add_node(f"n{index}", str(spec["cpu"]), str(spec["memory"]))
        yield api
    finally:
        stop.set()
        kubelet.join(timeout=5)
        api.delete_created_queues()
        api.delete_created_nodes()
        api.close()


@pytest.fixture
def needs_sim(cluster: Cluster) -> Sim:
    """sim's admin endpoint; the test is skipped on a real cluster, which has none."""
    if cluster.sim is None:
        pytest.skip("needs muster sim's fault injection (MUSTER_E2E_KUBECONFIG is set)")
    return cluster.sim


@pytest.fixture
def namespace(request: pytest.FixtureRequest, cluster: Cluster) -> Iterator[str]:
    """A namespace of the test's own, deleted afterwards."""
    stem = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower().removeprefix("test_"))
    name = f"e2e-{stem[:40].strip('-')}-{uuid.uuid4().hex[:5]}"
    cluster.create_namespace(name)
    yield name
    cluster.delete_namespace(name)


@pytest.fixture
def identities(cluster: Cluster, tmp_path: Path) -> Identities:
    """The ServiceAccounts of deploy/ and a kubeconfig with a token for each muster process."""
    return Identities(cluster, tmp_path)


@pytest.fixture
def start_scheduler(
    cluster: Cluster, identities: Identities, tmp_path: Path, processes: list[Process]
) -> StartScheduler:
    """Start `muster scheduler` as its ServiceAccount; returns once /readyz is 200."""
    conf = scheduler_conf(tmp_path / "scheduler.yaml")
    count = 0

    def start(
        *,
        names: Sequence[str] = ("muster",),
        period: float = 0.2,
        leader_elect: bool = False,
        wait_ready: bool = True,
        extra: Sequence[str] = (),
        actions: str | None = None,
        configurations: Sequence[dict[str, Any]] = (),
        plugins: Sequence[dict[str, Any]] = (),
    ) -> Scheduler:
        nonlocal count
        count += 1
        port = free_port()
        conf_path = conf
        if actions is not None or configurations or plugins:
            conf_path = scheduler_conf(
                tmp_path / f"scheduler-{count}.yaml",
                actions or "enqueue, allocate, backfill",
                configurations,
                plugins,
            )
        argv = [
            MUSTER,
            "scheduler",
            "--kubeconfig",
            str(identities.kubeconfig("scheduler")),
            "--scheduler-conf",
            str(conf_path),
            "--schedule-period",
            f"{period}s",
            "--default-queue",
            "default",
            "--metrics-address",
            f"127.0.0.1:{port}",
            "--log-format",
            "text",
            "--log-level",
            "info",
            "--kube-api-qps",
            "500",
            "--kube-api-burst",
            "1000",
        ]
        for name in names:
            argv += ["--scheduler-name", name]
        if leader_elect:
            cluster.ensure_namespace(LOCK_NAMESPACE)
            argv += [
                "--leader-elect",
                "--lock-namespace",
                LOCK_NAMESPACE,
                "--lock-name",
                cluster.lock_name,
            ]
        else:
            argv.append("--no-leader-elect")
        process = Process(
            f"muster scheduler #{count}", [*argv, *extra], tmp_path / f"scheduler-{count}.log"
        )
        processes.append(process)
        scheduler = Scheduler(process, port, period)
        if wait_ready:
            wait_until_ready(scheduler)
        return scheduler

    return start


def wait_until_ready(scheduler: Scheduler, timeout: float = 20.0) -> None:
    """Wait for /readyz, failing at once with the log if the process exits."""

    def ready() -> bool:
        if not scheduler.process.alive:
            raise AssertionError(
                f"{scheduler.process.describe()} exited before ready:\n{scheduler.process.tail()}"
            )
        return scheduler.ready()

    wait_for(ready, timeout, message=lambda: f"{scheduler.process.describe()} /readyz 200")


@pytest.fixture
def start_controller(
    cluster: Cluster, identities: Identities, tmp_path: Path, processes: list[Process]
) -> StartController:
    """Start `muster controller` as its ServiceAccount; returns once it is healthy.

    Its webhook server listens on 127.0.0.1 with a self-signed certificate whose CA it
    writes to the test's directory, for the suite to call it over HTTPS.
    """

    def start(*, names: Sequence[str] = ("muster",), extra: Sequence[str] = ()) -> Controller:
        # A port free_port() found can be taken by another process before the controller
        # binds it (kopf then exits: "address already in use"): try again on other ports.
        for _ in range(2):
            try:
                return start_once(names, extra)
            except PortTaken:
                continue
        return start_once(names, extra)

    def start_once(names: Sequence[str], extra: Sequence[str]) -> Controller:
        health, webhook = free_port(), free_port()
        ca = tmp_path / "webhook-ca.pem"
        kubeconfig = identities.kubeconfig("controller")
        argv = controller_argv(kubeconfig, health=health, webhook=webhook, ca=ca)
        argv += ["--log-format", "text"]
        for name in names:
            argv += ["--scheduler-name", name]
        process = Process("muster controller", [*argv, *extra], tmp_path / "controller.log")
        processes.append(process)
        controller = Controller(process, health, webhook, ca)

        def healthy() -> bool:
            if not process.alive:
                tail = process.tail()
                if "address already in use" in tail:
                    raise PortTaken(tail)
                raise AssertionError(f"{process.describe()} exited early:\n{tail}")
            return controller.healthy() and ca.exists()

        wait_for(healthy, 20, message=lambda: f"{process.describe()} /healthz 200")
        return controller

    return start


class PortTaken(Exception):
    """A process of the suite exited because a port chosen for it was taken meanwhile."""
