"""The scheduler's probes against sim over HTTP: a stalled loop or a dead task turns them red."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

import scheduler.server as server
from muster_sim.http.faults import FaultInjector
from muster_sim.server import SimConfig, SimServer
from scheduler.server import SchedulerOptions, SchedulerProcess
from tests.e2e.harness import free_port

CRDS = Path(__file__).resolve().parents[2] / "crds"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(SimConfig(nodes=1, crds_dir=CRDS)).running() as running:
        yield running


async def probe(url: str) -> tuple[int, str]:
    """Status and body; 0 while nothing listens yet."""
    try:
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return response.status, await response.text()
    except aiohttp.ClientConnectorError:
        return 0, ""


async def until(url: str, status: int, timeout: float) -> str:
    """Poll a probe until it answers `status`; its body then."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        code, body = await probe(url)
        if code == status:
            return body
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{url} still {code} {body!r} after {timeout}s")
        await asyncio.sleep(0.1)


def scheduler_process(sim: SimServer) -> tuple[SchedulerProcess, str]:
    port = free_port()
    options = SchedulerOptions(
        kubeconfig=str(sim.kubeconfig_path),
        schedule_period=0.05,
        metrics_address=f"127.0.0.1:{port}",
        leader_elect=False,
    )
    return SchedulerProcess(options), f"http://127.0.0.1:{port}"


@pytest.mark.timeout(60)
def test_a_cycle_that_fails_every_period_turns_healthz_red(
    sim: SimServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("a bug in a plugin")

    async def scenario() -> str:
        process, base = scheduler_process(sim)
        task = asyncio.get_running_loop().create_task(process.run())
        await until(base + "/readyz", 200, 10)
        await until(base + "/healthz", 200, 5)
        monkeypatch.setattr(server, "schedule", broken)
        process.world.generation += 1  # something changed: the next period runs a session
        body = await until(base + "/healthz", 503, 30)
        errors = process.metrics.cycles.labels("error")._value.get()
        process.stopping.set()
        await task
        assert errors >= 2
        return body

    assert "no scheduling cycle finished" in asyncio.run(scenario())


@pytest.mark.timeout(60)
def test_a_reflector_task_that_ended_turns_healthz_red(sim: SimServer) -> None:
    async def scenario() -> str:
        process, base = scheduler_process(sim)
        task = asyncio.get_running_loop().create_task(process.run())
        await until(base + "/healthz", 200, 10)
        for watched in process.health.tasks:
            if watched.get_name() == "reflector pod":
                watched.cancel()
        body = await until(base + "/healthz", 503, 5)
        process.stopping.set()
        await task
        return body

    assert asyncio.run(scenario()) == "task reflector pod ended"


def submit_gang(sim: SimServer, namespace: str, name: str, size: int, cpu: str) -> None:
    """A PodGroup of `size` pods of muster, each asking for `cpu` (through sim's own API)."""
    api = sim.api_server()

    def create() -> None:
        groups = api.kind("scheduling.volcano.sh", "v1beta1", "podgroups")
        pods = api.kind("", "v1", "pods")
        api.create(groups, namespace, {"metadata": {"name": name}, "spec": {"minMember": size}})
        for index in range(size):
            api.create(
                pods,
                namespace,
                {
                    "metadata": {
                        "name": f"{name}-{index}",
                        "annotations": {"scheduling.k8s.io/group-name": name},
                    },
                    "spec": {
                        "schedulerName": "muster",
                        "containers": [
                            {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
                        ],
                    },
                },
            )

    sim.call(create)


@pytest.fixture
def quick_progress_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # the probe's 30 s, shortened: the rule is the same, the test need not wait for it
    monkeypatch.setattr("scheduler.health.MIN_PROGRESS_SECONDS", 1.0)


@pytest.mark.timeout(60)
@pytest.mark.usefixtures("quick_progress_limit")
def test_binds_refused_while_a_gang_could_be_placed_turn_readyz_red(sim: SimServer) -> None:
    async def scenario() -> tuple[str, float | None]:
        process, base = scheduler_process(sim)
        task = asyncio.get_running_loop().create_task(process.run())
        await until(base + "/readyz", 200, 10)
        refuse = {"errors": [{"rate": 1.0, "code": 500, "resources": ["pods/binding"]}]}
        sim.faults.replace(FaultInjector.parse(json.dumps(refuse).encode()))
        try:
            submit_gang(sim, "default", "stuck", 2, "100m")
            body = await until(base + "/readyz", 503, 20)
            placeable = process.metrics.registry.get_sample_value("muster_placeable_gangs")
        finally:
            sim.faults.replace(FaultInjector.parse(b"{}"))
        await until(base + "/readyz", 200, 20)  # the binds go through: ready again
        process.stopping.set()
        await task
        return body, placeable

    body, placeable = asyncio.run(scenario())
    assert "1 gang(s) could be placed but no bind succeeded" in body
    assert placeable == 1


@pytest.mark.timeout(60)
@pytest.mark.usefixtures("quick_progress_limit")
def test_a_gang_too_big_for_the_cluster_is_no_stall(sim: SimServer) -> None:
    async def scenario() -> list[int]:
        process, base = scheduler_process(sim)
        task = asyncio.get_running_loop().create_task(process.run())
        await until(base + "/readyz", 200, 10)
        submit_gang(sim, "default", "huge", 2, "1000")
        pending = process.metrics.pending_pods
        while pending._value.get() < 2:  # a session saw it, and placed nothing
            await asyncio.sleep(0.05)
        codes = []
        # sixty periods over it: three times the shortened limit
        for _ in range(60):
            codes.append((await probe(base + "/readyz"))[0])
            await asyncio.sleep(0.05)
        process.stopping.set()
        await task
        return codes

    codes = asyncio.run(scenario())
    assert codes and set(codes) == {200}
