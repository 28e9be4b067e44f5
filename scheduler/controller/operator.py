"""The kopf registry: the controller's rules as event, index, startup and admission handlers.

Only handlers that keep no state on objects are used (see `settings`): event
handlers run on every watch event of their object, which makes each rule a
level-triggered reconciliation that a replay or restart simply repeats.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import kopf
from kubernetes import client as k8s_client

from scheduler.api.errors import InvalidObject
from scheduler.api.names import GROUP, GROUP_NAME_ANNOTATION, VERSION
from scheduler.controller import queues as queue_rules
from scheduler.controller import webhooks
from scheduler.controller.credentials import login_handler
from scheduler.controller.metrics import ControllerMetrics
from scheduler.controller.objects import ClusterObjects
from scheduler.controller.podgroups import ensure_podgroup
from scheduler.controller.queues import PodGroupView, QueueView, podgroup_view, queue_view
from scheduler.controller.settings import ControllerOptions

log = logging.getLogger("muster.controller")

QueueIndex = kopf.Index[str, QueueView]
PodGroupIndex = kopf.Index[str, PodGroupView]

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


def podgroups_of(kwargs: dict[str, Any]) -> PodGroupIndex:
    """queue name -> the PodGroups naming it, as kopf passes the index to handlers."""
    index: PodGroupIndex = kwargs["podgroup_index"]
    return index


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
    load_configuration: Callable[[], k8s_client.Configuration] | None = None,
    metrics: ControllerMetrics | None = None,
) -> kopf.OperatorRegistry:
    """Every handler of `muster controller`, in a registry of its own."""
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

    # Indexes: kopf fills them from its watches before any handler runs. -------
    @kopf.index(GROUP, VERSION, "queues", id="queue_index", registry=registry)
    def queue_index(body: kopf.Body, **_: Any) -> dict[str, QueueView]:
        view = queue_view(dict(body))
        return {view.name: view}

    @kopf.index(GROUP, VERSION, "podgroups", id="podgroup_index", registry=registry)
    def podgroup_index(body: kopf.Body, **_: Any) -> dict[str, PodGroupView]:
        view = podgroup_view(dict(body), default_queue)
        return {view.queue: view}

    # PodGroups for pods that have none ------------------------------------------
    def ours(spec: kopf.Spec, **_: Any) -> bool:
        return spec.get("schedulerName") in names

    @kopf.on.event(
        "",
        "v1",
        "pods",
        annotations={GROUP_NAME_ANNOTATION: kopf.ABSENT},
        when=ours,
        registry=registry,
    )
    async def pod_without_group(type: str, body: kopf.Body, **_: Any) -> None:
        if type == "DELETED":
            return

        def warn(reason: str, message: str) -> None:
            kopf.warn(body, reason=reason, message=message)

        try:
            await ensure_podgroup(
                objects,
                dict(body),
                names,
                warn,
                on_created=lambda _: metrics.podgroups_created.inc(),
            )
        except InvalidObject as error:
            # Not retried: the object must change first, and that is a new event.
            metrics.handler_errors.labels("podgroup-for-pod").inc()
            log.warning("no PodGroup made: %s", error)
            warn("InvalidObject", f"no PodGroup made: {error}")

    # Queue state -----------------------------------------------------------------
    async def settle(view: QueueView, podgroups: PodGroupIndex) -> None:
        change = queue_rules.state_change(view, podgroups.get(view.name, ()))
        if change is not None:
            log.info("queue is %s", change.value, extra={"queue": view.name})
            await objects.set_queue_state(view.name, change.value)

    @kopf.on.event(GROUP, VERSION, "queues", registry=registry)
    async def queue_changed(type: str, body: kopf.Body, **kwargs: Any) -> None:
        if type != "DELETED":
            await settle(queue_view(dict(body)), podgroups_of(kwargs))

    @kopf.on.event(GROUP, VERSION, "podgroups", registry=registry)
    async def podgroup_changed(body: kopf.Body, **kwargs: Any) -> None:
        # A closing queue becomes Closed when its last admitted PodGroup finishes or goes.
        view = podgroup_view(dict(body), default_queue)
        queue = queues_of(kwargs).get(view.queue)
        if queue is not None and queue_rules.requested_state(queue) is queue_rules.State.CLOSED:
            await settle(queue, podgroups_of(kwargs))

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
            admit(
                metrics,
                VALIDATE_QUEUE_DELETE,
                lambda: webhooks.validate_queue_deletion(
                    name, podgroups_of(kwargs).get(name, ()), queues_of(kwargs), default_queue
                ),
            )

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
