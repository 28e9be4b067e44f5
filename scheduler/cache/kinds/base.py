"""Handler: what the cache does with one watched kind, declared once in the kind's module.

A handler says where the kind is served (its API path, or the versions it may be served
at; whether the cluster may not serve it at all, whether a partition's label selector
filters it), how an object of it is decoded and keyed, and what its upsert and delete do
to a World. `bind` turns it into the reflector's Kind for one World; cache/wiring.py lists
the handlers the scheduler runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

import msgspec

from scheduler.cache.reflector import Kind
from scheduler.cache.world import World
from scheduler.kube.client import KubeClient
from scheduler.kube.discovery import served_version

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Versions:
    """A built-in kind served at whichever of several versions the server has (Kubernetes'
    own gang API): the first of `versions` it serves is listed and watched."""

    group: str
    plural: str
    versions: tuple[str, ...]

    def path(self, version: str) -> str:
        """The collection at `version`, cluster-wide."""
        return f"/apis/{self.group}/{version}/{self.plural}"

    async def discover(self, world: World, client: KubeClient) -> str | None:
        """The collection to list at the version the server serves, or None; the World
        learns the version (its records are read, and their status written, at it)."""
        version = await served_version(client, self.group, self.plural, self.versions)
        world.served_versions[self.plural] = version or ""
        return self.path(version) if version is not None else None


@dataclass(frozen=True, slots=True)
class Handler(Generic[T]):
    """One kind the World is kept from: how to list, decode and key it, and what its events
    do to the World."""

    # The reflector's name, and the kind's label on metrics.
    name: str
    # The collection listed and watched, cluster-wide.
    path: str
    wire_type: type[T]
    key: Callable[[T], str]
    upsert: Callable[[World, T], None]
    # Called with the key of an object gone (a watch's DELETED event, or missing from a list).
    delete: Callable[[World, str], None]
    # A decoder of the kind's own; None decodes into wire_type.
    decode: Callable[[msgspec.Raw], T] | None = None
    # A kind the cluster may not serve at all (its CRD not installed): a 404 means "none of
    # them", not a broken watch (cache/reflector.py).
    optional: bool = False
    # Whether an instance that owns a partition (api/partition.py) lists only the objects
    # its label selector picks.
    partitioned: bool = False
    # A kind whose version is discovered (`path` is then only its name in logs until then).
    versions: Versions | None = None

    def bind(self, world: World, partition_selector: str = "") -> Kind[T]:
        """The reflector's Kind that applies this kind's events to `world`."""
        return Kind(
            self.name,
            self.path,
            self.wire_type,
            self.key,
            partial(self.upsert, world),
            partial(self.delete, world),
            decode=self.decode,
            optional=self.optional,
            selector=partition_selector if self.partitioned else "",
            discover=partial(self.versions.discover, world) if self.versions else None,
        )


def named(obj: Any) -> str:
    """The key of a cluster-scoped object: its name."""
    name: str = obj.metadata.name
    return name


def namespaced(obj: Any) -> str:
    """The key of a namespaced object: "namespace/name"."""
    return f"{obj.metadata.namespace}/{obj.metadata.name}"
