"""A replica that takes the lease runs its first session at once, not a schedule period later."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from muster_sim.server import SimConfig, SimServer
from scheduler.kube.clock import now_micro
from scheduler.server import SchedulerOptions, SchedulerProcess
from tests.e2e.harness import free_port
from tests.kube.test_health_probes import CRDS

LOCK = ("muster-system", "muster-scheduler")


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(SimConfig(nodes=1, crds_dir=CRDS)).running() as running:
        yield running


def lease_held_elsewhere(sim: SimServer, seconds: int) -> None:
    """The lock's Lease, renewed just now by another replica for `seconds`."""
    api = sim.api_server()

    def create() -> None:
        api.create(api.kind("", "v1", "namespaces"), None, {"metadata": {"name": LOCK[0]}})
        api.create(
            api.kind("coordination.k8s.io", "v1", "leases"),
            LOCK[0],
            {
                "metadata": {"name": LOCK[1]},
                "spec": {
                    "holderIdentity": "a-replica-that-died",
                    "leaseDurationSeconds": seconds,
                    "renewTime": now_micro(),
                },
            },
        )

    sim.call(create)


@pytest.mark.timeout(60)
def test_the_first_session_of_a_new_leader_does_not_wait_out_its_period(sim: SimServer) -> None:
    lease_held_elsewhere(sim, seconds=2)
    options = SchedulerOptions(
        kubeconfig=str(sim.kubeconfig_path),
        schedule_period=30.0,
        metrics_address=f"127.0.0.1:{free_port()}",
        leader_elect=True,
        lock_namespace=LOCK[0],
        lock_name=LOCK[1],
    )

    async def scenario() -> tuple[float, float]:
        process = SchedulerProcess(options)
        task = asyncio.get_running_loop().create_task(process.run())
        assert process.elector is not None
        sessions = process.metrics.cycles.labels("session")
        while not process.elector.is_leader:
            await asyncio.sleep(0.01)
        led = time.monotonic()
        # the loop took a standby's turn before the lease expired; its period is 30 s
        while sessions._value.get() < 1:
            await asyncio.sleep(0.01)
        first = time.monotonic()
        process.stopping.set()
        await task
        return led, first

    led, first = asyncio.run(scenario())
    assert first - led < 5.0, f"the first session came {first - led:.1f}s after the lease"
