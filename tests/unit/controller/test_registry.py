"""The controller's kopf registry: admission handlers only when there is a webhook server."""

from __future__ import annotations

import kopf
import pytest

from scheduler.controller.metrics import ControllerMetrics
from scheduler.controller.operator import admit, build_registry
from scheduler.controller.settings import ControllerOptions
from scheduler.controller.webhooks import Refusal
from tests.unit.controller.test_podgroups import FakeObjects


def test_without_a_webhook_port_no_admission_handler_is_registered() -> None:
    # kopf refuses to start when admission handlers exist but no server serves them.
    registry = build_registry(ControllerOptions(webhook_port=0), FakeObjects())  # type: ignore[arg-type]
    assert list(registry._webhooks.get_all_handlers()) == []


def test_with_a_webhook_port_every_admission_rule_is_registered() -> None:
    registry = build_registry(ControllerOptions(webhook_port=9443), FakeObjects())  # type: ignore[arg-type]
    ids = {handler.id for handler in registry._webhooks.get_all_handlers()}
    assert {"validate-podgroup", "mutate-podgroup", "validate-queue", "validate-pod"} <= ids


def test_admission_answers_are_counted_by_webhook_and_result() -> None:
    metrics = ControllerMetrics()

    def refuse() -> None:
        raise Refusal("queue 'gone' does not exist")

    admit(metrics, "validate-pod", lambda: None)
    with pytest.raises(kopf.AdmissionError, match="queue 'gone' does not exist"):
        admit(metrics, "validate-pod", refuse)
    reviews = metrics.admission_reviews
    assert reviews.labels("validate-pod", "allowed")._value.get() == 1
    assert reviews.labels("validate-pod", "refused")._value.get() == 1
