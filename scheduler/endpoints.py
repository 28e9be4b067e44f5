"""The plain-HTTP endpoints a process serves for Prometheus and the kubelet's probes."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
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


class EndpointThread:
    """Endpoints served by a thread with an event loop of its own (serve_in_thread)."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, thread: threading.Thread, port: int
    ) -> None:
        self.loop = loop
        self.thread = thread
        # The port listened on (the one asked for, or the one given for port 0).
        self.port = port

    def stop(self) -> None:
        """Stop serving and wait for the thread (its runner is cleaned up on the way out)."""
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


async def serve_in_thread(address: str, routes: Mapping[str, Handler]) -> EndpointThread:
    """serve() from a thread of its own, so a long session on the caller's loop does not make
    /metrics or the probes late: a kubelet whose probe timed out three times restarts a
    scheduler that was only busy. A loop that is truly stuck still shows, as the liveness
    check reads when the loop last finished a cycle. Raises what serve() raises (a port
    in use) before returning."""
    loop = asyncio.new_event_loop()
    started: concurrent.futures.Future[web.AppRunner] = concurrent.futures.Future()

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            runner = loop.run_until_complete(serve(address, routes))
        except BaseException as error:  # handed to the caller, who raises it
            started.set_exception(error)
            loop.close()
            return
        started.set_result(runner)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            loop.close()

    thread = threading.Thread(target=run, name="endpoints", daemon=True)
    thread.start()
    runner = await asyncio.wrap_future(started)
    return EndpointThread(loop, thread, int(runner.addresses[0][1]))
