"""The binder's PreBind: claims get selected-node or their static volume before the pod is
bound, and a PreBind the API server refuses fails the bind (the pod is pending again). And
its fence: a replica that loses its lease while a bind is under way sends no more of it."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from scheduler.api import wire
from scheduler.api.task import TaskStatus
from scheduler.cache.kinds import nodes, pods, storage
from scheduler.cache.world import World
from scheduler.effects import binder as binder_module
from scheduler.effects.binder import SELECTED_NODE, Binder
from scheduler.effects.recorder import ObjectRef
from scheduler.framework.decisions import Bind, ClaimBinding
from scheduler.kube.client import Gate
from scheduler.kube.errors import Fenced, StatusError
from scheduler.metrics import Metrics


class FakeClient:
    """Records PATCHes and bindings in order; refuses PATCHes of the paths in `refuse`;
    asks a request's gate as the real client does when the request is about to be written,
    and after each request it sent runs `after_each` (a lease lost meanwhile)."""

    def __init__(
        self,
        refuse: frozenset[str] = frozenset(),
        after_each: Any = lambda: None,
        *,
        storage: str = "binds",
    ) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.refuse = refuse
        self.after_each = after_each
        # What the PV controller and the provisioner do after a PreBind patch: "binds"
        # the claim, "resets" selected-node (the provisioner gives up), or "nothing".
        self.storage = storage
        self.world: World | None = None
        # At each binding posted: whether claim ns/data was bound by then.
        self.data_bound_at_bind: list[bool] = []

    def _send(self, gate: Gate | None, call: tuple[str, str, Any]) -> None:
        if gate is not None and not gate():
            raise Fenced("the request's gate closed before it was sent")
        self.calls.append(call)
        self.after_each()

    async def patch(self, path: str, body: Any, *, gate: Gate | None = None) -> bytes:
        self._send(gate, ("PATCH", path, body))
        if path in self.refuse:
            raise StatusError(409, "Conflict", "the object has been modified", "PATCH", path)
        self._storage_controllers(path, body)
        return b"{}"

    def _storage_controllers(self, path: str, body: Any) -> None:
        if self.world is None or self.storage == "nothing":
            return
        if "/persistentvolumeclaims/" in path:
            name = path.rsplit("/", 1)[-1]
            if self.storage == "resets":
                # Our patch comes back through the watch; then the provisioner gives up.
                world = self.world
                storage.upsert_claim(world, claim(name, annotations={SELECTED_NODE: "n1"}))
                asyncio.get_running_loop().call_later(
                    0.05, lambda: storage.upsert_claim(world, claim(name, annotations={}))
                )
            elif self.storage == "lags":
                # The claim is bound, but later than the next session.
                world = self.world
                asyncio.get_running_loop().call_later(
                    0.05, lambda: storage.upsert_claim(world, claim(name, volume=f"pvc-uid-{name}"))
                )
            else:
                storage.upsert_claim(self.world, claim(name, volume=f"pvc-uid-{name}"))
        elif "/persistentvolumes/" in path and self.storage == "binds":
            ref = body["spec"]["claimRef"]
            storage.upsert_claim(self.world, claim(ref["name"], volume=path.rsplit("/", 1)[-1]))

    async def bind(
        self, namespace: str, name: str, uid: str, node: str, *, gate: Gate | None = None
    ) -> None:
        self._send(gate, ("BIND", f"{namespace}/{name}", node))
        if self.world is not None:
            data = self.world.claim("ns", "data")
            self.data_bound_at_bind.append(data is not None and bool(data.spec.volume_name))


def claim(name: str, *, volume: str = "", annotations: dict[str, str] | None = None) -> Any:
    """A claim in namespace ns as the cache would hold it: bound to `volume`, or pending."""
    body = {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "annotations": annotations or {},
        },
        "spec": {"volumeName": volume},
        "status": {"phase": "Bound" if volume else "Pending"},
    }
    return wire.from_dict(body, wire.PersistentVolumeClaim)


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def record(self, ref: ObjectRef, event_type: str, reason: str, message: str) -> None:
        self.events.append((reason, message))


def pending_world() -> World:
    world = World(frozenset({"muster"}))
    nodes.upsert(world, wire.from_dict({"metadata": {"name": "n1"}}, wire.Node))
    for name in ("data", "logs"):
        storage.upsert_claim(world, claim(name))
    body = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "uid-p"},
        "spec": {"schedulerName": "muster", "containers": [{"name": "c"}]},
    }
    pods.upsert(world, wire.decode_pod(msgspec.json.encode(body)))
    return world


def run(
    client: FakeClient, bind: Bind, leading: list[bool] | None = None
) -> tuple[World, FakeRecorder]:
    world = pending_world()
    client.world = world
    recorder = FakeRecorder()
    lease = leading if leading is not None else [True]

    async def main() -> None:
        binder = Binder(
            client,  # type: ignore[arg-type]
            world,
            recorder,  # type: ignore[arg-type]
            Metrics(),
            concurrency=1,
            may_bind=lambda: lease[0],
        )
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


def test_a_lease_lost_after_the_prebind_stops_the_binding_and_the_pod_is_pending_again() -> None:
    leading = [True]

    def lose_lease() -> None:
        leading[0] = False

    client = FakeClient(after_each=lose_lease)
    world, recorder = run(client, Bind("ns", "p", "uid-p", "n1", "ns/g", (PROVISION,)), leading)
    assert [call[0] for call in client.calls] == ["PATCH"]  # the binding was never sent
    task = world.tasks["uid-p"]
    assert (task.status, task.node_name) == (TaskStatus.PENDING, "")
    assert recorder.events == []  # not a failure to report: another replica decides now


def test_a_bind_dispatched_by_a_replica_that_no_longer_leads_sends_nothing() -> None:
    client = FakeClient()
    world, recorder = run(client, Bind("ns", "p", "uid-p", "n1", "ns/g"), [False])
    assert client.calls == []
    assert world.tasks["uid-p"].status is TaskStatus.PENDING
    assert recorder.events == []


class FlakyBinds(FakeClient):
    """Answers the first `failures` bindings with 503, recording the pod's state in the
    cache at each failure."""

    def __init__(self, failures: int, world_of: Any, code: int = 503) -> None:
        super().__init__()
        self.failures = failures
        self.world_of = world_of
        self.code = code
        self.seen: list[tuple[TaskStatus, str]] = []

    async def bind(
        self, namespace: str, name: str, uid: str, node: str, *, gate: Gate | None = None
    ) -> None:
        self._send(gate, ("BIND", f"{namespace}/{name}", node))
        if self.failures > 0:
            self.failures -= 1
            task = self.world_of().tasks[uid]
            self.seen.append((task.status, task.node_name))
            path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
            raise StatusError(self.code, "Failed", "try again", "POST", path)


def run_flaky(
    monkeypatch: pytest.MonkeyPatch,
    failures: int,
    during_failure: Any = None,
    code: int = 503,
    answered: list[str] | None = None,
) -> tuple[World, FlakyBinds]:
    monkeypatch.setattr(binder_module, "RETRY_BASE", 0.001)
    world = pending_world()
    client = FlakyBinds(failures, lambda: world, code)
    if during_failure is not None:
        client.after_each = lambda: during_failure(world)

    async def main() -> None:
        binder = Binder(client, world, FakeRecorder(), Metrics(), concurrency=1)  # type: ignore[arg-type]
        if answered is not None:
            binder.when_answered(answered.append)
        binder.dispatch([Bind("ns", "p", "uid-p", "n1", "ns/g")])
        await binder.drain()
        await binder.close()

    asyncio.run(main())
    return world, client


def test_a_bind_failing_with_5xx_keeps_its_room_and_is_sent_again_to_the_same_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world, client = run_flaky(monkeypatch, failures=3)
    assert client.calls == [("BIND", "ns/p", "n1")] * 4
    # between the tries the pod stayed counted on n1: nobody else could take its room
    assert client.seen == [(TaskStatus.BINDING, "n1")] * 3
    task = world.tasks["uid-p"]
    assert (task.status, task.node_name) == (TaskStatus.BOUND, "n1")


@pytest.mark.parametrize(("code", "status"), [(503, TaskStatus.BOUND), (404, TaskStatus.PENDING)])
def test_the_binder_names_a_binds_gang_once_when_the_bind_has_its_last_answer(
    monkeypatch: pytest.MonkeyPatch, code: int, status: TaskStatus
) -> None:
    # Sent again after two 503s, then bound; or failed for good at once (404): either way
    # the gang is named once, when nothing more of that bind will happen.
    answered: list[str] = []
    world, _ = run_flaky(monkeypatch, failures=2, code=code, answered=answered)
    assert answered == ["ns/g"]
    assert world.tasks["uid-p"].status is status


def test_a_bind_refused_403_by_a_restarted_servers_authorizer_keeps_its_room_and_goes_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # kube-apiserver answers 403 for its first seconds, until its RBAC authorizer has synced:
    # giving the room back would let other work take it while the rest of the gang is bound
    world, client = run_flaky(monkeypatch, failures=2, code=403)
    assert client.calls == [("BIND", "ns/p", "n1")] * 3
    assert client.seen == [(TaskStatus.BINDING, "n1")] * 2
    task = world.tasks["uid-p"]
    assert (task.status, task.node_name) == (TaskStatus.BOUND, "n1")


def test_retries_end_when_the_node_is_gone_and_the_pod_is_pending_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world, client = run_flaky(
        monkeypatch, failures=5, during_failure=lambda w: nodes.delete(w, "n1")
    )
    assert len(client.calls) == 1
    task = world.tasks["uid-p"]
    assert (task.status, task.node_name) == (TaskStatus.PENDING, "")


@pytest.fixture
def quick_volumes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(binder_module, "VOLUME_POLL", 0.005)


@pytest.mark.usefixtures("quick_volumes")
def test_the_pod_is_bound_only_once_its_claims_are() -> None:
    client = FakeClient(storage="lags")
    world, _ = run(client, Bind("ns", "p", "uid-p", "n1", "ns/g", (PROVISION,)))
    assert [call[0] for call in client.calls] == ["PATCH", "BIND"]
    assert client.data_bound_at_bind == [True]  # posted only once the claim was bound
    assert world.tasks["uid-p"].status is TaskStatus.BOUND


@pytest.mark.usefixtures("quick_volumes")
def test_a_provisioner_giving_the_claim_up_fails_the_bind_and_the_pod_is_pending_again() -> None:
    client = FakeClient(storage="resets")
    world, recorder = run(client, Bind("ns", "p", "uid-p", "n1", "ns/g", (PROVISION,)))
    assert [call[0] for call in client.calls] == ["PATCH"]  # never bound to n1
    task = world.tasks["uid-p"]
    assert (task.status, task.node_name) == (TaskStatus.PENDING, "")
    ((reason, message),) = recorder.events
    assert reason == "FailedScheduling"
    assert "the provisioner gave claim ns/data up on node n1" in message


@pytest.mark.usefixtures("quick_volumes")
def test_claims_never_bound_fail_the_bind_at_its_timeout() -> None:
    client = FakeClient(storage="nothing")
    bind = Bind("ns", "p", "uid-p", "n1", "ns/g", (PROVISION,), claims_timeout=0.05)
    world, recorder = run(client, bind)
    assert [call[0] for call in client.calls] == ["PATCH"]
    assert world.tasks["uid-p"].status is TaskStatus.PENDING
    ((_, message),) = recorder.events
    assert "the claims were not bound within 0.05s" in message


@pytest.mark.usefixtures("quick_volumes")
def test_a_bind_waiting_for_its_claims_holds_no_worker() -> None:
    client = FakeClient(storage="lags")
    world = pending_world()
    client.world = world
    body = {
        "metadata": {"name": "q", "namespace": "ns", "uid": "uid-q"},
        "spec": {"schedulerName": "muster", "containers": [{"name": "c"}]},
    }
    pods.upsert(world, wire.decode_pod(msgspec.json.encode(body)))

    async def main() -> None:
        binder = Binder(client, world, FakeRecorder(), Metrics(), concurrency=1)  # type: ignore[arg-type]
        binder.dispatch(
            [
                Bind("ns", "p", "uid-p", "n1", "ns/g", (PROVISION,)),
                Bind("ns", "q", "uid-q", "n1", "ns/g"),
            ]
        )
        await binder.drain()
        await binder.close()

    asyncio.run(main())
    # one worker: q's binding went while p waited for its claim
    assert [call[:2] for call in client.calls] == [
        ("PATCH", CLAIM_PATH),
        ("BIND", "ns/q"),
        ("BIND", "ns/p"),
    ]


@pytest.mark.usefixtures("quick_volumes")
def test_a_pod_deleted_while_its_claims_wait_ends_the_wait_without_an_event() -> None:
    client = FakeClient(storage="nothing")
    world = pending_world()
    client.world = world
    recorder = FakeRecorder()
    client.after_each = lambda: pods.delete(world, "uid-p")

    async def main() -> None:
        binder = Binder(client, world, recorder, Metrics(), concurrency=1)  # type: ignore[arg-type]
        binder.dispatch([Bind("ns", "p", "uid-p", "n1", "ns/g", (PROVISION,), claims_timeout=60)])
        await asyncio.wait_for(binder.drain(), timeout=5)
        await binder.close()

    asyncio.run(main())
    assert [call[0] for call in client.calls] == ["PATCH"]
    assert recorder.events == []


def test_on_shutdown_a_bind_waiting_to_be_sent_again_is_given_up_and_a_fenced_one_never_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(binder_module, "RETRY_BASE", 60.0)  # the retry would come much later
    world = pending_world()
    second = {
        "metadata": {"name": "q", "namespace": "ns", "uid": "uid-q"},
        "spec": {"schedulerName": "muster", "containers": [{"name": "c"}]},
    }
    pods.upsert(world, wire.decode_pod(msgspec.json.encode(second)))
    client = FlakyBinds(1, lambda: world)

    async def main() -> None:
        binder = Binder(client, world, FakeRecorder(), Metrics(), concurrency=1)  # type: ignore[arg-type]
        binder.dispatch([Bind("ns", "p", "uid-p", "n1", "ns/g")])
        while not binder._timers:  # its first try failed; the next is an hour away
            await asyncio.sleep(0.001)
        binder.stop_retrying()
        binder.fence()
        binder.dispatch([Bind("ns", "q", "uid-q", "n1", "ns/g")])
        await asyncio.wait_for(binder.drain(), timeout=5)
        await binder.close()

    asyncio.run(main())
    assert client.calls == [("BIND", "ns/p", "n1")], "a bind was sent after the fence"
    for uid in ("uid-p", "uid-q"):
        task = world.tasks[uid]
        assert (task.status, task.node_name) == (TaskStatus.PENDING, ""), uid
