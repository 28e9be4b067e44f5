"""Evictor: an eviction failing for a passing reason is sent again until it lands (a gang
evicted whole is never left part evicted by one 5xx); one that cannot pass is given up at
once; a replica that lost the lease evicts nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.effects import evictor as evictor_module
from scheduler.effects.evictor import Evictor
from scheduler.framework.decisions import Evict
from scheduler.kube.errors import Fenced, NotFound, StatusError, TransportError

EVICTION = Evict("ns", "gang-0", "uid-0", "n1", "ns/gang", "preempted by ns/urgent")


class Server:
    """Answers the evictor's PATCH and DELETE; `failures` are raised by the DELETEs first."""

    def __init__(self, *failures: Exception, leading: bool = True) -> None:
        self.failures = list(failures)
        self.leading = leading
        self.calls: list[str] = []

    async def patch(self, path: str, body: Any, **kwargs: Any) -> bytes:
        self._gate(kwargs)
        self.calls.append("PATCH")
        return b"{}"

    async def request(self, method: str, path: str, **kwargs: Any) -> bytes:
        self._gate(kwargs)
        self.calls.append(method)
        if self.failures:
            raise self.failures.pop(0)
        return b"{}"

    def _gate(self, kwargs: dict[str, Any]) -> None:
        gate = kwargs.get("gate")
        if gate is not None and not gate():
            raise Fenced("lease lost")


class Events:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def record(self, ref: Any, kind: str, reason: str, message: str) -> None:
        self.reasons.append(reason)


def unavailable() -> StatusError:
    return StatusError(503, "ServiceUnavailable", "try again", "DELETE", "/pods/gang-0")


def evict(server: Server, **kwargs: Any) -> tuple[bool, Events]:
    events = Events()
    client: Any = server
    recorder: Any = events
    subject = Evictor(client, recorder, may_evict=lambda: server.leading, **kwargs)
    return asyncio.run(subject.evict(EVICTION)), events


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evictor_module, "RETRY_BASE", 0.0)


def test_an_eviction_failing_for_a_passing_reason_is_sent_again_until_it_lands() -> None:
    server = Server(unavailable(), TransportError("connection reset"))

    done, events = evict(server)

    assert done
    assert server.calls == ["PATCH", "DELETE", "PATCH", "DELETE", "PATCH", "DELETE"]
    assert events.reasons == ["Preempted"]  # announced once, however many attempts


def test_an_eviction_refused_for_good_is_given_up_at_once() -> None:
    forbidden = StatusError(403, "Forbidden", "no", "DELETE", "/pods/gang-0")
    server = Server(forbidden)

    done, _ = evict(server)

    assert not done
    assert server.calls == ["PATCH", "DELETE"]


def test_a_pod_already_gone_counts_as_evicted() -> None:
    server = Server(NotFound(404, "NotFound", "gone", "DELETE", "/pods/gang-0"))

    done, _ = evict(server)

    assert done


def test_an_eviction_still_failing_at_the_deadline_is_given_up() -> None:
    server = Server(*[unavailable() for _ in range(100)])

    done, _ = evict(server, retry_seconds=0.0)

    assert not done
    assert server.calls == ["PATCH", "DELETE"]


def test_a_replica_that_lost_the_lease_evicts_nothing() -> None:
    server = Server(leading=False)

    done, events = evict(server)

    assert not done
    assert server.calls == []
    assert events.reasons == []
