"""ScaleUpWriter: a request's templates go first, then the request, then the templates are
handed to it; what exists already or is gone counts as done; a write in flight or that
failed lately is not sent again; what cannot be written is said on the PodGroup."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec

from scheduler.effects.scale_up import RETRY_AFTER_FAILURE, ScaleUpWriter
from scheduler.framework.decisions import (
    AnnotatePod,
    CreateProvisioningRequest,
    DeleteProvisioningRequest,
    PodSetTemplate,
)
from scheduler.kube.errors import Conflict, NotFound, StatusError

PODGROUP_UID = "pg-uid"


def creation(sets: int = 1) -> CreateProvisioningRequest:
    return CreateProvisioningRequest(
        namespace="ns",
        name="big-scaleup-1",
        podgroup="big",
        podgroup_uid=PODGROUP_UID,
        attempt=1,
        class_name="best-effort-atomic-scale-up.autoscaling.x-k8s.io",
        parameters=(),
        pod_sets=tuple(
            PodSetTemplate(f"big-scaleup-1-{i}", 4, {"spec": {"containers": []}})
            for i in range(sets)
        ),
    )


class Server:
    """Records the writer's requests; `errors` maps "METHOD path-suffix" to what it raises."""

    def __init__(self, **errors: Exception) -> None:
        self.errors = errors
        self.calls: list[tuple[str, str, Any, str]] = []

    async def request(self, method: str, path: str, **kwargs: Any) -> bytes:
        kind = path.rsplit("/", 2)[-2] if method != "POST" else path.rsplit("/", 1)[-1]
        self.calls.append((method, kind, kwargs.get("body"), kwargs.get("content_type", "")))
        error = self.errors.get(f"{method} {kind}")
        if error is not None:
            raise error
        return json.dumps({"metadata": {"uid": f"uid-of-{method}-{kind}"}}).encode()


class Events:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str]] = []
        self.refs: list[Any] = []

    def record(self, ref: Any, event_type: str, reason: str, message: str) -> None:
        self.recorded.append((ref.name, reason, message))
        self.refs.append(ref)


def run(writer: ScaleUpWriter, *actions: Any) -> None:
    async def go() -> None:
        for action in actions:
            action()
        await writer.drain()

    asyncio.run(go())


def test_templates_first_then_the_request_then_the_templates_are_handed_to_it() -> None:
    server, events = Server(), Events()
    writer = ScaleUpWriter(server, events)  # type: ignore[arg-type]
    run(writer, lambda: writer.create(creation(2)))
    steps = [(method, kind) for method, kind, _, _ in server.calls]
    assert steps == [
        ("POST", "podtemplates"),
        ("POST", "podtemplates"),
        ("POST", "provisioningrequests"),
        ("PATCH", "podtemplates"),
        ("PATCH", "podtemplates"),
    ]
    template, request = server.calls[0][2], server.calls[2][2]
    assert template["metadata"]["ownerReferences"][0]["uid"] == PODGROUP_UID
    assert request["metadata"]["ownerReferences"][0]["kind"] == "PodGroup"
    assert request["metadata"]["labels"]["scale-up.muster.dev/attempt"] == "1"
    assert request["spec"]["podSets"] == [
        {"podTemplateRef": {"name": "big-scaleup-1-0"}, "count": 4},
        {"podTemplateRef": {"name": "big-scaleup-1-1"}, "count": 4},
    ]
    handed = server.calls[3]
    assert handed[2]["metadata"]["ownerReferences"][0] == {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "name": "big-scaleup-1",
        "uid": "uid-of-POST-provisioningrequests",
        "controller": True,
    }
    assert handed[3] == "application/merge-patch+json"
    assert events.recorded == []


def test_a_request_that_exists_already_is_read_back_for_its_uid() -> None:
    conflict = Conflict(409, "AlreadyExists", "exists", "POST", "/x")
    server = Server(**{"POST provisioningrequests": conflict, "POST podtemplates": conflict})
    writer = ScaleUpWriter(server, Events())  # type: ignore[arg-type]
    run(writer, lambda: writer.create(creation()))
    steps = [(method, kind) for method, kind, _, _ in server.calls]
    assert steps == [
        ("POST", "podtemplates"),
        ("POST", "provisioningrequests"),
        ("GET", "provisioningrequests"),
        ("PATCH", "podtemplates"),
    ]
    assert (
        server.calls[3][2]["metadata"]["ownerReferences"][0]["uid"]
        == "uid-of-GET-provisioningrequests"
    )


def test_a_missing_crd_is_said_on_the_podgroup_and_not_tried_again_at_once() -> None:
    missing = NotFound(
        404,
        "NotFound",
        "the server could not find the requested resource",
        "POST",
        "/apis/autoscaling.x-k8s.io/v1/namespaces/ns/provisioningrequests",
    )
    server, events = Server(**{"POST provisioningrequests": missing}), Events()
    now = [100.0]
    writer = ScaleUpWriter(server, events, clock=lambda: now[0])  # type: ignore[arg-type]
    run(writer, lambda: writer.create(creation()))
    ((podgroup, reason, message),) = events.recorded
    assert (podgroup, reason) == ("big", "ScaleUpRequestFailed")
    assert "install cluster-autoscaler's ProvisioningRequest CRD" in message
    calls = len(server.calls)
    run(writer, lambda: writer.create(creation()))
    assert len(server.calls) == calls
    now[0] += RETRY_AFTER_FAILURE
    run(writer, lambda: writer.create(creation()))
    assert len(server.calls) > calls


def test_deleting_takes_what_is_gone_as_deleted() -> None:
    gone = NotFound(404, "NotFound", "gone", "DELETE", "/x")
    server, events = Server(**{"DELETE provisioningrequests": gone}), Events()
    writer = ScaleUpWriter(server, events)  # type: ignore[arg-type]
    deletion = DeleteProvisioningRequest(
        "ns", "big-scaleup-1", "big", ("big-scaleup-1-0",), "placed"
    )
    run(writer, lambda: writer.delete(deletion))
    assert [(m, k) for m, k, _, _ in server.calls] == [
        ("DELETE", "provisioningrequests"),
        ("DELETE", "podtemplates"),
    ]
    assert events.recorded == []


def test_a_pods_condition_waits_for_its_annotation_and_one_write_serves_many_sessions() -> None:
    server = Server()
    writer = ScaleUpWriter(server, Events())  # type: ignore[arg-type]
    annotation = AnnotatePod("ns", "big-0", "uid-0", "ns/big", "big-scaleup-1", "cls")
    done: list[int] = []

    def twice() -> None:
        writer.annotate(annotation, lambda: done.append(len(server.calls)))
        writer.annotate(annotation, lambda: done.append(len(server.calls)))

    run(writer, twice)
    ((method, kind, body, content_type),) = server.calls
    assert (method, kind, content_type) == ("PATCH", "pods", "application/merge-patch+json")
    assert body == {
        "metadata": {
            "annotations": {
                "autoscaling.x-k8s.io/consume-provisioning-request": "big-scaleup-1",
                "autoscaling.x-k8s.io/provisioning-class-name": "cls",
            }
        }
    }
    # Each session's PodScheduled write went after the annotation was written.
    assert done == [1, 1]


def test_removing_the_annotations_sets_them_to_null() -> None:
    server = Server()
    writer = ScaleUpWriter(server, Events())  # type: ignore[arg-type]
    run(writer, lambda: writer.annotate(AnnotatePod("ns", "big-0", "uid-0", "ns/big", "", "")))
    annotations = server.calls[0][2]["metadata"]["annotations"]
    assert set(annotations.values()) == {None}


def test_a_refused_template_stops_the_request_and_is_said_on_the_podgroup() -> None:
    failure = StatusError(422, "Invalid", "bad", "POST", "/x")
    server, events = Server(**{"POST podtemplates": failure}), Events()
    writer = ScaleUpWriter(server, events)  # type: ignore[arg-type]
    run(writer, lambda: writer.create(creation()))
    assert [(m, k) for m, k, _, _ in server.calls] == [("POST", "podtemplates")]
    assert events.recorded[0][1] == "ScaleUpRequestFailed"
    assert writer.in_flight == 0


def test_what_cannot_be_written_is_said_on_a_native_podgroup_under_its_own_api_version() -> None:
    failure = StatusError(403, "Forbidden", "no", "POST", "/x")
    errors = {"POST podtemplates": failure, "DELETE provisioningrequests": failure}
    server, events = Server(**errors), Events()
    writer = ScaleUpWriter(server, events)  # type: ignore[arg-type]
    native = msgspec.structs.replace(
        creation(), name="big-scaleup-1-native", podgroup_api_version="scheduling.k8s.io/v1alpha2"
    )
    deletion = DeleteProvisioningRequest(
        "ns", "big-scaleup-1-native", "big", (), "its gang is placed", "scheduling.k8s.io/v1alpha2"
    )
    run(writer, lambda: writer.create(native), lambda: writer.delete(deletion))
    assert [(r.kind, r.api_version, r.name) for r in events.refs] == [
        ("PodGroup", "scheduling.k8s.io/v1alpha2", "big")
    ] * 2
