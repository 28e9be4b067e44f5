"""The controller's kopf registry: admission handlers only when there is a webhook server."""

from __future__ import annotations

from scheduler.controller.operator import build_registry
from scheduler.controller.settings import ControllerOptions
from tests.unit.controller.test_podgroups import FakeObjects


def test_without_a_webhook_port_no_admission_handler_is_registered() -> None:
    # kopf refuses to start when admission handlers exist but no server serves them.
    registry = build_registry(ControllerOptions(webhook_port=0), FakeObjects())  # type: ignore[arg-type]
    assert list(registry._webhooks.get_all_handlers()) == []


def test_with_a_webhook_port_every_admission_rule_is_registered() -> None:
    registry = build_registry(ControllerOptions(webhook_port=9443), FakeObjects())  # type: ignore[arg-type]
    ids = {handler.id for handler in registry._webhooks.get_all_handlers()}
    assert {"validate-podgroup", "mutate-podgroup", "validate-queue", "validate-pod"} <= ids
