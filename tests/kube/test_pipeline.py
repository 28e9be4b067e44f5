"""The bind lane's pipelined connections against a local HTTP server: answers matched to
requests in order, bounded connections and depth, broken connections and timeouts failing
what was in flight (and KubeClient sending it again), the gate asked at writing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from kubernetes import client as k8s_client

from scheduler.kube.client import KubeClient
from scheduler.kube.errors import Fenced
from scheduler.kube.pipeline import Pipeline

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[tuple[str, list[str], set[object]]]:
    """A plain-HTTP server on loopback; yields its URL, the paths it was sent (in order of
    arrival) and the connections they came on."""
    paths: list[str] = []
    connections: set[object] = set()

    async def record(request: web.Request) -> web.StreamResponse:
        paths.append(request.path)
        connections.add(id(request.transport))
        return await handler(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}", paths, connections
    finally:
        await runner.cleanup()


def configuration(url: str) -> k8s_client.Configuration:
    return k8s_client.Configuration(host=url)


async def echo(request: web.Request) -> web.Response:
    # A little later for every other request: answers still come back in request order.
    if request.path.endswith(("1", "3", "5", "7", "9")):
        await asyncio.sleep(0.002)
    return web.Response(status=201, text=request.path)


def test_answers_come_back_to_their_own_requests_over_few_connections() -> None:
    async def scenario() -> None:
        async with serving(echo) as (url, paths, connections):
            pipeline = Pipeline(configuration(url), connections=2, depth=8)
            sent = [f"/api/v1/pods/p{i}/binding" for i in range(40)]
            answers = await asyncio.gather(
                *(pipeline.send("POST", path, {}, b"{}") for path in sent)
            )
            pipeline.close()
        assert [a.body.decode() for a in answers] == sent
        assert {a.code for a in answers} == {201}
        assert sorted(paths) == sorted(sent)
        assert len(connections) == 2

    asyncio.run(scenario())


def test_no_more_than_connections_times_depth_requests_are_written_at_once() -> None:
    async def scenario() -> None:
        release = asyncio.Event()

        async def held(request: web.Request) -> web.Response:
            await release.wait()
            return web.Response(status=201)

        async with serving(held) as (url, _, connections):
            pipeline = Pipeline(configuration(url), connections=2, depth=3)
            tasks = [
                asyncio.ensure_future(pipeline.send("POST", f"/p{i}", {}, b"{}")) for i in range(7)
            ]
            for _ in range(50):
                await asyncio.sleep(0.01)
                if pipeline.open_connections == 2 and len(connections) == 2:
                    break
            in_flight = sum(pipeline.loads)
            assert (pipeline.open_connections, in_flight) == (2, 6)
            assert not any(t.done() for t in tasks)
            release.set()
            answers = await asyncio.gather(*tasks)
            pipeline.close()
        assert [a.code for a in answers] == [201] * 7

    asyncio.run(scenario())


@pytest.fixture
def client_writes(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """What the client's sockets were given to send (its requests to /c..., /lost...)."""
    writes: list[bytes] = []
    write = asyncio.selector_events._SelectorSocketTransport.write

    def counted(transport: asyncio.Transport, data: bytes) -> None:
        if b" /c" in bytes(data) or b" /lost" in bytes(data):  # not the server's answers
            writes.append(bytes(data))
        write(transport, data)

    monkeypatch.setattr(asyncio.selector_events._SelectorSocketTransport, "write", counted)
    return writes


@asynccontextmanager
async def one_open_connection(
    depth: int,
) -> AsyncIterator[tuple[Pipeline, list[str], set[object]]]:
    """A pipeline of one connection to `echo`, opened by a request to /open (answered)."""
    async with serving(echo) as (url, paths, connections):
        pipeline = Pipeline(configuration(url), connections=1, depth=depth)
        await pipeline.send("POST", "/open", {}, b"{}")
        yield pipeline, paths, connections


def test_requests_sent_on_a_connection_in_one_turn_are_written_together(
    client_writes: list[bytes],
) -> None:
    async def scenario() -> None:
        async with one_open_connection(depth=8) as (pipeline, paths, connections):
            sent = [f"/c{i}" for i in range(5)]
            answers = await asyncio.gather(
                *(pipeline.send("POST", path, {}, b"{}") for path in sent)
            )
            pipeline.close()
        assert [a.body.decode() for a in answers] == sent
        assert paths == ["/open", *sent]
        assert len(connections) == 1

    asyncio.run(scenario())
    assert len(client_writes) == 1
    assert client_writes[0].count(b"POST /c") == 5


def test_a_request_whose_connection_breaks_before_the_turn_ends_is_never_written(
    client_writes: list[bytes],
) -> None:
    async def scenario() -> None:
        async with one_open_connection(depth=2) as (pipeline, paths, _):
            lost = asyncio.ensure_future(pipeline.send("POST", "/lost", {}, b"{}"))
            await asyncio.sleep(0)  # it is sent; its bytes wait for the turn's end
            assert pipeline.loads == [1]
            pipeline.close()  # the connection breaks first
            with pytest.raises(ConnectionError):
                await lost
        assert paths == ["/open"]

    asyncio.run(scenario())
    assert client_writes == []


def test_each_request_goes_to_an_idle_connection_else_the_least_loaded() -> None:
    async def scenario() -> None:
        release = asyncio.Event()

        async def held(request: web.Request) -> web.Response:
            if request.path.startswith("/held"):
                await release.wait()
            return web.Response(status=201)

        async with serving(held) as (url, _, connections):
            pipeline = Pipeline(configuration(url), connections=3, depth=4)
            # three at once open the three connections; answered, all three are idle
            await asyncio.gather(*(pipeline.send("POST", f"/open{i}", {}, b"{}") for i in range(3)))
            tasks = [
                asyncio.ensure_future(pipeline.send("POST", f"/held{i}", {}, b"{}"))
                for i in range(7)
            ]
            await asyncio.sleep(0)
            loads = sorted(pipeline.loads)
            release.set()
            await asyncio.gather(*tasks)
            pipeline.close()
        assert len(connections) == 3
        assert loads == [2, 2, 3]

    asyncio.run(scenario())


def test_a_broken_connection_fails_what_was_in_flight_and_the_client_sends_it_again() -> None:
    async def scenario() -> None:
        cuts = [2]

        async def flaky(request: web.Request) -> web.Response:
            if cuts[0] > 0:
                cuts[0] -= 1
                assert request.transport is not None
                request.transport.close()  # no answer: everything pipelined on it is lost
                await asyncio.sleep(0.05)
            return web.Response(status=201, text=request.path)

        async with serving(flaky) as (url, paths, _):
            main = KubeClient(configuration(url))
            lane = main.lane(2, depth=4)
            sent = [f"/api/v1/namespaces/ns/pods/p{i}/binding" for i in range(12)]
            bodies = await asyncio.gather(*(lane.request("POST", path, body={}) for path in sent))
            await lane.close()
            await main.close()
        assert [b.decode() for b in bodies] == sent
        assert set(paths) == set(sent)

    asyncio.run(scenario())


def test_a_request_whose_gate_closes_while_it_waits_for_room_is_never_written() -> None:
    async def scenario() -> None:
        release = asyncio.Event()

        async def slow(request: web.Request) -> web.Response:
            if request.path == "/first":
                await release.wait()
            return web.Response(status=201)

        async with serving(slow) as (url, paths, _):
            pipeline = Pipeline(configuration(url), connections=1, depth=1)
            first = asyncio.ensure_future(pipeline.send("POST", "/first", {}, b"{}"))
            leading = [True]
            second = asyncio.ensure_future(
                pipeline.send("POST", "/second", {}, b"{}", gate=lambda: leading[0])
            )
            await asyncio.sleep(0.05)  # the second waits for the only slot
            assert not second.done()
            leading[0] = False  # the lease is lost meanwhile
            release.set()
            assert (await first).code == 201
            with pytest.raises(Fenced):
                await second
            pipeline.close()
        assert paths == ["/first"]

    asyncio.run(scenario())


def test_a_request_with_no_answer_in_time_fails_and_its_connection_is_cut() -> None:
    async def scenario() -> None:
        async def silent(request: web.Request) -> web.Response:
            await asyncio.sleep(0.5)  # past the client's 0.2 s
            return web.Response(status=201)

        async with serving(silent) as (url, _, _):
            pipeline = Pipeline(configuration(url), connections=1, depth=2, timeout=0.2)
            results = await asyncio.gather(
                pipeline.send("POST", "/a", {}, b"{}"),
                pipeline.send("POST", "/b", {}, b"{}"),
                return_exceptions=True,
            )
            assert [type(r) for r in results] == [TimeoutError, TimeoutError]
            assert pipeline.open_connections == 0

    asyncio.run(scenario())


def test_a_server_that_closes_after_an_answer_gets_the_next_request_on_a_new_connection() -> None:
    async def scenario() -> None:
        async def closing(request: web.Request) -> web.Response:
            return web.Response(status=201, headers={"Connection": "close"})

        async with serving(closing) as (url, _, connections):
            pipeline = Pipeline(configuration(url), connections=1, depth=1)
            codes = [(await pipeline.send("POST", f"/p{i}", {}, b"{}")).code for i in range(3)]
            pipeline.close()
        assert codes == [201, 201, 201]
        assert len(connections) == 3

    asyncio.run(scenario())


def test_retry_after_status_body_and_a_path_prefix_reach_the_caller() -> None:
    async def busy(request: web.Request) -> web.Response:
        return web.Response(status=429, text='{"code":429}', headers={"Retry-After": "2"})

    async def scenario() -> None:
        async with serving(busy) as (url, paths, _):
            pipeline = Pipeline(configuration(url + "/k8s/clusters/c-1/"), connections=1)
            answer = await pipeline.send("POST", "/api/v1/x", {"Authorization": "Bearer t"}, b"")
            pipeline.close()
        assert (answer.code, answer.body, answer.retry_after) == (429, b'{"code":429}', "2")
        assert paths == ["/k8s/clusters/c-1/api/v1/x"]

    asyncio.run(scenario())


def test_a_pipeline_needs_at_least_one_connection_and_one_request_on_it() -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        Pipeline(configuration("http://127.0.0.1:9"), connections=0)
    with pytest.raises(ValueError, match="must be >= 1"):
        Pipeline(configuration("http://127.0.0.1:9"), depth=0)
