"""sim's own endpoints under /sim/, for the admin (system:masters) only: its faults
(GET and PUT /sim/faults), a compaction, a restart, its audit records and dropped watches."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import web

from muster_sim.apiserver.store import Store
from muster_sim.errors import bad_request, method_not_allowed, path_not_found
from muster_sim.http.audit import AuditLog
from muster_sim.http.bodies import json_response
from muster_sim.http.faults import FaultInjector

_JSON = "application/json"


class SimEndpoints:
    """The /sim/ endpoints over the store, the fault injector and the audit log."""

    def __init__(self, store: Store, faults: FaultInjector, audit_log: AuditLog | None) -> None:
        self.store = store
        self.faults = faults
        self.audit = audit_log
        # POST /sim/restart: the server's restart (serving stops, the store stays)
        self.on_restart: Callable[[float], Awaitable[None]] | None = None
        self._restarts: set[asyncio.Task[None]] = set()

    async def serve(self, request: web.Request, path: str) -> web.StreamResponse:
        """Answer a request to a /sim/ path; 404 for one that names no endpoint."""
        if path == "/sim/faults":
            if request.method == "PUT":
                self.faults.replace(FaultInjector.parse(await request.read()))
            elif request.method != "GET":
                raise method_not_allowed()
            return web.Response(body=self.faults.to_json(), content_type=_JSON)
        if path == "/sim/compact" and request.method == "POST":
            self.store.compact()
            return json_response({"compactedResourceVersion": self.store.compacted_rv})
        if path == "/sim/restart" and request.method == "POST":
            return self._restart(request)
        if path == "/sim/audit" and request.method == "GET":
            return self._audit_records(request)
        if path == "/sim/drop-watches" and request.method == "POST":
            self.store.close_watchers()
            return json_response({"dropped": True})
        raise path_not_found()

    def _restart(self, request: web.Request) -> web.Response:
        """POST /sim/restart?downtime=S: answer, then go down for S seconds and come back."""
        if self.on_restart is None:
            raise path_not_found()
        text = request.query.get("downtime", "1")
        try:
            downtime = float(text)
        except ValueError:
            downtime = -1.0
        if not 0 <= downtime <= 60:
            raise bad_request(
                f"/sim/restart: downtime={text!r} is not a number of seconds from 0 to 60"
            )
        # after this answer is sent: the restart cuts every connection, this one too
        task = asyncio.get_running_loop().create_task(self._restart_soon(downtime))
        self._restarts.add(task)
        task.add_done_callback(self._restarts.discard)
        return json_response({"restarting": True, "downtime": downtime}, 202)

    async def _restart_soon(self, downtime: float) -> None:
        assert self.on_restart is not None
        await asyncio.sleep(0.05)
        await self.on_restart(downtime)

    def _audit_records(self, request: web.Request) -> web.Response:
        """GET /sim/audit?since=N&limit=M: the audit records after N as JSON lines."""
        if self.audit is None:
            raise path_not_found()
        numbers: dict[str, int] = {}
        for param in ("since", "limit"):
            text = request.query.get(param, "0")
            try:
                numbers[param] = int(text)
            except ValueError:
                raise bad_request(
                    f"/sim/audit: {param}={text!r} is not an integer; give the seq of the last "
                    "record read (0 for all) and the most records wanted (0 for no limit)"
                ) from None
        lines = self.audit.since(numbers["since"], numbers["limit"])
        body = b"".join(line + b"\n" for line in lines)
        response = web.Response(body=body, content_type="application/jsonl")
        response.headers["X-Sim-Audit-Seq"] = str(self.audit.seq)
        return response
