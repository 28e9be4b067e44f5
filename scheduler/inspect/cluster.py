"""Read the cluster once, read-only, into a World as the scheduler's watches would, and run
one session over it with the scheduler's config.

Only GETs are sent: nothing here writes to the API server.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from scheduler.api import wire
from scheduler.api.errors import ConfigError
from scheduler.api.names import DEFAULT_QUEUE, DEFAULT_SCHEDULER_NAME
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cache.reflector import ObjectList
from scheduler.cache.world import World
from scheduler.effects import paths
from scheduler.engine import default_config, load_config, schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.decisions import SessionResult
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import StatusError, TransportError

T = TypeVar("T")

# What stops a command before it asks the cluster anything: a scheduler config that does
# not load, a kubeconfig (or context) that cannot be used, a file that cannot be read.
SETUP_ERRORS: tuple[type[Exception], ...] = (ConfigError, k8s_config.ConfigException, OSError)

# The kinds a session reads, in the order the World takes them best (nodes before the
# pods on them, priority classes before the PodGroups that name them).
NODES = "/api/v1/nodes"
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
QUEUES = f"{paths.GROUP_PATH}/queues"
PODGROUPS = f"{paths.GROUP_PATH}/podgroups"
PODS = "/api/v1/pods"
PAGE_SIZE = 500


@dataclass
class ClusterObjects:
    """Every object a session reads, as listed once."""

    nodes: list[wire.Node] = field(default_factory=list)
    priority_classes: list[wire.PriorityClass] = field(default_factory=list)
    queues: list[wire.Queue] = field(default_factory=list)
    podgroups: list[wire.PodGroup] = field(default_factory=list)
    pods: list[wire.Pod] = field(default_factory=list)


@dataclass
class Session:
    """One session's result and the snapshot it ended with (where every task stands)."""

    result: SessionResult
    snapshot: ClusterSnapshot
    now: float


@dataclass(frozen=True)
class Options:
    """What every inspect command is told about the cluster and the scheduler."""

    kubeconfig: str | None = None
    context: str | None = None
    scheduler_conf: Path | None = None
    scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER_NAME,)
    default_queue: str = DEFAULT_QUEUE

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        """The options of a parsed command line (see add_cluster_arguments)."""
        return cls(
            kubeconfig=args.kubeconfig,
            context=args.context,
            scheduler_conf=args.scheduler_conf,
            scheduler_names=tuple(args.scheduler_names or [DEFAULT_SCHEDULER_NAME]),
            default_queue=args.default_queue,
        )

    def config(self) -> SchedulerConfig:
        """The scheduler config the session runs with: the file's, else the built-in one."""
        if self.scheduler_conf is None:
            return default_config()
        return load_config(self.scheduler_conf.read_text())


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """The connection and scheduler flags every inspect command takes."""
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)",
    )
    parser.add_argument("--context", help="the kubeconfig context to use (default: current)")
    parser.add_argument(
        "--scheduler-conf",
        type=Path,
        help="the scheduler's config YAML (default: muster's built-in config)",
    )
    parser.add_argument(
        "--scheduler-name",
        action="append",
        dest="scheduler_names",
        help=f"a schedulerName the scheduler serves (repeatable; default {DEFAULT_SCHEDULER_NAME})",
    )
    parser.add_argument("--default-queue", default=DEFAULT_QUEUE)


def _kubeconfig_in_use(kubeconfig: str | None) -> str | None:
    """The kubeconfig kubectl would read: the flag, $KUBECONFIG, ~/.kube/config, or none."""
    if kubeconfig:
        return kubeconfig
    if os.environ.get("KUBECONFIG"):
        return os.environ["KUBECONFIG"]
    home = Path("~/.kube/config").expanduser()
    return str(home) if home.exists() else None


def connection(options: Options) -> k8s_client.Configuration:
    """Connection settings as kubectl finds them; in-cluster when there is no kubeconfig."""
    configuration = k8s_client.Configuration()
    path = _kubeconfig_in_use(options.kubeconfig)
    if path is None and options.context is None:
        k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=configuration
        )
        return configuration
    # config_file=None lets the official client merge a colon-separated $KUBECONFIG as
    # kubectl does.
    k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=options.kubeconfig,
        context=options.context,
        client_configuration=configuration,
        persist_config=False,
    )
    return configuration


def context_namespace(options: Options) -> str:
    """The namespace of the kubeconfig context in use, "default" when it names none."""
    if _kubeconfig_in_use(options.kubeconfig) is None:
        return "default"
    try:
        contexts, current = k8s_config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=options.kubeconfig
        )
    except (k8s_config.ConfigException, OSError):
        return "default"
    chosen: Any = current
    if options.context is not None:
        chosen = next((c for c in contexts if c.get("name") == options.context), current)
    return str(((chosen or {}).get("context") or {}).get("namespace") or "default")


async def _list(client: KubeClient, path: str, kind: type[T]) -> list[T]:
    """Every object of a kind, page by page (as the reflectors list)."""
    decoder = msgspec.json.Decoder(ObjectList[kind])  # type: ignore[valid-type]
    items: list[T] = []
    params = {"limit": str(PAGE_SIZE)}
    while True:
        page = decoder.decode(await client.request("GET", path, params=params))
        items.extend(page.items)
        if not page.metadata.next_page:
            return items
        params = {"limit": str(PAGE_SIZE), "continue": page.metadata.next_page}


async def read_cluster(options: Options) -> ClusterObjects:
    """List every kind a session reads (GETs only)."""
    async with KubeClient(connection(options)) as client:
        return ClusterObjects(
            nodes=await _list(client, NODES, wire.Node),
            priority_classes=await _list(client, PRIORITY_CLASSES, wire.PriorityClass),
            queues=await _list(client, QUEUES, wire.Queue),
            podgroups=await _list(client, PODGROUPS, wire.PodGroup),
            pods=await _list(client, PODS, wire.Pod),
        )


def build_world(
    objects: ClusterObjects,
    scheduler_names: Iterable[str] = (DEFAULT_SCHEDULER_NAME,),
    default_queue: str = DEFAULT_QUEUE,
) -> World:
    """The World the scheduler's reflectors would hold after listing these objects."""
    world = World(frozenset(scheduler_names), default_queue)
    for node in objects.nodes:
        world.upsert_node(node)
    for pc in objects.priority_classes:
        world.upsert_priority_class(pc)
    for queue in objects.queues:
        world.upsert_queue(queue)
    for group in objects.podgroups:
        world.upsert_podgroup(group)
    for pod in objects.pods:
        world.upsert_pod(pod)
    return world


def observe(options: Options, command: str) -> tuple[World, SchedulerConfig] | None:
    """The scheduler's config and the World read from the cluster, or None when either
    cannot be had (the reason is said on stderr, in the command's name)."""
    try:
        config = options.config()
        objects = asyncio.run(read_cluster(options))
    except SETUP_ERRORS as error:
        print(f"muster {command}: {error}", file=sys.stderr)
        return None
    except (StatusError, TransportError) as error:
        print(f"muster {command}: reading the cluster failed: {error}", file=sys.stderr)
        return None
    return build_world(objects, options.scheduler_names, options.default_queue), config


def run_session(world: World, config: SchedulerConfig, now: float | None = None) -> Session:
    """One session over the world's snapshot, as the scheduler runs it; the world is kept."""
    at = time.time() if now is None else now
    snapshot = world.snapshot(at)
    result = schedule(snapshot, config, copy=False)
    return Session(result, snapshot, at)
