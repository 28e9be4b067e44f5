"""An event whose create was retried after its answer was lost (409) is not reported as lost."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.kube.client import Gate
from scheduler.kube.errors import StatusError
from scheduler.metrics import Metrics


class Refusing:
    def __init__(self, code: int) -> None:
        self.code = code
        self.posted = 0

    async def create(self, path: str, body: Any, *, gate: Gate | None = None) -> bytes:
        self.posted += 1
        raise StatusError(self.code, "x", f'events "{body["metadata"]["name"]}" ...', "POST", path)


def record_once(code: int) -> Refusing:
    client = Refusing(code)

    async def scenario() -> None:
        recorder = EventRecorder(client, Metrics(), workers=1)  # type: ignore[arg-type]
        recorder.record(ObjectRef("Pod", "v1", "ml", "w-0", "u"), "Normal", "Scheduled", "m")
        await recorder.drain()

    asyncio.run(scenario())
    return client


def test_an_event_that_already_exists_is_written_not_warned(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="scheduler.effects.recorder"):
        client = record_once(409)
    assert client.posted == 1
    assert not caplog.records


def test_an_event_the_server_refuses_is_warned_naming_it(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="scheduler.effects.recorder"):
        record_once(403)
    assert any(
        "could not write event Scheduled on ml/w-0" in r.getMessage() for r in caplog.records
    )
