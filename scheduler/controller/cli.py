"""`muster controller`: PodGroups for pods that name none, Queue state, admission webhooks.

Beside kopf (queues, webhooks, peering) run the census of PodGroups, the loop that groups
pending pods and the watch of the workload kinds whose groups follow their spec; all stop
with kopf.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
from pathlib import Path
from typing import Any

import kopf
from kubernetes.client import Configuration

from scheduler.api.errors import ConfigError
from scheduler.api.names import DEFAULT_QUEUE, DEFAULT_SCHEDULER_NAME
from scheduler.controller import settings as controller_settings
from scheduler.controller.census import PodGroupCensus
from scheduler.controller.credentials import connection_info
from scheduler.controller.follow import OwnerFollower
from scheduler.controller.metrics import ControllerMetrics
from scheduler.controller.native import needs_work, tend_pod
from scheduler.controller.objects import ApiObjects
from scheduler.controller.operator import build_registry
from scheduler.controller.pending import PendingPods
from scheduler.controller.queue_states import QueueStates
from scheduler.controller.settings import ControllerOptions
from scheduler.endpoints import metrics_handler, serve, split_address
from scheduler.kube.client import KubeClient
from scheduler.kube.config import load_configuration
from scheduler.logs import configure

log = logging.getLogger("muster.controller")


async def run_controller(options: ControllerOptions) -> int:
    """Run the operator until SIGTERM or SIGINT (kopf handles both); returns the exit code."""

    def load() -> Configuration:
        return load_configuration(options.kubeconfig)

    configuration = load()
    try:
        # kopf logs in only once its tasks run; a missing credential is said here, at start
        connection_info(configuration)
    except ConfigError as error:
        log.error("cannot log in: %s", error)
        return 2
    client = KubeClient(configuration)
    metrics = ControllerMetrics()
    objects = ApiObjects(client)
    names = frozenset(options.scheduler_names)
    census = PodGroupCensus(client, options.default_queue, options.namespaces)
    queue_states = QueueStates(objects, census)
    census.on_queue_change = queue_states.podgroup_changed
    pending = PendingPods(
        client,
        lambda pod: tend_pod(objects, pod, names, census, metrics),
        scheduler_names=options.scheduler_names,
        namespaces=options.namespaces,
        wanted=needs_work,
    )
    follower = OwnerFollower(
        client,
        objects,
        census,
        options.namespaces,
        on_updated=lambda _: metrics.podgroups_updated.inc(),
        on_error=lambda: metrics.handler_errors.labels("follow-owner").inc(),
    )
    registry = build_registry(options, objects, census, queue_states, load, metrics)
    settings = kopf.OperatorSettings()
    controller_settings.configure(settings, options)
    host, port = split_address(options.health_address)
    log.info(
        "controlling pods of %s; %s",
        ", ".join(options.scheduler_names),
        "all namespaces" if options.clusterwide else "namespaces " + ", ".join(options.namespaces),
    )
    endpoints = await serve(
        options.metrics_address, {"/metrics": metrics_handler(metrics.registry)}
    )
    background = [
        asyncio.create_task(job.run(), name=name)
        for name, job in (
            ("podgroup census", census),
            ("pending pods", pending),
            ("owner follower", follower),
            ("queue states", queue_states),
        )
    ]
    for task in background:
        task.add_done_callback(_said_if_failed)

    @kopf.on.cleanup(registry=registry)
    async def stop_background(**_: Any) -> None:
        # kopf waits a while for every task it did not start before it returns: these
        # are stopped with its own, so a SIGTERM ends the process at once
        await _stop(background)

    try:
        await kopf.operator(
            registry=registry,
            settings=settings,
            clusterwide=options.clusterwide,
            namespaces=options.namespaces,
            liveness_endpoint=f"http://{host or '0.0.0.0'}:{port}/healthz",
        )
    finally:
        await _stop(background)
        await client.close()
        await endpoints.cleanup()
    return 0


async def _stop(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _said_if_failed(task: asyncio.Task[None]) -> None:
    # the loops catch what they can go on after: one that ends was cancelled or has a bug
    if not task.cancelled() and task.exception() is not None:
        log.error("%s stopped: %r", task.get_name(), task.exception())


def add_parser(subparsers: Any) -> None:
    """The `muster controller` subcommand."""
    parser = subparsers.add_parser(
        "controller",
        help="run the controller: PodGroups for pods that name none, queue state, webhooks",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (in-cluster config when absent)")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--namespace",
        action="append",
        dest="namespaces",
        help="watch pods and PodGroups only here (repeatable)",
    )
    scope.add_argument(
        "--all-namespaces", action="store_true", help="watch every namespace (the default)"
    )
    parser.add_argument(
        "--scheduler-name",
        action="append",
        dest="scheduler_names",
        help="a schedulerName whose pods get PodGroups (repeatable; default muster)",
    )
    parser.add_argument("--default-queue", default=DEFAULT_QUEUE)
    parser.add_argument(
        "--webhook-port", type=int, default=9443, help="HTTPS admission port; 0 turns it off"
    )
    parser.add_argument("--webhook-address", default="0.0.0.0", help="address to listen on")
    parser.add_argument(
        "--webhook-host", help="the name the API server uses for us (self-signed certificate SAN)"
    )
    parser.add_argument(
        "--webhook-cert-dir",
        type=Path,
        help="a mounted kubernetes.io/tls Secret (tls.crt, tls.key, optional ca.crt); "
        "without it a self-signed certificate is made at start (development)",
    )
    parser.add_argument(
        "--webhook-cadump", type=Path, help="write the webhook's CA bundle here (development)"
    )
    parser.add_argument(
        "--health-address", default=":8080", help="kopf's liveness endpoint serves /healthz here"
    )
    parser.add_argument(
        "--metrics-address", default=":8081", help="Prometheus metrics are served here (/metrics)"
    )
    parser.add_argument(
        "--peering", default="muster-controller", help="the ClusterKopfPeering replicas share"
    )
    parser.add_argument(
        "--standalone", action="store_true", help="no peering: act even if other replicas run"
    )
    parser.add_argument(
        "--priority",
        type=int,
        default=None,
        help="peering priority (default random: the highest of the replicas works)",
    )
    parser.add_argument("--log-format", choices=("text", "json"), default="text")
    parser.add_argument("--log-level", default="info")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Entry point of `muster controller`."""
    configure(args.log_format, args.log_level)
    if logging.getLogger().level > logging.DEBUG:
        # kopf logs every handler run at INFO; ours say what changed.
        for name in ("kopf.objects", "kopf.activities", "kopf._core.engines.activities"):
            logging.getLogger(name).setLevel(logging.WARNING)
    options = ControllerOptions(
        kubeconfig=args.kubeconfig,
        namespaces=tuple(args.namespaces or ()),
        scheduler_names=tuple(args.scheduler_names or [DEFAULT_SCHEDULER_NAME]),
        default_queue=args.default_queue,
        webhook_port=args.webhook_port,
        webhook_address=args.webhook_address,
        webhook_host=args.webhook_host,
        webhook_cert_dir=args.webhook_cert_dir,
        webhook_cadump=args.webhook_cadump,
        health_address=args.health_address,
        metrics_address=args.metrics_address,
        peering=args.peering,
        standalone=args.standalone,
        priority=args.priority if args.priority is not None else random.randrange(1, 2**31),
    )
    return asyncio.run(run_controller(options))
