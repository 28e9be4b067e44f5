"""A native PodGroup's status is written as kube-scheduler writes it: a strategic merge patch
of podgroups/status at its version, conditions only, muster's unwanted ones deleted by key;
only while it is muster's; its events name the native kind."""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.api.native import V1ALPHA2, V1BETA1
from scheduler.api.podgroup import PodGroupPhase
from scheduler.effects.status_writer import StatusWriter
from scheduler.framework.decisions import (
    GroupCondition,
    InvalidObjectReport,
    NativeObjectReport,
    NativeStatusUpdate,
)
from scheduler.kube.client import STRATEGIC_MERGE_PATCH


class Patches:
    """Records every patch: path, body and content type."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, str]] = []

    async def patch(self, path: str, body: Any, *, content_type: str = "", **_: Any) -> bytes:
        self.sent.append((path, body, content_type))
        return b"{}"


class Events:
    """Records every event: its object reference, type and reason."""

    def __init__(self) -> None:
        self.recorded: list[tuple[Any, str, str]] = []

    def record(self, ref: Any, kind: str, reason: str, message: str) -> None:
        self.recorded.append((ref, kind, reason))

    def yield_to(self, cleared: Any) -> None:
        pass


def waiting(name: str, version: str, removed: tuple[str, ...] = ()) -> NativeStatusUpdate:
    kind = "PodGroupScheduled" if version == V1ALPHA2 else "PodGroupInitiallyScheduled"
    return NativeStatusUpdate(
        "ns",
        name,
        PodGroupPhase.INQUEUE,
        (
            GroupCondition(kind, "False", "Unschedulable", "4/4 tasks in gang unschedulable"),
            GroupCondition("Admitted", "True", "Enqueued", "", "2026-01-01T00:00:00Z"),
        ),
        0,
        0,
        0,
        uid=f"uid-{name}",
        version=version,
        removed=removed,
    )


def write(
    updates: list[NativeStatusUpdate], is_ours: Any = lambda key: True
) -> tuple[Patches, Events]:
    async def main() -> tuple[Patches, Events]:
        client, events = Patches(), Events()
        writer = StatusWriter(client, events, is_ours=is_ours)  # type: ignore[arg-type]
        writer.podgroups(updates)
        await writer.drain()
        return client, events

    return asyncio.run(main())


def test_a_native_podgroups_conditions_go_by_strategic_merge_patch_of_its_status() -> None:
    client, _ = write([waiting("g", V1BETA1, removed=("Starving",))])

    ((path, body, content_type),) = client.sent
    assert path == "/apis/scheduling.k8s.io/v1beta1/namespaces/ns/podgroups/g/status"
    assert content_type == STRATEGIC_MERGE_PATCH
    assert set(body) == {"status"} and set(body["status"]) == {"conditions"}
    conditions = body["status"]["conditions"]
    assert [c["type"] for c in conditions] == [
        "PodGroupInitiallyScheduled",
        "Admitted",
        "Starving",
    ]
    assert conditions[-1] == {"type": "Starving", "$patch": "delete"}
    assert all(c["lastTransitionTime"] for c in conditions[:2])


def test_a_native_podgroup_no_longer_musters_is_not_written() -> None:
    client, _ = write(
        [waiting("taken", V1ALPHA2), waiting("kept", V1ALPHA2)],
        is_ours=lambda key: key != "scheduling.k8s.io/ns/taken",
    )
    assert [path for path, _, _ in client.sent] == [
        "/apis/scheduling.k8s.io/v1alpha2/namespaces/ns/podgroups/kept/status"
    ]


def test_a_waiting_native_podgroups_event_names_the_native_kind_and_kube_schedulers_reason() -> (
    None
):
    _, events = write([waiting("g", V1ALPHA2)])
    ((ref, kind, reason),) = events.recorded
    assert (ref.kind, ref.api_version, ref.name) == ("PodGroup", "scheduling.k8s.io/v1alpha2", "g")
    assert (kind, reason) == ("Warning", "Unschedulable")


def test_a_report_about_a_native_podgroup_names_it_at_its_version() -> None:
    async def main() -> Events:
        events = Events()
        writer = StatusWriter(Patches(), events)  # type: ignore[arg-type]
        writer.invalid(
            [
                NativeObjectReport(
                    "PodGroup.scheduling.k8s.io", "ns/g", "refused", "FieldNotHonoured", V1ALPHA2
                ),
                InvalidObjectReport("PodGroup", "ns/g", "bad"),
            ]
        )
        return events

    events = asyncio.run(main())
    refs = [(ref.kind, ref.api_version) for ref, _, _ in events.recorded]
    assert refs == [
        ("PodGroup", "scheduling.k8s.io/v1alpha2"),
        ("PodGroup", "scheduling.volcano.sh/v1beta1"),
    ]
