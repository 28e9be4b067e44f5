"""Pipeline: pipelined HTTP/1.1 connections for the requests muster sends most, its binds.

A bind through aiohttp costs about 180 us of CPU here, most of it aiohttp's per-request
machinery (request and response objects, a timeout handle, trace signals, header
multidicts) and asyncio's TLS layer waking once per request. The same request written as
bytes on a kept-alive TLS connection with several others in flight on it, its answer parsed
by httptools (the C parser uvloop uses), costs about 35 us: binds were half of muster's CPU
per bound pod. So binds go this way; everything else stays on aiohttp.

The pool holds up to `connections` connections and writes up to `depth` requests on each
before their answers come (HTTP/1.1 pipelining: the server, Go's net/http as aiohttp's,
answers a connection's requests in order, so answers match requests first in, first out).
A request goes to an idle connection, else to a new one while the pool may grow, else to
the least loaded with room, else waits for room. The pool keeps its connections in
buckets by requests in flight, so that choice costs the same however many connections
it holds (a scan of 32 connections for each bind was a fifth of the binder's CPU).

A request waits at most `timeout` seconds for its answer; past that its connection is
cut. A connection that breaks (cut, closed by the server, an answer that does not parse)
fails every request in flight on it with ConnectionError: whether the server acted on
them is unknown, so only requests that are safe to send again go this way. A binding sent
twice gets 409 naming the node the pod already has, which counts as bound
(KubeClient.bind).

A request is written at the end of the turn of the event loop that sent it, with whatever
else that turn sent on its connection (one TLS record and one send for them). Few turns send
two on one connection, yet writing at the turn's end, not at once, bound faster with less
CPU a pod (README, Performance, has the figures): why is not established; the sends of a
turn now leave together, after its callbacks, rather than one in the middle of each.

The gate, as on aiohttp's path, is asked once the request has its connection, with no await
left before its bytes are written: a request whose gate closed while it waited for room is
never sent (Fenced). Its bytes leave at the end of that turn, with nothing but the turn's
other callbacks between.
"""

from __future__ import annotations

import asyncio
import collections
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httptools
from kubernetes import client as k8s_client

from scheduler.kube.config import ssl_context
from scheduler.kube.errors import Fenced

USER_AGENT = "muster"


@dataclass(frozen=True)
class Answer:
    """An answer's status code, body and Retry-After header."""

    code: int
    body: bytes
    retry_after: str | None


@dataclass
class _Request:
    """A request in flight on a connection: when it was written, and who waits for it."""

    sent_at: float
    answer: asyncio.Future[Answer]


class _Connection(asyncio.Protocol):
    """One connection: requests written in order, answers matched to them in order."""

    def __init__(self, pool: Pipeline) -> None:
        self._pool = pool
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._in_flight: collections.deque[_Request] = collections.deque()
        self._body: list[bytes] = []
        self._retry_after: str | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        # Requests sent in this turn of the loop, written together at its end (_flush).
        self._unwritten: list[bytes] = []
        self.closed = False

    def send(self, data: bytes) -> asyncio.Future[Answer]:
        """Write one request (at the end of this turn of the loop, with the others sent on
        this connection in it); its answer comes through the future."""
        if self._open_transport() is None:
            # It broke between being chosen and now (the server closed it at once).
            raise ConnectionError("the connection closed before the request was written")
        loop = asyncio.get_running_loop()
        request = _Request(loop.time(), loop.create_future())
        load = len(self._in_flight)
        self._in_flight.append(request)
        self._pool.loaded(self, load, load + 1)
        if not self._unwritten:
            loop.call_soon(self._flush)
        self._unwritten.append(data)
        if self._watchdog is None:
            self._watchdog = loop.call_at(request.sent_at + self._pool.timeout, self._check)
        return request.answer

    def _flush(self) -> None:
        data = b"".join(self._unwritten)
        self._unwritten.clear()
        transport = self._open_transport()
        if transport is not None:
            transport.write(data)
        # Else it broke since: what was in flight has failed (or fails in connection_lost)
        # and is sent again elsewhere, so these bytes must not go out too.

    def _open_transport(self) -> asyncio.Transport | None:
        """The transport, while bytes written on it would go out: not failed, not closing."""
        transport = self._transport
        if self.closed or transport is None or transport.is_closing():
            return None
        return transport

    def close(self) -> None:
        """Cut the connection; what is in flight fails."""
        if self._transport is not None:
            self._transport.abort()

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._fail(ConnectionError(f"an answer did not parse: {error}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError(f"connection lost: {exc!r}" if exc else "connection closed"))

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"retry-after":
            self._retry_after = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        answer = Answer(self._parser.get_status_code(), b"".join(self._body), self._retry_after)
        self._body = []
        self._retry_after = None
        if self._in_flight:
            future = self._in_flight.popleft().answer
            load = len(self._in_flight)
            self._pool.loaded(self, load + 1, load)
            if not future.done():
                future.set_result(answer)
        if not self._parser.should_keep_alive():
            # The server closes after this answer (Connection: close): whatever else was
            # written on it fails now and is sent again on another connection.
            self._fail(ConnectionError("the server closed the connection"))
            self.close()
            return
        self._pool.room_freed()

    def _fail(self, error: Exception) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if not self.closed:
            self.closed = True
            self._pool.forget(self)
        while self._in_flight:
            future = self._in_flight.popleft().answer
            if not future.done():
                future.set_exception(error)

    def _check(self) -> None:
        # One timer per connection, not per request: it looks at the oldest request and
        # comes back when that one would be overdue.
        self._watchdog = None
        if not self._in_flight:
            return
        loop = asyncio.get_running_loop()
        due = self._in_flight[0].sent_at + self._pool.timeout
        if loop.time() >= due:
            self._fail(TimeoutError(f"no answer in {self._pool.timeout:g}s"))
            self.close()
            return
        self._watchdog = loop.call_at(due, self._check)


class Pipeline:
    """A pool of pipelined connections to one API server (see the module docstring)."""

    def __init__(
        self,
        configuration: k8s_client.Configuration,
        *,
        connections: int = 16,
        depth: int = 4,
        timeout: float = 30.0,
    ) -> None:
        if connections < 1 or depth < 1:
            raise ValueError(f"connections and depth must be >= 1, not {connections}, {depth}")
        url = urllib.parse.urlsplit(configuration.host)
        self.connections = connections
        self.depth = depth
        self.timeout = timeout
        self._host = url.hostname or "localhost"
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._authority = url.netloc.rpartition("@")[2]
        # A server behind a path (a proxy's /k8s/clusters/ID) keeps it on every request.
        self._prefix = url.path.rstrip("/")
        self._ssl = ssl_context(configuration) or None
        # _by_load[n]: the open connections with n requests in flight, oldest change first;
        # together, every open connection.
        self._by_load: list[dict[_Connection, None]] = [{} for _ in range(depth + 1)]
        self._opening = 0
        self._room = asyncio.Event()

    async def send(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes | None,
        gate: Callable[[], bool] | None = None,
    ) -> Answer:
        """Send one request and wait for its answer; ConnectionError or TimeoutError when
        its connection breaks first, Fenced when its gate closed before it was written."""
        connection = await self._connection()
        if gate is not None and not gate():
            raise Fenced("the request's gate closed before it was sent")
        return await connection.send(self._encode(method, path, headers, body))

    def close(self) -> None:
        """Cut every connection (what is in flight fails)."""
        for connection in [c for bucket in self._by_load for c in bucket]:
            connection.close()

    def room_freed(self) -> None:
        """A connection has room again (called by connections)."""
        self._room.set()

    def loaded(self, connection: _Connection, before: int, after: int) -> None:
        """A connection's requests in flight went from `before` to `after` (called by
        connections)."""
        bucket = self._by_load[before]
        if connection in bucket:  # not when it was forgotten
            del bucket[connection]
            self._by_load[after][connection] = None

    def forget(self, connection: _Connection) -> None:
        """A connection broke; it takes no more requests (called by connections)."""
        for bucket in self._by_load:
            bucket.pop(connection, None)
        self._room.set()

    @property
    def open_connections(self) -> int:
        """Connections open now."""
        return sum(len(bucket) for bucket in self._by_load)

    @property
    def loads(self) -> list[int]:
        """Requests in flight on each open connection."""
        return [load for load, bucket in enumerate(self._by_load) for _ in bucket]

    async def _connection(self) -> _Connection:
        while True:
            if self._by_load[0]:
                return next(iter(self._by_load[0]))
            if self.open_connections + self._opening < self.connections:
                return await self._connect()
            for bucket in self._by_load[1 : self.depth]:
                if bucket:
                    return next(iter(bucket))
            self._room.clear()
            await self._room.wait()

    async def _connect(self) -> _Connection:
        self._opening += 1
        try:
            _, connection = await asyncio.get_running_loop().create_connection(
                lambda: _Connection(self),
                self._host,
                self._port,
                ssl=self._ssl,
                server_hostname=self._host if self._ssl is not None else None,
            )
        finally:
            self._opening -= 1
            self._room.set()
        self._by_load[0][connection] = None
        return connection

    def _encode(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes | None
    ) -> bytes:
        lines = [f"{method} {self._prefix}{path} HTTP/1.1", f"Host: {self._authority}"]
        lines.append(f"User-Agent: {USER_AGENT}")
        lines.extend(f"{name}: {value}" for name, value in headers.items())
        lines.append(f"Content-Length: {len(body) if body else 0}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return head + body if body else head
