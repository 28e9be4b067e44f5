"""The binder's PreBind: claims get selected-node or their static volume before the pod is
bound, and a PreBind the API server refuses fails the bind (the pod is pending again)."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from scheduler.api import wire
from scheduler.api.task import TaskStatus
from scheduler.cache.world import World
from scheduler.effects.binder import Binder
from scheduler.effects.recorder import ObjectRef
from scheduler.framework.decisions import Bind, ClaimBinding
from scheduler.kube.errors import StatusError
from scheduler.metrics import Metrics


class FakeClient:
    """Records PATCHes and bindings in order; refuses PATCHes of the paths in `refuse`."""

    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.refuse = refuse

    async def patch(self, path: str, body: Any) -> bytes:
        self.calls.append(("PATCH", path, body))
        if path in self.refuse:
            raise StatusError(409, "Conflict", "the object has been modified", "PATCH", path)
        return b"{}"

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        self.calls.append(("BIND", f"{namespace}/{name}", node))


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def record(self, ref: ObjectRef, event_type: str, reason: str, message: str) -> None:
        self.events.append((reason, message))


def pending_world() -> World:
    world = World(frozenset({"muster"}))
    world.upsert_node(wire.from_dict({"metadata": {"name": "n1"}}, wire.Node))
    body = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "uid-p"},
        "spec": {"schedulerName": "muster", "containers": [{"name": "c"}]},
    }
    world.upsert_pod(wire.decode_pod(msgspec.json.encode(body)))
    return world


def run(client: FakeClient, bind: Bind) -> tuple[World, FakeRecorder]:
    world = pending_world()
    recorder = FakeRecorder()

    async def main() -> None:
        binder = Binder(client, world, recorder, Metrics(), concurrency=1)  # type: ignore[arg-type]
        binder.dispatch([bind])
        await binder.drain()
        await binder.close()

    asyncio.run(main())
    return world, recorder


PROVISION = ClaimBinding("ns", "data", "uid-data")
STATIC = ClaimBinding("ns", "logs", "uid-logs", volume="pv-1", volume_resource_version="42")
CLAIM_PATH = "/api/v1/namespaces/ns/persistentvolumeclaims/data"
VOLUME_PATH = "/api/v1/persistentvolumes/pv-1"


def test_claims_are_prebound_in_order_before_the_pod_is_bound() -> None:
    client = FakeClient()
    world, _ = run(client, Bind("ns", "p", "uid-p", "n1", "ns/g", (PROVISION, STATIC)))
    assert client.calls == [
        (
            "PATCH",
            CLAIM_PATH,
            {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n1"}}},
        ),
        (
            "PATCH",
            VOLUME_PATH,
            {
                "metadata": {
                    "resourceVersion": "42",
                    "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"},
                },
                "spec": {
                    "claimRef": {
                        "kind": "PersistentVolumeClaim",
                        "apiVersion": "v1",
                        "namespace": "ns",
                        "name": "logs",
                        "uid": "uid-logs",
                    }
                },
            },
        ),
        ("BIND", "ns/p", "n1"),
    ]
    assert world.tasks["uid-p"].status is TaskStatus.BOUND


def test_a_refused_prebind_fails_the_bind_and_the_pod_is_pending_again() -> None:
    client = FakeClient(refuse=frozenset({VOLUME_PATH}))
    world, recorder = run(client, Bind("ns", "p", "uid-p", "n1", "ns/g", (STATIC,)))
    assert [call[0] for call in client.calls] == ["PATCH"]  # no binding was posted
    task = world.tasks["uid-p"]
    assert (task.status, task.node_name) == (TaskStatus.PENDING, "")
    ((reason, message),) = recorder.events
    assert reason == "FailedScheduling" and "the object has been modified" in message


def test_a_bind_without_claims_posts_only_the_binding() -> None:
    client = FakeClient()
    run(client, Bind("ns", "p", "uid-p", "n1", "ns/g"))
    assert client.calls == [("BIND", "ns/p", "n1")]
