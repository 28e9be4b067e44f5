"""What `muster scheduler` answers on /metrics, /healthz and /readyz, and from where."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.request
from dataclasses import dataclass

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from scheduler.endpoints import Handler, probe_handler, scheduler_routes, serve_in_thread
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

    def last_heard(self) -> float | None:
        return None

    @property
    def watch_timeout(self) -> int:
        return 300


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


def test_the_probes_answer_while_the_scheduling_loop_is_busy() -> None:
    # A session of seconds at 50,000 pods runs on the scheduler's loop: the probes and
    # /metrics must not wait for it (the kubelet restarts a scheduler whose probe times out).
    metrics = Metrics()
    health = Health(1.0, [FakeReflector("pod", synced=True)], lambda: 0.0)
    answers: list[tuple[int, str]] = []

    def scrape(port: int) -> None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
            answers.append((answer.status, answer.read().decode()))

    async def busy_loop() -> None:
        endpoints = await serve_in_thread("127.0.0.1:0", scheduler_routes(metrics.registry, health))
        try:
            port = endpoints.port
            prober = threading.Thread(target=scrape, args=(port,))
            prober.start()
            deadline = time.monotonic() + 5
            while not answers and time.monotonic() < deadline:
                time.sleep(0.01)  # the loop never yields: a session at work
            prober.join()
        finally:
            endpoints.stop()
        assert not endpoints.thread.is_alive()

    asyncio.run(busy_loop())
    assert answers == [(200, "ok")]


def test_a_port_in_use_is_refused_before_serving() -> None:
    async def twice() -> None:
        first = await serve_in_thread("127.0.0.1:0", {"/metrics": probe_handler(Verdict)})
        try:
            with pytest.raises(OSError):
                await serve_in_thread(f"127.0.0.1:{first.port}", {})
        finally:
            first.stop()

    asyncio.run(twice())
