"""KubeClient.watch yields one line per event however the stream is cut into chunks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes import client as k8s_client

from scheduler.kube.client import KubeClient


class FakeContent:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def iter_any(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


class FakeResponse:
    status = 200

    def __init__(self, chunks: list[bytes]) -> None:
        self.content = FakeContent(chunks)

    async def __aenter__(self) -> FakeResponse:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


class FakePool:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.asked: list[dict[str, Any]] = []

    def get(self, *args: Any, **kwargs: Any) -> FakeResponse:
        self.asked.append(kwargs)
        return FakeResponse(self.chunks)


def lines_of(chunks: list[bytes], pool: FakePool | None = None) -> list[bytes]:
    client = KubeClient(k8s_client.Configuration(host="http://127.0.0.1:9"))
    fake = pool or FakePool(chunks)
    client._pool = lambda gated=False: fake  # type: ignore[assignment,method-assign,return-value]

    async def collect() -> list[bytes]:
        return [line async for line in client.watch("/api/v1/pods", {}, timeout=5)]

    return asyncio.run(collect())


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param([b'{"a":1}\n{"b":2}\n{"c":3}\n{"d":4}\n'], id="one-chunk-many-lines"),
        pytest.param([b'{"a":1}\n{"b"', b":2}\n\n", b'{"c":3}', b'\n{"d":4}'], id="cut-anywhere"),
        pytest.param([b'{"a"', b":1}", b'\n{"b":2}\n{"c":3}\n{', b'"d":4}\n'], id="no-newline"),
    ],
)
def test_each_event_is_one_line_whatever_the_chunks(chunks: list[bytes]) -> None:
    assert lines_of(chunks) == [b'{"a":1}', b'{"b":2}', b'{"c":3}', b'{"d":4}']


def test_blank_lines_are_skipped_and_a_last_line_without_newline_is_kept() -> None:
    assert lines_of([b"\n\n", b'{"a":1}\n  \n{"b":2}']) == [b'{"a":1}', b'{"b":2}']


def test_a_watch_has_one_deadline_past_the_servers_and_no_timer_per_read() -> None:
    chunks = [b'{"a":1}\n']
    pool = FakePool(chunks)
    assert lines_of(chunks, pool) == [b'{"a":1}']
    [asked] = pool.asked
    # total bounds a silent watch too; a sock_read would re-arm a timer on every chunk read
    assert (asked["timeout"].total, asked["timeout"].sock_read) == (35, None)
