"""A leader stopped past its lease and resumed sends none of the writes it had queued after its
successor took over: status writes and events ask the leader's fence as they are sent, on the
real lanes (scheduler/effects/fence.py). A leader shut down sends what it had queued before
it releases the lease, and nothing after."""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from muster_sim.server import SimConfig, SimServer
from scheduler.framework.decisions import SessionResult
from scheduler.kube.clock import now_micro
from scheduler.server import SchedulerOptions, SchedulerProcess
from tests.e2e.harness import free_port
from tests.kube.test_health_probes import CRDS

LOCK = ("muster-system", "muster-scheduler")
# The leader's timings, shortened (client-go's are 15 s, 10 s, 2 s): a stop of FREEZE
# seconds outlasts its lease, and the successor takes over TAKE_OVER seconds into it.
LEASE, RENEW_DEADLINE, RETRY = 2.0, 1.0, 0.25
FREEZE, TAKE_OVER = 3.5, 2.5


@pytest.fixture
def sim() -> Iterator[SimServer]:
    with SimServer(SimConfig(nodes=1, node_cpu="4", crds_dir=CRDS)).running() as running:
        api = running.api_server()
        running.call(
            lambda: api.create(
                api.kind("", "v1", "namespaces"), None, {"metadata": {"name": LOCK[0]}}
            )
        )
        yield running


def take_over(sim: SimServer) -> None:
    """Another replica takes the lease (for an hour: the stopped one must not get it back)."""
    api = sim.api_server()
    kind = api.kind("coordination.k8s.io", "v1", "leases")

    def write() -> None:
        # A copy: the store's own object changes only through a write.
        lease = copy.deepcopy(api.get(kind, LOCK[0], LOCK[1]))
        lease["spec"].update(
            holderIdentity="the-successor",
            leaseDurationSeconds=3600,
            acquireTime=now_micro(),
            renewTime=now_micro(),
        )
        api.update(kind, LOCK[0], LOCK[1], lease)

    sim.call(write)


def gang_that_waits(sim: SimServer) -> None:
    """A PodGroup and a pod no node can hold: its session writes a PodGroup status, a pod
    condition and events, and binds nothing."""
    api = sim.api_server()

    def create() -> None:
        api.create(
            api.kind("scheduling.volcano.sh", "v1beta1", "podgroups"),
            "default",
            {"metadata": {"name": "big"}, "spec": {"minMember": 1}},
        )
        api.create(
            api.kind("", "v1", "pods"),
            "default",
            {
                "metadata": {
                    "name": "big-0",
                    "annotations": {"scheduling.k8s.io/group-name": "big"},
                },
                "spec": {
                    "schedulerName": "muster",
                    "containers": [
                        {"name": "m", "image": "x", "resources": {"requests": {"cpu": "100"}}}
                    ],
                },
            },
        )

    sim.call(create)


def options_on(sim: SimServer) -> SchedulerOptions:
    return SchedulerOptions(
        kubeconfig=str(sim.kubeconfig_path),
        schedule_period=0.2,
        metrics_address=f"127.0.0.1:{free_port()}",
        leader_elect=True,
        lock_namespace=LOCK[0],
        lock_name=LOCK[1],
    )


def records(sim: SimServer) -> list[dict[str, Any]]:
    audit = sim.audit
    assert audit is not None
    return [json.loads(line) for line in sim.call(lambda: audit.since(0))]


def stale_renewal(record: dict[str, Any]) -> bool:
    """A Lease write the API server refused for its stale resourceVersion."""
    return bool(
        record["objectRef"]["resource"] == "leases"
        and record.get("responseStatus", {}).get("code") == 409
    )


def first_queue_states(log: list[dict[str, Any]]) -> set[int]:
    """The audit records that set a queue's state where it had none: the default queue's,
    which every replica writes at its start, leading or not, on the version it read
    without one (effects/queues.py), so it cannot overwrite anyone's; the chaos audit
    exempts it too (bench/chaos/invariants.py)."""
    states: dict[str, str] = {}
    found: set[int] = set()
    for record in log:
        ref = record["objectRef"]
        stored = record.get("responseObject") or {}
        if ref["resource"] != "queues" or record.get("responseStatus", {}).get("code") != 200:
            continue
        state = str((stored.get("status") or {}).get("state") or "")
        if ref.get("subresource") == "status" and state and not states.get(ref.get("name"), ""):
            found.add(record["seq"])
        states[str(ref.get("name"))] = state
    return found


@pytest.mark.timeout(60)
def test_a_leader_stopped_past_its_lease_sends_nothing_it_had_queued(sim: SimServer) -> None:
    async def scenario() -> SchedulerProcess:
        process = SchedulerProcess(options_on(sim))
        elector = process.elector
        assert elector is not None
        elector.lease_duration, elector.renew_deadline = LEASE, RENEW_DEADLINE
        elector.retry_period = RETRY
        frozen = threading.Event()
        apply = process.effects.apply

        def apply_then_stop(result: SessionResult) -> None:
            apply(result)
            if result.podgroups and not frozen.is_set():
                # The writes are queued; the process stops (as under SIGSTOP) past its lease
                # while the successor takes over.
                frozen.set()
                threading.Timer(TAKE_OVER, take_over, (sim,)).start()
                time.sleep(FREEZE)

        process.effects.apply = apply_then_stop  # type: ignore[method-assign]
        task = asyncio.get_running_loop().create_task(process.run())
        while not elector.is_leader:
            await asyncio.sleep(0.05)
        gang_that_waits(sim)
        while not frozen.is_set():
            await asyncio.sleep(0.05)
        # Resumed: the lanes and the event writers get their turn now.
        await asyncio.sleep(1.0)
        process.stopping.set()
        await task
        return process

    process = asyncio.run(scenario())
    log = records(sim)
    taken = next(
        r["seq"]
        for r in log
        if r["objectRef"]["resource"] == "leases"
        and (r.get("responseObject") or {}).get("spec", {}).get("holderIdentity") == "the-successor"
    )
    # The elector may still send the renewal of a Lease it read just before it stopped: the
    # API server refuses it (409: its resourceVersion is stale), as it refuses client-go's.
    # Nothing else may be sent, refused or not.
    exempt = first_queue_states(log)
    after = [
        f"{r['verb']} {r['objectRef']['resource']}/{r['objectRef'].get('subresource', '')}"
        f" {r.get('responseStatus', {}).get('code')}"
        for r in log
        if r["seq"] > taken and not stale_renewal(r) and r["seq"] not in exempt
    ]
    assert after == [], f"sent after the successor took the lease: {after}"
    fenced = process.metrics.registry.get_sample_value(
        "muster_status_writes_total", {"kind": "podgroup", "result": "fenced"}
    )
    assert fenced, "the PodGroup's status was not queued when the leader stopped"
    dropped = process.metrics.registry.get_sample_value("muster_events_dropped_total")
    assert dropped, "no event was queued when the leader stopped"


@pytest.mark.timeout(60)
def test_a_leader_shut_down_sends_its_queued_writes_before_it_releases_the_lease(
    sim: SimServer,
) -> None:
    async def scenario() -> None:
        process = SchedulerProcess(options_on(sim))
        apply = process.effects.apply

        def apply_then_stop(result: SessionResult) -> None:
            apply(result)
            if result.podgroups:
                process.stopping.set()  # SIGTERM, with the session's writes still queued

        process.effects.apply = apply_then_stop  # type: ignore[method-assign]
        task = asyncio.get_running_loop().create_task(process.run())
        assert process.elector is not None
        while not process.elector.is_leader:
            await asyncio.sleep(0.05)
        gang_that_waits(sim)
        await task

    asyncio.run(scenario())
    log = records(sim)
    released = next(
        r["seq"]
        for r in log
        if r["objectRef"]["resource"] == "leases"
        and r["objectRef"].get("name") == LOCK[1]
        and (r.get("responseObject") or {}).get("spec", {}).get("holderIdentity") == ""
    )
    written = {
        r["objectRef"]["resource"]: r["seq"]
        for r in log
        if r["objectRef"]["resource"] in ("podgroups", "events")
        and r["verb"] in ("patch", "create")
        and r.get("requestURI")
    }
    # The session's PodGroup status and its events went out, and before the release.
    assert set(written) == {"podgroups", "events"}, written
    assert max(written.values()) < released
    after = [r["objectRef"]["resource"] for r in log if r["seq"] > released]
    assert after == [], f"written after the lease was released: {after}"
