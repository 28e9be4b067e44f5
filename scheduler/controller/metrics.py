"""Prometheus metrics of `muster controller` (muster_controller_*), on a registry of its own."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter


class ControllerMetrics:
    """What the controller did: PodGroups made and updated, admission answers, handler errors."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.podgroups_created = Counter(
            "muster_controller_podgroups_created_total",
            "PodGroups the controller made for pods that had none.",
            registry=self.registry,
        )
        self.podgroups_updated = Counter(
            "muster_controller_podgroups_updated_total",
            "PodGroups the controller brought in step with their owner's changed spec.",
            registry=self.registry,
        )
        self.admission_reviews = Counter(
            "muster_controller_admission_reviews_total",
            "Admission reviews answered, by webhook and result (allowed or refused).",
            ["webhook", "result"],
            registry=self.registry,
        )
        self.handler_errors = Counter(
            "muster_controller_handler_errors_total",
            "Objects a handler could not act on (the log and an event name each).",
            ["handler"],
            registry=self.registry,
        )
