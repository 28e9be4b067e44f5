"""What `muster scheduler` answers on /metrics, /healthz and /readyz (handlers called directly)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from scheduler.endpoints import Handler, probe_handler, scheduler_routes
from scheduler.health import Health, Verdict
from scheduler.metrics import Metrics


@dataclass
class FakeReflector:
    name: str
    synced: bool

    def is_synced(self) -> bool:
        return self.synced

    def broken_since(self) -> float | None:
        return None


def get(handler: Handler, path: str) -> web.Response:
    async def call() -> web.Response:
        return await handler(make_mocked_request("GET", path))

    return asyncio.run(call())


def test_a_green_probe_answers_200_ok() -> None:
    response = get(probe_handler(Verdict), "/healthz")
    assert (response.status, response.text) == (200, "ok")


def test_a_red_probe_answers_503_with_its_reasons() -> None:
    response = get(probe_handler(lambda: Verdict(("a", "b"))), "/readyz")
    assert (response.status, response.text) == (503, "a; b")


def test_the_scheduler_serves_metrics_liveness_and_readiness() -> None:
    metrics = Metrics()
    health = Health(1.0, [FakeReflector("pod", synced=False)], lambda: 0.0)
    routes = scheduler_routes(metrics.registry, health)
    assert sorted(routes) == ["/healthz", "/metrics", "/readyz"]
    live, ready = get(routes["/healthz"], "/healthz"), get(routes["/readyz"], "/readyz")
    assert (live.status, live.text) == (200, "ok")
    assert (ready.status, ready.text) == (503, "pod cache not synced")
    scrape = get(routes["/metrics"], "/metrics")
    assert scrape.content_type == "text/plain"
    assert isinstance(scrape.body, bytes)
    assert b"# TYPE muster_is_leader gauge" in scrape.body
