"""The binder writes a pod's ResourceClaims before its binding, as kube-scheduler does: the
finalizer, then the allocation and the reservation in one status write; a claim that cannot
be had fails the bind (the pod pending again, its devices free again), and a conflict reads
the claim again."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import msgspec

from scheduler.api import dra, wire
from scheduler.api.task import TaskStatus
from scheduler.cache.kinds import nodes, pods, resourceclaims
from scheduler.cache.world import World
from scheduler.effects.binder import Binder
from scheduler.effects.recorder import ObjectRef
from scheduler.framework.decisions import DeviceBind, DeviceClaimBinding
from scheduler.kube.client import Gate
from scheduler.kube.errors import Fenced, StatusError, status_error
from scheduler.metrics import Metrics
from tests.unit.dra.devices import DRIVER, claim

CLAIM = "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c"
FINALIZER = dra.DELETE_PROTECTION_FINALIZER


def result(device: str = "gpu-0") -> dra.AllocationResult:
    return dra.AllocationResult(
        devices=dra.DeviceAllocationResult(
            results=[
                dra.DeviceRequestAllocationResult(
                    request="gpu", driver=DRIVER, pool="n1", device=device
                )
            ]
        )
    )


class FakeApi:
    """One claim, ns/c, as the API server holds it: merge patches applied when their
    resourceVersion is the claim's (else 409); `conflicts` status patches answered 409 first
    (another writer moved the claim); every request recorded."""

    def __init__(self, stored: dra.ResourceClaim, *, conflicts: int = 0) -> None:
        self.claim: dict[str, Any] = msgspec.to_builtins(stored)
        self.claim["metadata"]["resourceVersion"] = "1"
        self.calls: list[tuple[str, str, Any]] = []
        self.conflicts = conflicts

    def _send(self, gate: Gate | None, call: tuple[str, str, Any]) -> None:
        if gate is not None and not gate():
            raise Fenced("the request's gate closed before it was sent")
        self.calls.append(call)

    async def patch(self, path: str, body: Any, *, gate: Gate | None = None) -> bytes:
        self._send(gate, ("PATCH", path, copy.deepcopy(body)))
        meta = self.claim["metadata"]
        if path.endswith("/status") and self.conflicts:
            self.conflicts -= 1
            meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
            raise status_error(409, b'{"reason": "Conflict"}', "PATCH", path)
        if body["metadata"]["resourceVersion"] != meta["resourceVersion"]:
            raise status_error(409, b'{"reason": "Conflict"}', "PATCH", path)
        if "finalizers" in body["metadata"]:
            meta["finalizers"] = body["metadata"]["finalizers"]
        if "status" in body:
            status = self.claim.setdefault("status", {})
            for key, value in body["status"].items():
                if value is None:
                    status.pop(key, None)
                else:
                    status[key] = value
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        return msgspec.json.encode(self.claim)

    async def request(self, method: str, path: str, **_: Any) -> bytes:
        self._send(None, (method, path, None))
        return msgspec.json.encode(self.claim)

    async def bind(
        self, namespace: str, name: str, uid: str, node: str, *, gate: Gate | None = None
    ) -> None:
        self._send(gate, ("BIND", f"{namespace}/{name}", node))


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def record(self, ref: ObjectRef, event_type: str, reason: str, message: str) -> None:
        self.events.append((reason, message))


def run(
    api: FakeApi, bind: DeviceBind, cached: dra.ResourceClaim, leading: bool = True
) -> tuple[World, FakeRecorder]:
    world = World(frozenset({"muster"}))
    nodes.upsert(world, wire.from_dict({"metadata": {"name": "n1"}}, wire.Node))
    cached.metadata.resource_version = "1"
    resourceclaims.upsert(world, cached)
    body = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "uid-p"},
        "spec": {"schedulerName": "muster", "containers": [{"name": "c"}]},
    }
    pods.upsert(world, wire.decode_pod(msgspec.json.encode(body)))
    recorder = FakeRecorder()

    async def main() -> None:
        binder = Binder(
            api,  # type: ignore[arg-type]
            world,
            recorder,  # type: ignore[arg-type]
            Metrics(),
            concurrency=1,
            may_bind=lambda: leading,
        )
        binder.dispatch([bind])
        await binder.drain()
        await binder.close()

    asyncio.run(main())
    return world, recorder


def device_bind(allocation: dra.AllocationResult | None, *, replaces: bool = False) -> DeviceBind:
    written = DeviceClaimBinding("ns", "c", "c-uid", allocation, replaces)
    return DeviceBind("ns", "p", "uid-p", "n1", "ns/g", devices=(written,))


RESERVED = [{"resource": "pods", "name": "p", "uid": "uid-p"}]


def test_the_finalizer_then_the_allocation_and_reservation_are_written_before_the_bind() -> None:
    api = FakeApi(claim("c"))
    world, _ = run(api, device_bind(result()), claim("c"))
    assert api.calls == [
        ("PATCH", CLAIM, {"metadata": {"finalizers": [FINALIZER], "resourceVersion": "1"}}),
        (
            "PATCH",
            f"{CLAIM}/status",
            {
                "metadata": {"resourceVersion": "2"},
                "status": {"reservedFor": RESERVED, "allocation": msgspec.to_builtins(result())},
            },
        ),
        ("BIND", "ns/p", "n1"),
    ]
    assert world.tasks["uid-p"].status is TaskStatus.BOUND


def test_a_claim_allocated_already_only_gains_the_reservation() -> None:
    held = claim("c", allocated=[("gpu", "n1", "gpu-0")])
    held.metadata.finalizers = [FINALIZER]
    api = FakeApi(held)
    run(api, device_bind(None), held)
    assert [(method, path) for method, path, _ in api.calls] == [
        ("PATCH", f"{CLAIM}/status"),
        ("BIND", "ns/p"),
    ]
    assert api.calls[0][2]["status"] == {"reservedFor": RESERVED}


def test_a_claim_allocated_elsewhere_meanwhile_fails_the_bind_and_frees_its_devices() -> None:
    elsewhere = claim("c", allocated=[("gpu", "n1", "gpu-1")])
    api = FakeApi(elsewhere)
    world, recorder = run(api, device_bind(result("gpu-0")), elsewhere)
    assert [call[0] for call in api.calls] == []  # nothing written, no binding
    task = world.tasks["uid-p"]
    assert (task.status, task.node_name) == (TaskStatus.PENDING, "")
    ((reason, message),) = recorder.events
    assert reason == "FailedScheduling"
    assert "claim ns/c got allocated elsewhere in the meantime" in message
    assert world.assumed_claims == {}


def test_a_conflict_reads_the_claim_again_and_the_write_succeeds() -> None:
    api = FakeApi(claim("c"), conflicts=1)
    world, _ = run(api, device_bind(result()), claim("c"))
    assert [(method, path.rsplit("/", 1)[-1]) for method, path, _ in api.calls] == [
        ("PATCH", "c"),
        ("PATCH", "status"),
        ("GET", "c"),
        ("PATCH", "status"),
        ("BIND", "p"),
    ]
    assert world.tasks["uid-p"].status is TaskStatus.BOUND


def test_a_stale_allocation_is_cleared_before_the_new_one_is_written() -> None:
    stale = claim("c", allocated=[("gpu", "n1", "gpu-1")], reserved_for=["uid-p"])
    stale.metadata.finalizers = [FINALIZER]
    api = FakeApi(stale)
    run(api, device_bind(result("gpu-0"), replaces=True), stale)
    statuses = [body["status"] for method, _, body in api.calls if method == "PATCH"]
    assert statuses == [
        {"allocation": None, "reservedFor": None},
        {"reservedFor": RESERVED, "allocation": msgspec.to_builtins(result("gpu-0"))},
    ]


def test_a_replica_that_lost_its_lease_writes_no_claim() -> None:
    api = FakeApi(claim("c"))
    world, _ = run(api, device_bind(result()), claim("c"), leading=False)
    assert api.calls == []
    assert world.assumed_claims == {}


def test_the_api_servers_refusal_of_the_status_fails_the_bind_in_kube_schedulers_words() -> None:
    class Refusing(FakeApi):
        async def patch(self, path: str, body: Any, *, gate: Gate | None = None) -> bytes:
            if path.endswith("/status"):
                self._send(gate, ("PATCH", path, body))
                raise StatusError(422, "Invalid", "status.reservedFor: Too many", "PATCH", path)
            return await super().patch(path, body, gate=gate)

    api = Refusing(claim("c"))
    world, recorder = run(api, device_bind(result()), claim("c"))
    ((_, message),) = recorder.events
    assert "add allocation and reservation to claim ns/c: status.reservedFor: Too many" in message
    assert world.tasks["uid-p"].status is TaskStatus.PENDING
