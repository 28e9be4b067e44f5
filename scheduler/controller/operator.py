"""The kopf registry: queue state, the admission webhooks, and the startup work.

Only handlers that keep no state on objects are used (see `settings`): event
handlers run on every watch event of their object, which makes each rule a
level-triggered reconciliation that a replay or restart simply repeats. kopf watches
only Queues: pods are grouped by their own loop (pending.py) and PodGroups are read by the
census (census.py), as kopf holds every handler until each object of an indexed kind is
indexed, which kept a new pod waiting for minutes behind a large cluster's PodGroups.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import kopf
from kubernetes import client as k8s_client

from scheduler.api.names import GROUP, VERSION
from scheduler.controller import webhooks
from scheduler.controller.census import PodGroupCensus
from scheduler.controller.credentials import login_handler
from scheduler.controller.metrics import ControllerMetrics
from scheduler.controller.objects import ClusterObjects
from scheduler.controller.queue_states import QueueStates
from scheduler.controller.queues import QueueView, queue_view
from scheduler.controller.settings import ControllerOptions

log = logging.getLogger("muster.controller")

QueueIndex = kopf.Index[str, QueueView]

# Handler ids are the webhook paths: https://<service>:<port>/<id>.
VALIDATE_PODGROUP = "validate-podgroup"
MUTATE_PODGROUP = "mutate-podgroup"
VALIDATE_QUEUE = "validate-queue"
VALIDATE_QUEUE_DELETE = "validate-queue-delete"
VALIDATE_POD = "validate-pod"


def queues_of(kwargs: dict[str, Any]) -> dict[str, QueueView]:
    """name -> view, from the queue index kopf passes to handlers."""
    index: QueueIndex = kwargs["queue_index"]
    return {name: view for name, store in index.items() for view in store}


def admit(metrics: ControllerMetrics, webhook: str, rule: Callable[[], None]) -> None:
    """Run an admission rule; a Refusal becomes kopf's 400 answer with its message."""
    try:
        rule()
    except webhooks.Refusal as refusal:
        metrics.admission_reviews.labels(webhook, "refused").inc()
        raise kopf.AdmissionError(str(refusal), code=400) from None
    metrics.admission_reviews.labels(webhook, "allowed").inc()


def build_registry(
    options: ControllerOptions,
    objects: ClusterObjects,
    census: PodGroupCensus,
    queue_states: QueueStates,
    load_configuration: Callable[[], k8s_client.Configuration] | None = None,
    metrics: ControllerMetrics | None = None,
) -> kopf.OperatorRegistry:
    """Every kopf handler of `muster controller`, in a registry of its own."""
    registry = kopf.OperatorRegistry()
    metrics = metrics or ControllerMetrics()
    names = frozenset(options.scheduler_names)
    default_queue = options.default_queue

    if load_configuration is not None:
        kopf.on.login(registry=registry)(login_handler(load_configuration))

    @kopf.on.startup(registry=registry)
    async def default_queue_exists(**_: Any) -> None:
        await objects.ensure_queue(default_queue)

    if options.clusterwide and not options.standalone:

        @kopf.on.startup(registry=registry)
        async def peering_exists(**_: Any) -> None:
            await objects.ensure_peering(options.peering)

    # The queue index: kopf fills it from its watch before any handler runs. -------
    @kopf.index(GROUP, VERSION, "queues", id="queue_index", registry=registry)
    def queue_index(body: kopf.Body, **_: Any) -> dict[str, QueueView]:
        view = queue_view(dict(body))
        return {view.name: view}

    # Queue state -----------------------------------------------------------------
    @kopf.on.event(GROUP, VERSION, "queues", registry=registry)
    async def queue_changed(type: str, body: kopf.Body, **_: Any) -> None:
        view = queue_view(dict(body))
        if type == "DELETED":
            queue_states.queue_deleted(view.name)
        else:
            await queue_states.queue_changed(view)

    # Admission -------------------------------------------------------------------
    # With --webhook-port 0 there is no admission server, and kopf refuses to start
    # with admission handlers but no server: register them only when there is one.
    if options.webhook_port:

        @kopf.on.validate(
            GROUP,
            VERSION,
            "podgroups",
            id=VALIDATE_PODGROUP,
            operations=["CREATE", "UPDATE"],
            registry=registry,
        )
        def validate_podgroup(body: kopf.Body, **kwargs: Any) -> None:
            old: kopf.Body | None = kwargs.get("old")
            admit(
                metrics,
                VALIDATE_PODGROUP,
                lambda: webhooks.validate_podgroup(
                    dict(body), dict(old) if old else None, queues_of(kwargs), default_queue
                ),
            )

        @kopf.on.mutate(
            GROUP,
            VERSION,
            "podgroups",
            id=MUTATE_PODGROUP,
            operations=["CREATE"],
            registry=registry,
        )
        async def default_podgroup_queue(
            body: kopf.Body, namespace: str | None, patch: kopf.Patch, **_: Any
        ) -> None:
            if not namespace:
                return
            queue = webhooks.default_podgroup_queue(
                dict(body), await objects.namespace_queue(namespace), default_queue
            )
            if queue is not None:
                patch.setdefault("spec", {})["queue"] = queue

        @kopf.on.validate(
            GROUP,
            VERSION,
            "queues",
            id=VALIDATE_QUEUE,
            operations=["CREATE", "UPDATE"],
            registry=registry,
        )
        def validate_queue(body: kopf.Body, **kwargs: Any) -> None:
            admit(
                metrics,
                VALIDATE_QUEUE,
                lambda: webhooks.validate_queue(dict(body), queues_of(kwargs)),
            )

        @kopf.on.validate(
            GROUP,
            VERSION,
            "queues",
            id=VALIDATE_QUEUE_DELETE,
            operations=["DELETE"],
            registry=registry,
        )
        def validate_queue_delete(name: str, **kwargs: Any) -> None:
            def rule() -> None:
                if name == default_queue and not census.is_synced():
                    raise webhooks.Refusal(
                        f"Queue {name}: the controller is still reading the PodGroups that "
                        f"may use it ({len(census)} so far); try again in a few seconds"
                    )
                webhooks.validate_queue_deletion(
                    name, census.in_queue(name), queues_of(kwargs), default_queue
                )

            admit(metrics, VALIDATE_QUEUE_DELETE, rule)

        @kopf.on.validate(
            "", "v1", "pods", id=VALIDATE_POD, operations=["CREATE"], registry=registry
        )
        def validate_pod(body: kopf.Body, **kwargs: Any) -> None:
            admit(
                metrics,
                VALIDATE_POD,
                lambda: webhooks.validate_pod(dict(body), queues_of(kwargs), names),
            )

    return registry
