"""Lanes of a KubeClient: binds and events get connection pools of their own, one rate limit."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kubernetes import client as k8s_client

from scheduler.effects.apply import STATUS_CONNECTIONS
from scheduler.kube.client import KubeClient
from scheduler.process_options import (
    BIND_CONNECTIONS,
    BIND_DEPTH,
    EVENT_CONNECTIONS,
)
from tests.unit.offline_process import offline_process


def test_a_lane_has_its_own_pool_and_shares_the_rate_limit() -> None:
    async def scenario() -> None:
        main = KubeClient(k8s_client.Configuration(host="http://127.0.0.1:9"), qps=5, burst=2)
        lane = main.lane(3)
        try:
            assert lane._limiter is main._limiter
            assert lane.host == main.host
            assert lane._pool().connector is not main._pool().connector
            assert lane._pool().connector is not None
            assert lane._pool().connector.limit == 3
        finally:
            await lane.close()
            await main.close()

    asyncio.run(scenario())


def test_closing_a_lane_leaves_the_main_pool_open() -> None:
    async def scenario() -> None:
        main = KubeClient(k8s_client.Configuration(host="http://127.0.0.1:9"))
        lane = main.lane(2)
        pool = main._pool()
        lane._pool()
        await lane.close()
        assert not pool.closed
        await main.close()
        assert pool.closed

    asyncio.run(scenario())


def test_the_scheduler_binds_and_writes_events_each_in_a_lane_of_its_own(tmp_path: Path) -> None:
    process = offline_process(tmp_path)
    binder = process.effects.binder
    clients = {id(process.client), id(process.bind_client), id(process.event_client)}
    assert len(clients) == 3
    assert getattr(binder, "client", None) is process.bind_client
    assert process.recorder.client is process.event_client
    assert process.bind_client._connections == BIND_CONNECTIONS
    # binds are pipelined, BIND_DEPTH on each connection, one binder worker per bind in flight
    pipeline = process.bind_client._pipeline
    assert pipeline is not None
    assert (pipeline.connections, pipeline.depth) == (BIND_CONNECTIONS, BIND_DEPTH)
    assert getattr(binder, "concurrency", 0) == BIND_CONNECTIONS * BIND_DEPTH
    assert process.event_client._connections == EVENT_CONNECTIONS
    # events go on the same lean transport, one at a time on each of their connections
    events = process.event_client._pipeline
    assert events is not None
    assert (events.connections, events.depth) == (EVENT_CONNECTIONS, 1)
    assert process.client._pipeline is None
    # evictions and watches stay on the main client
    assert all(r.client is process.client for r in process.reflectors)
    assert getattr(process.effects.evictor, "client", None) is process.client
    # statuses go on a lean lane of their own, one at a time on each of its connections
    writer = getattr(process.effects.writer, "client", None)
    assert isinstance(writer, KubeClient) and writer not in (process.client, process.event_client)
    statuses = writer._pipeline
    assert statuses is not None
    assert (statuses.connections, statuses.depth) == (STATUS_CONNECTIONS, 1)


def test_the_pipeline_depth_flag_sets_the_binds_in_flight_on_each_connection(
    tmp_path: Path,
) -> None:
    process = offline_process(tmp_path, bind_depth=1)
    pipeline = process.bind_client._pipeline
    assert pipeline is not None and pipeline.depth == 1
    assert getattr(process.effects.binder, "concurrency", 0) == BIND_CONNECTIONS
