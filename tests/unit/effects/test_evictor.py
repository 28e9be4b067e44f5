"""Evictor: a preemptor's evictions go through the Eviction API as one group, checked by
dry runs first, so a PodDisruptionBudget's refusal sends none of them; an eviction failing
for a passing reason is sent again until it lands (a gang evicted whole is never left part
evicted by one 5xx); one that cannot pass stops the group; a replica that lost the lease
evicts nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.effects import evictor as evictor_module
from scheduler.effects.evictor import Evictor
from scheduler.framework.decisions import Evict
from scheduler.kube.errors import Fenced, NotFound, StatusError, TransportError


def eviction(index: int = 0) -> Evict:
    return Evict(
        "ns",
        f"gang-{index}",
        f"uid-{index}",
        "n1",
        "ns/gang",
        "preempted by ns/urgent",
        "ns/urgent",
    )


class Server:
    """Answers the evictor's PATCH and its POSTs of Evictions; `failures` are raised by
    the POSTs first, in order; `refuse` names pods a budget refuses."""

    def __init__(self, *failures: Exception, leading: bool = True, refuse: str = "") -> None:
        self.failures = list(failures)
        self.leading = leading
        self.refuse = refuse
        self.calls: list[str] = []

    async def patch(self, path: str, body: Any, **kwargs: Any) -> bytes:
        self._gate(kwargs)
        self.calls.append(f"PATCH {path.split('/')[-2]}")
        return b"{}"

    async def request(self, method: str, path: str, **kwargs: Any) -> bytes:
        self._gate(kwargs)
        pod = path.split("/")[-2]
        dry = kwargs.get("params") == {"dryRun": "All"}
        assert kwargs["body"]["deleteOptions"]["preconditions"] == {"uid": "uid-" + pod[-1]}
        self.calls.append(f"{'DRY' if dry else 'EVICT'} {pod}")
        if self.failures:
            raise self.failures.pop(0)
        if pod == self.refuse:
            raise StatusError(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
                method,
                path,
                (
                    (
                        "DisruptionBudget",
                        "The disruption budget pdb needs 2 healthy pods and has 2 currently",
                    ),
                ),
            )
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


def run(
    server: Server, group: list[Evict], **kwargs: Any
) -> tuple[list[bool], Events, list[tuple[str, str]]]:
    events = Events()
    refusals: list[tuple[str, str]] = []
    client: Any = server
    recorder: Any = events
    subject = Evictor(
        client,
        recorder,
        may_evict=lambda: server.leading,
        on_refused=lambda preemptor, why: refusals.append((preemptor, why)),
        **kwargs,
    )
    return asyncio.run(subject.evict_group(group)), events, refusals


def unavailable() -> StatusError:
    return StatusError(503, "ServiceUnavailable", "try again", "POST", "/pods/gang-0/eviction")


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evictor_module, "RETRY_BASE", 0.0)


def test_a_group_is_checked_by_dry_runs_then_marked_and_evicted_pod_by_pod() -> None:
    server = Server()
    done, events, refusals = run(server, [eviction(0), eviction(1)])
    assert done == [True, True]
    assert server.calls == [
        "DRY gang-0",
        "DRY gang-1",
        "PATCH gang-0",
        "EVICT gang-0",
        "PATCH gang-1",
        "EVICT gang-1",
    ]
    assert events.reasons == ["Preempted", "Preempted"]
    assert refusals == []


def test_a_budget_refusing_one_dry_run_sends_none_of_the_group_and_says_why() -> None:
    server = Server(refuse="gang-1")
    done, events, refusals = run(server, [eviction(0), eviction(1)])
    assert done == [False, False]
    assert server.calls == ["DRY gang-0", "DRY gang-1"]
    assert events.reasons == []
    ((preemptor, why),) = refusals
    assert preemptor == "ns/urgent"
    assert "ns/gang-1" in why and "The disruption budget pdb needs 2 healthy pods" in why


def test_an_eviction_failing_for_a_passing_reason_is_sent_again_until_it_lands() -> None:
    server = Server(unavailable(), TransportError("connection reset"))
    done, events, _ = run(server, [eviction(0)])
    assert done == [True]
    assert server.calls == [
        "DRY gang-0",
        "DRY gang-0",
        "DRY gang-0",
        "PATCH gang-0",
        "EVICT gang-0",
    ]
    assert events.reasons == ["Preempted"]


def test_a_rate_limiting_429_without_a_budget_is_a_passing_failure() -> None:
    throttled = StatusError(429, "TooManyRequests", "slow down", "POST", "/pods/gang-0/eviction")
    done, _, refusals = run(Server(throttled), [eviction(0)])
    assert done == [True]
    assert refusals == []


def test_an_eviction_refused_for_good_stops_the_group() -> None:
    forbidden = StatusError(403, "Forbidden", "no", "POST", "/pods/gang-0/eviction")
    server = Server(forbidden)
    done, _, _ = run(server, [eviction(0), eviction(1)])
    assert done == [False, False]
    assert server.calls == ["DRY gang-0"]


def test_a_pod_already_gone_counts_as_evicted_and_is_not_sent_again() -> None:
    server = Server(NotFound(404, "NotFound", "gone", "POST", "/pods/gang-0/eviction"))
    done, _, _ = run(server, [eviction(0)])
    assert done == [True]
    assert server.calls == ["DRY gang-0"]


def test_an_eviction_still_failing_at_the_deadline_is_given_up() -> None:
    server = Server(*[unavailable() for _ in range(100)])
    done, _, _ = run(server, [eviction(0)], retry_seconds=0.0)
    assert done == [False]
    assert server.calls == ["DRY gang-0"]


def test_a_replica_that_lost_the_lease_evicts_nothing() -> None:
    server = Server(leading=False)
    done, events, _ = run(server, [eviction(0)])
    assert done == [False]
    assert server.calls == []
    assert events.reasons == []
