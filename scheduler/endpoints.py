"""The plain-HTTP endpoints a process serves for Prometheus and the kubelet's probes."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from scheduler.health import Health, Verdict

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.Response]]


def split_address(address: str) -> tuple[str, int]:
    """ ":8080" -> ("", 8080); "127.0.0.1:9090" -> ("127.0.0.1", 9090)."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def metrics_handler(registry: CollectorRegistry) -> Handler:
    """GET /metrics: the registry in Prometheus' text format."""

    async def metrics(_: web.Request) -> web.Response:
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    return metrics


def probe_handler(check: Callable[[], Verdict]) -> Handler:
    """GET /healthz or /readyz: 200 "ok", or 503 with the reasons the probe is red."""

    async def probe(_: web.Request) -> web.Response:
        verdict = check()
        return web.Response(status=200 if verdict.ok else 503, text=verdict.text())

    return probe


def scheduler_routes(registry: CollectorRegistry, health: Health) -> dict[str, Handler]:
    """What `muster scheduler` serves: /metrics, and the kubelet's /healthz and /readyz."""
    return {
        "/metrics": metrics_handler(registry),
        "/healthz": probe_handler(health.liveness),
        "/readyz": probe_handler(health.readiness),
    }


async def serve(address: str, routes: Mapping[str, Handler]) -> web.AppRunner:
    """Serve GET `routes` on `address` ("host:port", host optional) until cleaned up."""
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_get(path, handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    host, port = split_address(address)
    await web.TCPSite(runner, host or None, port).start()
    log.info("serving %s on %s:%d", ", ".join(routes), host or "0.0.0.0", port)
    return runner
