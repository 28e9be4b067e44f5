"""The kube layer (client, reflectors, leader election) against muster sim over real HTTP."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from muster_sim.server import SimConfig, SimServer
from scheduler.api import wire
from scheduler.cache.kinds import pods
from scheduler.cache.reflector import Kind, Reflector
from scheduler.cache.world import World
from scheduler.kube.client import KubeClient
from scheduler.kube.config import load_configuration
from scheduler.kube.errors import Conflict, Fenced
from scheduler.kube.lease import LeaderElector

CRDS = Path(__file__).resolve().parents[2] / "crds"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    config = SimConfig(
        nodes=2,
        node_cpu="4",
        node_memory="8Gi",
        crds_dir=CRDS,
        pod_start_delay=0.02,
        bookmark_interval=0.2,
    )
    with SimServer(config).running() as server:
        yield server


def admin(sim: SimServer, path: str, body: Any = None, method: str = "PUT") -> None:
    """A request to sim's admin endpoints, over HTTPS as its admin (system:masters)."""
    assert sim.cert is not None
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {sim.admin_token}"}
    request = urllib.request.Request(sim.url + path, data=data, method=method, headers=headers)
    context = ssl.create_default_context(cafile=str(sim.cert.ca_path))
    urllib.request.urlopen(request, context=context).read()


def run(sim: SimServer, work: Callable[[KubeClient], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with KubeClient(load_configuration(str(sim.kubeconfig_path))) as client:
            return await work(client)

    return asyncio.run(main())


async def create_pod(client: KubeClient, name: str, namespace: str = "default") -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"schedulerName": "muster", "containers": [{"name": "c", "image": "x"}]},
    }
    created = await client.create(f"/api/v1/namespaces/{namespace}/pods", body)
    result: dict[str, Any] = json.loads(created)
    return result


async def wait_until(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


def test_bind_to_the_node_a_pod_already_has_counts_as_success(sim: SimServer) -> None:
    async def work(client: KubeClient) -> str:
        pod = await create_pod(client, "twice")
        uid = pod["metadata"]["uid"]
        await client.bind("default", "twice", uid, "sim-node-0")
        await client.bind("default", "twice", uid, "sim-node-0")
        try:
            await client.bind("default", "twice", uid, "sim-node-1")
        except Conflict as error:
            return error.message
        return "no conflict"

    assert "already assigned" in run(sim, work)


def test_binds_survive_a_third_of_them_failing_with_5xx(sim: SimServer) -> None:
    admin(
        sim,
        "/sim/faults",
        {"errors": [{"rate": 0.33, "code": 503, "resources": ["pods/binding"]}], "seed": 7},
    )
    try:

        async def work(client: KubeClient) -> int:
            pods = [await create_pod(client, f"flaky-{i}") for i in range(30)]
            await asyncio.gather(
                *(
                    client.bind(
                        "default", p["metadata"]["name"], p["metadata"]["uid"], "sim-node-1"
                    )
                    for p in pods
                )
            )
            listing = await client.get_json("/api/v1/namespaces/default/pods")
            return sum(
                1
                for p in listing["items"]
                if p["metadata"]["name"].startswith("flaky-") and p["spec"].get("nodeName")
            )

        assert run(sim, work) == 30
    finally:
        admin(sim, "/sim/faults", {})


def test_reflector_relists_after_history_is_compacted_and_forgets_deleted_objects(
    sim: SimServer,
) -> None:
    async def work(client: KubeClient) -> None:
        world = World()
        kind: Kind[wire.Pod] = pods.HANDLER.bind(world)
        relists: list[str] = []
        reflector = Reflector(client, kind, watch_timeout=5, on_restart=relists.append)
        loop = asyncio.get_running_loop()
        task = loop.create_task(reflector.run())
        try:
            await asyncio.wait_for(reflector.synced.wait(), 5)
            gone = await create_pod(client, "soon-gone")
            await wait_until(lambda: gone["metadata"]["uid"] in world.tasks)
            # An outage: the reflector is away while things change and history is compacted.
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await client.request(
                "DELETE",
                "/api/v1/namespaces/default/pods/soon-gone",
                params={"gracePeriodSeconds": "0"},
            )
            fresh = await create_pod(client, "after-compaction")
            admin(sim, "/sim/compact", {}, method="POST")
            task = loop.create_task(reflector.run())
            await wait_until(
                lambda: (
                    fresh["metadata"]["uid"] in world.tasks
                    and gone["metadata"]["uid"] not in world.tasks
                ),
                timeout=10,
            )
            assert "relist" in relists
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    run(sim, work)


def elector(
    client: KubeClient,
    identity: str,
    *,
    lock: str = "lock",
    lease_duration: float = 30,
    renew_deadline: float = 20,
) -> LeaderElector:
    """An elector for a lease in the default namespace, trying every 0.05 s."""
    return LeaderElector(
        client,
        namespace="default",
        name=lock,
        identity=identity,
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=0.05,
    )


def test_two_electors_one_leader_and_release_hands_over_at_once(sim: SimServer) -> None:
    async def work(client: KubeClient) -> None:
        first, second = elector(client, "first"), elector(client, "second")
        tasks = [asyncio.get_running_loop().create_task(e.run()) for e in (first, second)]
        try:
            await wait_until(lambda: first.is_leader or second.is_leader)
            await asyncio.sleep(0.3)  # several retry periods: the other must not take over
            assert first.is_leader != second.is_leader
            leader, standby = (first, second) if first.is_leader else (second, first)
            tasks[0 if leader is first else 1].cancel()
            await leader.release()
            # Far sooner than the 30 s lease: the released lease is free at once.
            await wait_until(lambda: standby.is_leader, timeout=3)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    run(sim, work)


def test_a_lease_not_given_up_passes_to_the_standby_only_once_it_expires(sim: SimServer) -> None:
    async def work(client: KubeClient) -> tuple[bool, float]:
        def short(name: str) -> LeaderElector:
            return elector(client, name, lock="kept-lock", lease_duration=2, renew_deadline=1.5)

        first = short("first")
        first_task = asyncio.get_running_loop().create_task(first.run())
        second = short("second")
        second_task: asyncio.Task[None] | None = None
        try:
            await wait_until(lambda: first.is_leader)
            second_task = asyncio.get_running_loop().create_task(second.run())
            first_task.cancel()
            # Shutdown with a write of the leader's unanswered: the lease is left to expire.
            stopped = time.monotonic()
            await first.release(give_up=False)
            leading_after_release = first.is_leader
            await wait_until(lambda: second.is_leader, timeout=10)
            return leading_after_release, time.monotonic() - stopped
        finally:
            for task in (first_task, second_task):
                if task is not None:
                    task.cancel()
            await asyncio.gather(
                *(t for t in (first_task, second_task) if t is not None), return_exceptions=True
            )

    leading, waited = run(sim, work)
    assert leading is False, "a replica that stopped leads no more, whatever its lease"
    # Not at once, as a released lease would pass: at its expiry (2 s after the last renewal).
    assert waited > 1.0


def test_a_bind_whose_gate_closes_while_it_waits_for_a_connection_is_never_sent(
    sim: SimServer,
) -> None:
    async def work(client: KubeClient) -> tuple[bool, str]:
        pod = await create_pod(client, "fenced")
        async with KubeClient(
            load_configuration(str(sim.kubeconfig_path)), connections=1
        ) as narrow:
            # The one connection is held by a watch (open once its first event, the pod's
            # ADDED, arrives), so the bind queues for it.
            opened = asyncio.Event()

            async def hold() -> None:
                params = {"timeoutSeconds": "1"}
                async for _ in narrow.watch("/api/v1/namespaces/default/pods", params, timeout=1):
                    opened.set()

            holder = asyncio.get_running_loop().create_task(hold())
            await opened.wait()
            leading = [True]
            bind = asyncio.get_running_loop().create_task(
                narrow.bind(
                    "default",
                    "fenced",
                    pod["metadata"]["uid"],
                    "sim-node-0",
                    gate=lambda: leading[0],
                )
            )
            await asyncio.sleep(0.05)  # the bind is now queued behind the watch
            assert not bind.done()
            leading[0] = False  # the lease is lost while the bind waits
            fenced = False
            try:
                await bind
            except Fenced:
                fenced = True
            await holder
        got = await client.get_json("/api/v1/namespaces/default/pods/fenced")
        return fenced, str(got["spec"].get("nodeName", ""))

    assert run(sim, work) == (True, "")


def test_a_bind_whose_gate_stays_open_is_sent(sim: SimServer) -> None:
    async def work(client: KubeClient) -> str:
        pod = await create_pod(client, "gated")
        await client.bind(
            "default", "gated", pod["metadata"]["uid"], "sim-node-1", gate=lambda: True
        )
        got = await client.get_json("/api/v1/namespaces/default/pods/gated")
        return str(got["spec"].get("nodeName", ""))

    assert run(sim, work) == "sim-node-1"
