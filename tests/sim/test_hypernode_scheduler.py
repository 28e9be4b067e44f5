"""A `muster scheduler` process against sim keeps the cluster's HyperNodes in its
snapshots (an unusable one reported as an event), and one against a cluster without
the HyperNode CRD is ready with none, then picks them up once the CRD is installed."""

from __future__ import annotations

import asyncio
import inspect
import json
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from muster_sim.server import SimServer
from scheduler.cache.kinds import hypernodes
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import NotFound
from scheduler.server import SchedulerOptions, SchedulerProcess
from tests.e2e.harness import free_port
from tests.sim.conftest import sim_config

CRDS = Path(__file__).resolve().parents[2] / "crds"

HYPERNODES_PATH = hypernodes.HANDLER.path


def hypernode(name: str, tier: int, members: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": members},
    }


def exact(name: str, member_type: str = "Node") -> dict[str, Any]:
    return {"type": member_type, "selector": {"exactMatch": {"name": name}}}


def scheduler_process(sim: SimServer) -> tuple[SchedulerProcess, str]:
    port = free_port()
    options = SchedulerOptions(
        kubeconfig=str(sim.kubeconfig_path),
        schedule_period=0.05,
        metrics_address=f"127.0.0.1:{port}",
        leader_elect=False,
    )
    return SchedulerProcess(options), f"http://127.0.0.1:{port}"


async def until(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    """Poll a check (plain or async) until it gives something truthy; that value."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(0.05)


async def ready(base: str) -> bool:
    return await readyz(base) == 200


async def readyz(base: str) -> int:
    try:
        async with aiohttp.ClientSession() as session, session.get(base + "/readyz") as answer:
            return answer.status
    except aiohttp.ClientConnectorError:
        return 0


async def run_with(process: SchedulerProcess, scenario: Callable[[], Awaitable[None]]) -> None:
    task = asyncio.get_running_loop().create_task(process.run())
    try:
        await scenario()
    finally:
        process.stopping.set()
        await task


@pytest.mark.timeout(90)
def test_the_scheduler_sees_the_clusters_hypernodes_and_reports_an_unusable_one() -> None:
    with SimServer(sim_config(nodes=2, crds_dir=CRDS)).running() as sim:
        process, base = scheduler_process(sim)
        client = process.client

        async def scenario() -> None:
            # One before the scheduler lists, the rest while it watches.
            await client.create(HYPERNODES_PATH, hypernode("rack-a", 1, [exact("node-0")]))
            await until(lambda: ready(base))
            await client.create(HYPERNODES_PATH, hypernode("rack-b", 1, [exact("node-1")]))
            spine = hypernode(
                "spine", 2, [exact("rack-a", "HyperNode"), exact("rack-b", "HyperNode")]
            )
            await client.create(HYPERNODES_PATH, spine)
            # A member without a selector passes the CRD; muster cannot use it.
            await client.create(HYPERNODES_PATH, hypernode("rack-bad", 1, [{"type": "Node"}]))

            def all_in() -> bool:
                snapshot = process.world.snapshot()
                return sorted(snapshot.hypernodes) == ["rack-a", "rack-b", "spine"] and any(
                    e.kind == "HyperNode" for e in snapshot.invalid
                )

            await until(all_in)
            snapshot = process.world.snapshot()
            assert [m.exact_name for m in snapshot.hypernodes["spine"].members] == [
                "rack-a",
                "rack-b",
            ]
            (bad,) = [e for e in snapshot.invalid if e.kind == "HyperNode"]
            assert (bad.name, bad.field) == ("rack-bad", "spec.members[0].selector")
            assert process.world.counts()["hypernode"] == 3

            async def warned() -> list[dict[str, Any]]:
                # A cluster-scoped object's event lives in "default", as kube's do.
                listed = json.loads(
                    await client.request("GET", "/api/v1/namespaces/default/events")
                )
                return [
                    e
                    for e in listed["items"]
                    if e["involvedObject"]["kind"] == "HyperNode"
                    and e["involvedObject"]["name"] == "rack-bad"
                ]

            (event,) = await until(warned)
            assert event["type"] == "Warning" and event["reason"] == "InvalidObject"
            assert "spec.members[0].selector" in event["message"]

            await client.request("DELETE", f"{HYPERNODES_PATH}/rack-b")
            await until(lambda: "rack-b" not in process.world.snapshot().hypernodes)

        asyncio.run(run_with(process, scenario))


@pytest.mark.timeout(90)
def test_without_the_crd_the_scheduler_is_ready_and_picks_hypernodes_up_once_installed(
    tmp_path: Path,
) -> None:
    crds = tmp_path / "crds"
    crds.mkdir()
    for name in ("podgroup.yaml", "queue.yaml"):
        shutil.copy(CRDS / name, crds / name)
    with SimServer(sim_config(nodes=1, crds_dir=crds)).running() as sim:
        process, base = scheduler_process(sim)
        (reflector,) = [r for r in process.reflectors if r.name == "hypernode"]
        reflector.absent_recheck = 0.2  # 60 s in production; the behaviour, not the period
        client: KubeClient = process.client

        async def scenario() -> None:
            await until(lambda: ready(base))
            assert process.world.snapshot().hypernodes == {}
            assert reflector.is_synced() and reflector.broken_since() is None
            crd = yaml.safe_load((CRDS / "hypernode.yaml").read_text())
            await client.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)

            async def created() -> bool:
                try:
                    await client.create(HYPERNODES_PATH, hypernode("rack-a", 1, [exact("node-0")]))
                except NotFound:  # the CRD is not served yet
                    return False
                return True

            await until(created)
            await until(lambda: "rack-a" in process.world.snapshot().hypernodes)
            assert await readyz(base) == 200

        asyncio.run(run_with(process, scenario))
