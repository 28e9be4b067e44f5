"""The default queue is created when missing, opened when it has no state, and retried
until the API server answers; config errors are announced on the scheduler's own pod."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.effects.queues import ensure_default_queue
from scheduler.effects.recorder import ObjectRef, own_pod
from scheduler.kube.errors import Conflict, Retryable, TransportError

QUEUE_PATH = "/apis/scheduling.volcano.sh/v1beta1/queues"


class FakeClient:
    """Holds queues by name and fails the first `failures` requests it gets."""

    def __init__(self, queues: dict[str, dict[str, Any]], failures: int = 0) -> None:
        self.queues = queues
        self.failures = failures
        self.requests: list[tuple[str, str]] = []

    def _maybe_fail(self, method: str, path: str) -> None:
        self.requests.append((method, path))
        if self.failures:
            self.failures -= 1
            raise TransportError("connection refused")

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self._maybe_fail("POST", path)
        name = body["metadata"]["name"]
        if name in self.queues:
            raise Conflict(409, "AlreadyExists", f"queues {name!r} already exists", "POST", path)
        self.queues[name] = {**body, "status": {}}
        return body

    async def get_json(self, path: str) -> dict[str, Any]:
        self._maybe_fail("GET", path)
        return self.queues[path.rsplit("/", 1)[1]]

    async def patch(self, path: str, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self._maybe_fail("PATCH", path)
        name = path.removesuffix("/status").rsplit("/", 1)[1]
        self.queues[name].setdefault("status", {}).update(body["status"])
        return self.queues[name]


def ensure(client: FakeClient, name: str = "default") -> None:
    fake: Any = client
    asyncio.run(ensure_default_queue(fake, name))


def test_a_missing_default_queue_is_created_open_with_volcanos_defaults() -> None:
    client = FakeClient({})
    ensure(client)
    queue = client.queues["default"]
    assert queue["spec"] == {"weight": 1, "reclaimable": True}
    assert queue["status"] == {"state": "Open"}


def test_an_existing_queue_keeps_its_spec_and_state() -> None:
    closed = {"metadata": {"name": "default"}, "spec": {"weight": 5}, "status": {"state": "Closed"}}
    client = FakeClient({"default": closed})
    ensure(client)
    assert client.queues["default"]["spec"] == {"weight": 5}
    assert client.queues["default"]["status"] == {"state": "Closed"}
    assert ("PATCH", f"{QUEUE_PATH}/default/status") not in client.requests


def test_an_existing_queue_without_a_state_is_opened() -> None:
    client = FakeClient({"default": {"metadata": {"name": "default"}, "spec": {}}})
    ensure(client)
    assert client.queues["default"]["status"] == {"state": "Open"}


def test_an_unreachable_api_server_is_retried_with_a_growing_pause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pauses: list[float] = []

    async def no_wait(seconds: float) -> None:
        pauses.append(seconds)

    monkeypatch.setattr("scheduler.effects.queues.asyncio.sleep", no_wait)
    client = FakeClient({}, failures=3)
    ensure(client)
    assert pauses == [0.5, 1.0, 1.5]
    assert client.queues["default"]["status"] == {"state": "Open"}


def test_a_refusal_is_retried_like_a_broken_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_wait(_: float) -> None:
        return None

    class RefusesOnce(FakeClient):
        async def get_json(self, path: str) -> dict[str, Any]:
            if not any(method == "GET" for method, _ in self.requests):
                self.requests.append(("GET", path))
                raise Retryable(503, "ServiceUnavailable", "etcd leader changed", "GET", path)
            return await super().get_json(path)

    monkeypatch.setattr("scheduler.effects.queues.asyncio.sleep", no_wait)
    client = RefusesOnce({})
    ensure(client)
    assert [m for m, _ in client.requests].count("GET") == 2
    assert client.queues["default"]["status"] == {"state": "Open"}


def test_a_state_set_between_the_read_and_the_write_is_not_overwritten() -> None:
    # Another replica (or the controller, or a user closing the queue) sets the state after
    # this one read it stateless: its write, conditional on what it read, is refused, and it
    # reads the queue again.
    class SetMeanwhile(FakeClient):
        async def get_json(self, path: str) -> dict[str, Any]:
            queue = await super().get_json(path)
            return {**queue, "metadata": {**queue["metadata"], "resourceVersion": "1"}}

        async def patch(self, path: str, body: dict[str, Any], **_: Any) -> dict[str, Any]:
            self.requests.append(("PATCH", path))
            queue = self.queues["default"]
            if not queue.get("status", {}).get("state"):
                queue["status"] = {"state": "Closed"}  # the other writer, first
            if body["metadata"]["resourceVersion"] != "2":
                raise Conflict(409, "Conflict", "the object has been modified", "PATCH", path)
            raise AssertionError("never reached: the version read is always stale here")

    client = SetMeanwhile({"default": {"metadata": {"name": "default"}, "spec": {}}})
    ensure(client)
    assert client.queues["default"]["status"] == {"state": "Closed"}
    assert [method for method, _ in client.requests].count("GET") == 2


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        pytest.param(
            {"POD_NAMESPACE": "muster-system", "POD_NAME": "muster-0", "POD_UID": "u-1"},
            ObjectRef("Pod", "v1", "muster-system", "muster-0", "u-1"),
            id="in-a-pod",
        ),
        pytest.param(
            {"POD_NAMESPACE": "muster-system", "POD_NAME": "muster-0"},
            ObjectRef("Pod", "v1", "muster-system", "muster-0", ""),
            id="without-uid",
        ),
        pytest.param({"POD_NAME": "muster-0"}, None, id="without-namespace"),
        pytest.param({"POD_NAMESPACE": "muster-system", "POD_NAME": ""}, None, id="empty-name"),
        pytest.param({}, None, id="outside-a-pod"),
    ],
)
def test_the_own_pod_comes_from_the_downward_api_variables(
    environ: dict[str, str], expected: ObjectRef | None
) -> None:
    assert own_pod(environ) == expected
