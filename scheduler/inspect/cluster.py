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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from scheduler.api import paths, wire
from scheduler.api.errors import ConfigError
from scheduler.api.names import DEFAULT_QUEUE, DEFAULT_SCHEDULER_NAME
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cache.reflector import ObjectList
from scheduler.cache.wiring import HANDLERS
from scheduler.cache.world import World
from scheduler.engine import schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.decisions import SessionResult
from scheduler.inspect.config import (
    DEFAULT_CONFIG_MAP,
    Configuration,
    fallback_notice,
    from_file,
    read_config_map,
)
from scheduler.kube.client import KubeClient
from scheduler.kube.discovery import served_version
from scheduler.kube.errors import NotFound, StatusError, TransportError

T = TypeVar("T")

# Exit codes: 0 the gang runs or would run, 1 it waits, 2 the question has no answer (a
# scheduler config that does not load, a kubeconfig or cluster that fails, an object that
# is not muster's), so a script never reads a broken setup as a waiting gang.
EXIT_NO_ANSWER = 2

# What `muster status --watch` polls for changes.
QUEUES = f"{paths.GROUP_PATH}/queues"
PODGROUPS = f"{paths.GROUP_PATH}/podgroups"
# The kinds the commands keep by name (the rest the scheduler watches are in `others`).
_NAMED_KINDS = {
    "node": "nodes",
    "priorityclass": "priority_classes",
    "queue": "queues",
    "podgroup": "podgroups",
    "pod": "pods",
}
PAGE_SIZE = 500


@dataclass
class ClusterObjects:
    """Every object a session reads, as listed once."""

    nodes: list[wire.Node] = field(default_factory=list)
    priority_classes: list[wire.PriorityClass] = field(default_factory=list)
    queues: list[wire.Queue] = field(default_factory=list)
    podgroups: list[wire.PodGroup] = field(default_factory=list)
    pods: list[wire.Pod] = field(default_factory=list)
    # Every other kind the scheduler watches (storage, namespaces), by its reflector's name.
    others: dict[str, list[Any]] = field(default_factory=dict)
    # The version of each discovered kind the server serves, by plural ("" for none).
    served_versions: dict[str, str] = field(default_factory=dict)

    def of_kind(self, name: str) -> list[Any]:
        """The listed objects of the kind a reflector of that name keeps."""
        field_name = _NAMED_KINDS.get(name)
        if field_name is not None:
            items: list[Any] = getattr(self, field_name)
            return items
        return self.others.setdefault(name, [])


@dataclass
class Observed:
    """What one read of the cluster gives a command: the World, the objects as listed
    (pods the scheduler does not keep included) and the scheduler config in force."""

    world: World
    objects: ClusterObjects
    configuration: Configuration


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
    scheduler_config_map: str = DEFAULT_CONFIG_MAP
    scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER_NAME,)
    default_queue: str = DEFAULT_QUEUE

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        """The options of a parsed command line (see add_cluster_arguments)."""
        return cls(
            kubeconfig=args.kubeconfig,
            context=args.context,
            scheduler_conf=args.scheduler_conf,
            scheduler_config_map=args.scheduler_config_map,
            scheduler_names=tuple(args.scheduler_names or [DEFAULT_SCHEDULER_NAME]),
            default_queue=args.default_queue,
        )

    async def configuration(self, client: KubeClient) -> Configuration:
        """The scheduler config the session runs with: the file's, else the ConfigMap's,
        else (the ConfigMap absent or unreadable) the built-in one."""
        if self.scheduler_conf is not None:
            return from_file(self.scheduler_conf)
        return await read_config_map(client, self.scheduler_config_map)


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
        help="the scheduler's config YAML file (overrides --scheduler-config-map)",
    )
    parser.add_argument(
        "--scheduler-config-map",
        default=DEFAULT_CONFIG_MAP,
        metavar="NS/NAME",
        help="the ConfigMap holding the scheduler's config under key scheduler.yaml "
        f"(default {DEFAULT_CONFIG_MAP}; muster's built-in config when it is absent or "
        "cannot be read)",
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


async def _list(
    client: KubeClient, path: str, kind: type[T], decode: Callable[[msgspec.Raw], T] | None = None
) -> list[T]:
    """Every object of a kind, page by page (as the reflectors list, with the same decoder)."""
    page_decoder = msgspec.json.Decoder(ObjectList[msgspec.Raw])
    item_decoder = decode or msgspec.json.Decoder(kind).decode
    items: list[T] = []
    params = {"limit": str(PAGE_SIZE)}
    while True:
        page = page_decoder.decode(await client.request("GET", path, params=params))
        items.extend(item_decoder(raw) for raw in page.items)
        if not page.metadata.next_page:
            return items
        params = {"limit": str(PAGE_SIZE), "continue": page.metadata.next_page}


async def list_cluster(client: KubeClient) -> ClusterObjects:
    """List every kind the scheduler watches (GETs only), decoded as its reflectors do."""
    objects = ClusterObjects()
    for handler in HANDLERS:
        path = handler.path
        versions = handler.versions
        if versions is not None:
            version = await served_version(
                client, versions.group, versions.plural, versions.versions
            )
            objects.served_versions[versions.plural] = version or ""
            if version is None:
                continue  # no version muster reads is served: none of them
            path = versions.path(version)
        try:
            listed = await _list(client, path, handler.wire_type, handler.decode)
        except NotFound:
            if not handler.optional:
                raise
            # A kind the cluster does not serve (HyperNodes without their CRD): none.
            listed = []
        objects.of_kind(handler.name).extend(listed)
    return objects


async def read_cluster(options: Options) -> tuple[Configuration, ClusterObjects]:
    """The scheduler config and every object a session reads, over one connection."""
    async with KubeClient(connection(options)) as client:
        configuration = await options.configuration(client)
        return configuration, await list_cluster(client)


def build_world(
    objects: ClusterObjects,
    scheduler_names: Iterable[str] = (DEFAULT_SCHEDULER_NAME,),
    default_queue: str = DEFAULT_QUEUE,
) -> World:
    """The World the scheduler's reflectors would hold after listing these objects."""
    world = World(frozenset(scheduler_names), default_queue)
    world.served_versions.update(objects.served_versions)
    # the scheduler's own kinds, in its order (nodes before the pods on them, priority
    # classes before the PodGroups that name them)
    for handler in HANDLERS:
        for item in objects.of_kind(handler.name):
            handler.upsert(world, item)
    return world


def answer_or_exit(command: str, work: Callable[[], T]) -> T | int:
    """What `work` returns, or EXIT_NO_ANSWER when the question has no answer: a scheduler
    config that does not load, a kubeconfig that cannot be used, a cluster that cannot be
    read (said on stderr in one line, in the command's name)."""
    try:
        return work()
    except (ConfigError, k8s_config.ConfigException, OSError) as error:
        print(f"muster {command}: {error}", file=sys.stderr)
    except (StatusError, TransportError) as error:
        print(f"muster {command}: reading the cluster failed: {error}", file=sys.stderr)
    return EXIT_NO_ANSWER


def observe(options: Options, command: str) -> Observed | int:
    """The World read from the cluster and the scheduler config, or the exit code when
    either cannot be had (the reason is said on stderr, in the command's name). That the
    built-in config stands in for an absent ConfigMap is said on stderr too."""
    read = answer_or_exit(command, lambda: asyncio.run(read_cluster(options)))
    if isinstance(read, int):
        return read
    configuration, objects = read
    notice = fallback_notice(configuration)
    if notice is not None:
        print(f"muster {command}: {notice}", file=sys.stderr)
    world = build_world(objects, options.scheduler_names, options.default_queue)
    return Observed(world, objects, configuration)


def run_session(world: World, config: SchedulerConfig, now: float | None = None) -> Session:
    """One session over the world's snapshot, as the scheduler runs it; the world is kept."""
    at = time.time() if now is None else now
    snapshot = world.snapshot(at)
    result = schedule(snapshot, config, copy=False)
    return Session(result, snapshot, at)
