"""KubeClient: plain requests on one kept-alive, authenticated aiohttp pool.

The official client supplies configuration and authentication; the hot calls
(list, watch, bind, status patches) go out as plain requests and come back as
raw bytes for msgspec to decode. The generated methods cost about 1 ms of CPU
a call, more than muster's whole budget per pod (docs/design.md, kube/).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping
from types import SimpleNamespace
from typing import Any

import aiohttp
import msgspec
import yarl
from kubernetes import client as k8s_client

from scheduler.kube.config import auth_headers, ssl_context
from scheduler.kube.errors import (
    Fenced,
    StatusError,
    TransportError,
    is_retryable,
    status_error,
)
from scheduler.kube.pipeline import Pipeline
from scheduler.kube.ratelimit import TokenBucket

log = logging.getLogger(__name__)

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
_encoder = msgspec.json.Encoder()

# A gate is asked once a request has its connection, just before its first byte is
# written; False stops the request (Fenced).
Gate = Callable[[], bool]


async def _ask_gate(
    session: aiohttp.ClientSession, context: SimpleNamespace, params: object
) -> None:
    # aiohttp calls this when the request has its connection, pooled or new, with no await
    # left before the request is written: a bind queued behind a full pool, a rate limiter
    # or a retry's backoff (or a process stopped with SIGSTOP meanwhile) is decided on the
    # lease as it is at sending, not as it was at dispatch.
    gate: Gate | None = context.trace_request_ctx
    if gate is not None and not gate():
        raise Fenced("the request's gate closed before it was sent")


def _gate_trace() -> aiohttp.TraceConfig:
    trace = aiohttp.TraceConfig()
    trace.on_connection_reuseconn.append(_ask_gate)
    trace.on_connection_create_end.append(_ask_gate)
    return trace


class KubeClient:
    """Requests to one API server with rate limiting and retries."""

    def __init__(
        self,
        configuration: k8s_client.Configuration,
        *,
        qps: float = 0,
        burst: int = 100,
        retries: int = 4,
        connections: int = 64,
        timeout: float = 30,
    ) -> None:
        self.configuration = configuration
        self.host = configuration.host.rstrip("/")
        self.retries = retries
        self._limiter = TokenBucket(qps, burst)
        self._connections = connections
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self._gated: aiohttp.ClientSession | None = None
        self._headers: dict[str, str] = {}
        self._headers_at = 0.0
        self._request_timeout = aiohttp.ClientTimeout(total=timeout)
        # Requests without a query go on pipelined connections when set (a lane's choice).
        self._pipeline: Pipeline | None = None

    def lane(self, connections: int, *, depth: int = 0) -> KubeClient:
        """A client to the same server with a connection pool of its own (its requests never
        wait for a connection behind this client's) and this client's rate limit, shared:
        binds, events and the rest each get a lane, and --kube-api-qps still bounds all.

        With `depth`, the lane's requests without a query are pipelined, `depth` at a time
        on each of its connections (kube/pipeline.py): only for requests that are safe to
        send twice, as a broken connection sends what was in flight on it again."""
        twin = KubeClient(
            self.configuration,
            retries=self.retries,
            connections=connections,
            timeout=self._timeout,
        )
        twin._limiter = self._limiter
        if depth:
            twin._pipeline = Pipeline(
                self.configuration, connections=connections, depth=depth, timeout=self._timeout
            )
        return twin

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _pool(self, gated: bool = False) -> aiohttp.ClientSession:
        # Two sessions on one connection pool: the gated one carries the trace hook that
        # asks a request's gate, so requests without a gate pay nothing for it.
        if self._session is None or self._session.closed or self._gated is None:
            connector = aiohttp.TCPConnector(
                limit=self._connections, ssl=ssl_context(self.configuration), keepalive_timeout=60
            )
            self._session = self._session_on(connector, owner=True, traces=[])
            self._gated = self._session_on(connector, owner=False, traces=[_gate_trace()])
        return self._gated if gated else self._session

    @staticmethod
    def _session_on(
        connector: aiohttp.TCPConnector, *, owner: bool, traces: list[aiohttp.TraceConfig]
    ) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=connector,
            connector_owner=owner,
            trace_configs=traces,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            json_serialize=lambda value: _encoder.encode(value).decode(),
        )

    def _auth(self, refresh: bool = False) -> dict[str, str]:
        # Tokens can rotate (in-cluster projected tokens, exec plugins): ask the
        # Configuration again every minute or after a 401.
        now = time.monotonic()
        if refresh or not self._headers_at or now - self._headers_at > 60:
            self._headers = {"Accept": JSON, **auth_headers(self.configuration)}
            self._headers_at = now
        return self._headers

    async def close(self) -> None:
        """Close the connection pool."""
        if self._pipeline is not None:
            self._pipeline.close()
        if self._gated is not None:
            await self._gated.close()
            self._gated = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        retry: bool = True,
        gate: Gate | None = None,
    ) -> bytes:
        """Send one request; return the body of a 2xx answer or raise a StatusError.

        429, 5xx and connection errors are retried with exponential backoff and
        jitter (and Retry-After when the server gives one). With a `gate`, each attempt
        is sent only if the gate still says yes once it has its connection; else Fenced.
        """
        data = _encoder.encode(body) if body is not None else None
        pipeline = self._pipeline if params is None else None
        # Paths are built from API object names, which are already URL-safe: telling
        # yarl so skips its parsing and quoting on every call. A pipelined request needs
        # no URL at all (the bind hot path: yarl's was a twentieth of a bind's CPU).
        url: yarl.URL | str = ""
        if pipeline is None:
            url = yarl.URL(self.host + path, encoded=True) if params is None else self.host + path
        attempt = 0
        refreshed = False
        while True:
            await self._limiter.take()
            headers = self._auth()
            headers = {**headers, "Content-Type": content_type} if data is not None else headers
            try:
                if pipeline is not None:
                    answer = await pipeline.send(method, path, headers, data, gate)
                    payload, code, retry_after = answer.body, answer.code, answer.retry_after
                else:
                    async with self._pool(gated=gate is not None).request(
                        method,
                        url,
                        params=params,
                        data=data,
                        headers=headers,
                        timeout=self._request_timeout,
                        trace_request_ctx=gate,
                    ) as response:
                        payload = await response.read()
                        code = response.status
                        retry_after = response.headers.get("Retry-After")
            except (TimeoutError, aiohttp.ClientError, OSError) as error:
                if not retry or attempt >= self.retries:
                    raise TransportError(f"{method} {path}: {error!r}") from error
                attempt += 1
                await asyncio.sleep(_backoff(attempt))
                continue
            if code < 300:
                return payload
            if code == 401 and not refreshed:
                refreshed = True
                self._auth(refresh=True)
                continue
            if retry and is_retryable(code) and attempt < self.retries:
                attempt += 1
                await asyncio.sleep(_backoff(attempt, retry_after))
                continue
            raise status_error(code, payload, method, path)

    async def get_json(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        """GET and decode a JSON document."""
        return msgspec.json.decode(await self.request("GET", path, params=params))

    async def watch(
        self,
        path: str,
        params: Mapping[str, str],
        *,
        timeout: float,
    ) -> AsyncIterator[bytes]:
        """Yield the raw lines of a watch stream until it ends; raise on a failed start."""
        headers = self._auth()
        query = dict(params)
        query["watch"] = "true"
        try:
            async with self._pool().get(
                self.host + path,
                params=query,
                headers=headers,
                # The whole watch's limit, past the server's timeoutSeconds. No sock_read: it
                # could never fire before this one, and it re-arms a timer on every read.
                timeout=aiohttp.ClientTimeout(total=timeout + 30),
            ) as response:
                if response.status >= 300:
                    raise status_error(response.status, await response.read(), "WATCH", path)
                buffer = b""
                async for chunk in response.content.iter_any():
                    if b"\n" not in chunk:
                        buffer += chunk
                        continue
                    # One split per chunk: a chunk of many events is not copied once per line.
                    lines = (buffer + chunk).split(b"\n")
                    buffer = lines.pop()
                    for line in lines:
                        if line.strip():
                            yield line
                if buffer.strip():
                    yield buffer
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            raise TransportError(f"WATCH {path}: {error!r}") from error

    async def bind(
        self, namespace: str, name: str, uid: str, node: str, *, gate: Gate | None = None
    ) -> None:
        """POST pods/NAME/binding; a pod already on that node counts as bound."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
        try:
            await self.request("POST", path, body=body, gate=gate)
        except StatusError as error:
            if error.code == 409 and f'node "{node}"' in error.message:
                return
            raise

    async def patch(
        self,
        path: str,
        body: Any,
        *,
        content_type: str = MERGE_PATCH,
        gate: Gate | None = None,
    ) -> bytes:
        """PATCH an object or subresource."""
        return await self.request("PATCH", path, body=body, content_type=content_type, gate=gate)

    async def create(self, path: str, body: Any, *, gate: Gate | None = None) -> bytes:
        """POST a new object to a collection."""
        return await self.request("POST", path, body=body, gate=gate)


def _backoff(attempt: int, retry_after: str | None = None) -> float:
    if retry_after:
        try:
            return min(float(retry_after), 10.0)
        except ValueError:
            pass
    # Full jitter: spreads retries of many binds that failed together.
    return float(random.uniform(0, min(2.0, 0.05 * 2**attempt)))
