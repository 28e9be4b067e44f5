"""The controller's kopf registry: admission handlers only when there is a webhook server."""

from __future__ import annotations

import kopf
import pytest

from scheduler.controller.metrics import ControllerMetrics
from scheduler.controller.operator import admit, build_registry
from scheduler.controller.queue_states import QueueStates
from scheduler.controller.settings import ControllerOptions
from scheduler.controller.webhooks import Refusal
from tests.unit.controller.fakes import FakeObjects, census_of


def registry_for(options: ControllerOptions) -> kopf.OperatorRegistry:
    objects = FakeObjects()
    census = census_of()
    return build_registry(options, objects, census, QueueStates(objects, census))


def test_without_a_webhook_port_no_admission_handler_is_registered() -> None:
    # kopf refuses to start when admission handlers exist but no server serves them.
    registry = registry_for(ControllerOptions(webhook_port=0))
    assert list(registry._webhooks.get_all_handlers()) == []


def test_with_a_webhook_port_every_admission_rule_is_registered() -> None:
    registry = registry_for(ControllerOptions(webhook_port=9443))
    ids = {handler.id for handler in registry._webhooks.get_all_handlers()}
    assert {"validate-podgroup", "mutate-podgroup", "validate-queue", "validate-pod"} <= ids


def test_kopf_watches_queues_alone_so_no_pod_waits_for_its_replay() -> None:
    # kopf holds every handler until each object of an indexed kind is indexed: a kopf
    # watch or index of pods or PodGroups would hold new pods behind the whole replay
    registry = registry_for(ControllerOptions(webhook_port=9443))
    watched = {
        (selector.group, selector.any_name)
        for handlers in (registry._watching, registry._indexing, registry._changing)
        for handler in handlers.get_all_handlers()
        for selector in [handler.selector]
        if selector is not None
    }
    assert watched == {("scheduling.volcano.sh", "queues")}


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
