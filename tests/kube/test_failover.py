"""A replica that takes the lease runs its first session at once, not a schedule period later;
that session is bounded, and the next follows at once."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator

import pytest

from muster_sim.errors import ApiError
from muster_sim.server import SimConfig, SimServer
from scheduler.framework.decisions import SessionResult
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


def backlog(sim: SimServer, gangs: int, size: int) -> None:
    """`gangs` PodGroups of `size` small pods each, all pending."""
    api = sim.api_server()

    def create() -> None:
        with contextlib.suppress(ApiError):  # made by the test before, when it ran
            api.create(api.kind("", "v1", "namespaces"), None, {"metadata": {"name": LOCK[0]}})
        for index in range(gangs):
            api.create(
                api.kind("scheduling.volcano.sh", "v1beta1", "podgroups"),
                "default",
                {"metadata": {"name": f"g{index}"}, "spec": {"minMember": size}},
            )
            for member in range(size):
                api.create(
                    api.kind("", "v1", "pods"),
                    "default",
                    {
                        "metadata": {
                            "name": f"g{index}-{member}",
                            "annotations": {"scheduling.k8s.io/group-name": f"g{index}"},
                        },
                        "spec": {
                            "schedulerName": "muster",
                            "containers": [
                                {
                                    "name": "m",
                                    "image": "x",
                                    "resources": {"requests": {"cpu": "10m"}},
                                }
                            ],
                        },
                    },
                )

    sim.call(create)


@pytest.mark.timeout(60)
def test_a_new_leaders_first_session_is_bounded_and_the_next_follows_at_once(
    sim: SimServer,
) -> None:
    backlog(sim, gangs=6, size=2)
    lock = (LOCK[0], "bounded-takeover")
    options = SchedulerOptions(
        kubeconfig=str(sim.kubeconfig_path),
        schedule_period=30.0,
        metrics_address=f"127.0.0.1:{free_port()}",
        leader_elect=True,
        lock_namespace=lock[0],
        lock_name=lock[1],
        first_session_pods=4,
    )

    async def scenario() -> tuple[list[int], float, float]:
        process = SchedulerProcess(options)
        placed: list[int] = []
        apply = process.effects.apply

        def counted(result: SessionResult) -> None:
            if result.binds:
                placed.append(len(result.binds))
            apply(result)

        process.effects.apply = counted  # type: ignore[method-assign]
        task = asyncio.get_running_loop().create_task(process.run())
        assert process.elector is not None
        while not process.elector.is_leader:
            await asyncio.sleep(0.01)
        led = time.monotonic()
        while sum(placed) < 12:
            await asyncio.sleep(0.01)
        done = time.monotonic()
        process.stopping.set()
        await task
        return placed, led, done

    placed, led, done = asyncio.run(scenario())
    # Two whole gangs first, then the rest at once: not a 30 s period later.
    assert placed == [4, 8]
    assert done - led < 5.0, f"the backlog took {done - led:.1f}s after the lease"
