"""The status writer's Warning events for objects muster cannot use or does not fully honour."""

from __future__ import annotations

from typing import Any

from scheduler.effects.recorder import ObjectRef
from scheduler.effects.status_writer import StatusWriter
from scheduler.framework.decisions import FieldNotHonoured, InvalidObjectReport


class Recorded:
    """A stand-in EventRecorder that keeps what it is asked to record."""

    def __init__(self) -> None:
        self.events: list[tuple[ObjectRef, str, str, str]] = []

    def record(self, ref: ObjectRef, event_type: str, reason: str, message: str) -> None:
        self.events.append((ref, event_type, reason, message))


def writer() -> tuple[StatusWriter, Recorded]:
    recorder = Recorded()
    client: Any = None  # invalid() writes events only
    return StatusWriter(client, recorder), recorder  # type: ignore[arg-type]


def test_not_honoured_warning_goes_out_once_per_process_with_its_reason() -> None:
    status, recorder = writer()
    report = InvalidObjectReport(
        "Queue", "team", "spec.type is not honoured: ...", "NotHonouredYet"
    )
    for _ in range(3):
        status.invalid([report])
    ((ref, kind, reason, message),) = recorder.events
    assert (ref.kind, ref.namespace, ref.name) == ("Queue", "", "team")
    assert (kind, reason, message) == ("Warning", "NotHonouredYet", report.message)


def test_invalid_object_events_are_left_to_the_recorders_window() -> None:
    status, recorder = writer()
    report = InvalidObjectReport("PodGroup", "ml/pg", "spec.minMember=-1 must be 0 or more")
    status.invalid([report])
    status.invalid([report])
    assert [e[2] for e in recorder.events] == ["InvalidObject", "InvalidObject"]
    assert recorder.events[0][0].namespace == "ml"


def test_field_not_honoured_warning_goes_out_once_per_pod_with_its_reason() -> None:
    status, recorder = writer()
    warning = FieldNotHonoured("ml", "w-0", "uid-w0", "spec.volumes.persistentVolumeClaim: ...")
    other = FieldNotHonoured("ml", "w-1", "uid-w1", "spec.volumes.persistentVolumeClaim: ...")
    status.field_warnings([warning])
    status.field_warnings([warning, other])
    assert [
        (ref.name, ref.uid, kind, reason, message) for ref, kind, reason, message in recorder.events
    ] == [
        ("w-0", "uid-w0", "Warning", "FieldNotHonoured", warning.message),
        ("w-1", "uid-w1", "Warning", "FieldNotHonoured", other.message),
    ]
    assert all(ref.kind == "Pod" and ref.namespace == "ml" for ref, *_ in recorder.events)
