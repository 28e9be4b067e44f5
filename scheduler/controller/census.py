"""The PodGroups as the controller needs them: which name each queue, and what it made.

A list and watch of PodGroups (cache/reflector.py: pages, bookmarks, 410 handled), decoded
into a few fields each: namespace, name, queue and phase, for the queue rules (queues.py:
a closing queue is Closed once no PodGroup it admitted is left) and the queue-deletion
webhook; and, for the PodGroups the controller made (they carry its grouping-rule
annotation), the spec it keeps in step with their owners (follow.py).

Why not kopf's index: kopf holds every handler of every kind until each object of an
indexed kind has been indexed, and its readiness check wakes every waiting object on each
one indexed: with 2,000 PodGroups a new pod waited 33 s for its PodGroup behind the
controller's start, quadratically more with more. Here no pod waits for this list: the
pods are grouped by their own loop (pending.py), and only a queue's move to Closed waits
for the census to be complete.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

from scheduler.api.names import (
    GROUP,
    GROUPING_RULE_ANNOTATION,
    MIN_MEMBER_FROM_ANNOTATION,
    VERSION,
)
from scheduler.cache.reflector import Kind, Reflector
from scheduler.controller.queues import PodGroupView
from scheduler.kube.client import KubeClient

log = logging.getLogger(__name__)


class _Meta(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""
    annotations: dict[str, str] = msgspec.field(default_factory=dict)


class _Spec(msgspec.Struct, rename="camel"):
    queue: str = ""
    min_member: int = 0
    min_resources: dict[str, Any] | None = None
    sub_group_policy: list[Any] | None = None


class _Status(msgspec.Struct):
    phase: str = ""


class CensusPodGroup(msgspec.Struct):
    """The fields of a PodGroup the census reads."""

    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)
    status: _Status = msgspec.field(default_factory=_Status)


@dataclass(frozen=True, slots=True)
class Managed:
    """The spec of a PodGroup the controller made, as it stands."""

    min_member: int
    min_member_from: str
    min_resources: dict[str, str]
    sub_groups: list[Any] | None
    rule: str


class PodGroupCensus:
    """Every PodGroup's queue and phase, and the spec of those the controller made."""

    def __init__(
        self,
        client: KubeClient,
        default_queue: str,
        namespaces: tuple[str, ...] = (),
        on_queue_change: Callable[[str], None] = lambda queue: None,
    ) -> None:
        self.default_queue = default_queue
        self.on_queue_change = on_queue_change
        self._views: dict[str, PodGroupView] = {}
        self._by_queue: dict[str, set[str]] = {}
        self._managed: dict[str, Managed] = {}
        scopes = [f"/namespaces/{ns}" for ns in namespaces] or [""]
        self.reflectors = [
            Reflector(
                client,
                Kind(
                    "podgroups",
                    f"/apis/{GROUP}/{VERSION}{scope}/podgroups",
                    CensusPodGroup,
                    _key,
                    self._upsert,
                    self._delete,
                ),
                page_size=5000,
            )
            for scope in scopes
        ]

    async def run(self) -> None:
        """List and watch until cancelled."""
        await asyncio.gather(*(reflector.run() for reflector in self.reflectors))

    def is_synced(self) -> bool:
        """Whether every PodGroup has been listed once."""
        return all(reflector.is_synced() for reflector in self.reflectors)

    async def wait_synced(self) -> None:
        """Return once every PodGroup has been listed once."""
        for reflector in self.reflectors:
            await reflector.synced.wait()

    def in_queue(self, queue: str) -> list[PodGroupView]:
        """The PodGroups that name the queue."""
        return [self._views[key] for key in self._by_queue.get(queue, ())]

    def known(self, namespace: str, name: str) -> bool:
        """Whether the PodGroup exists, as far as the census has seen."""
        return f"{namespace}/{name}" in self._views

    def managed(self, namespace: str, name: str) -> Managed | None:
        """The spec of a PodGroup the controller made, None for any other (or none)."""
        return self._managed.get(f"{namespace}/{name}")

    def __len__(self) -> int:
        return len(self._views)

    def _upsert(self, group: CensusPodGroup) -> None:
        key = _key(group)
        meta, spec = group.metadata, group.spec
        view = PodGroupView(
            namespace=meta.namespace,
            name=meta.name,
            queue=spec.queue or self.default_queue,
            phase=group.status.phase,
        )
        old = self._views.get(key)
        if old is not None and old.queue != view.queue:
            self._by_queue.get(old.queue, set()).discard(key)
        self._views[key] = view
        self._by_queue.setdefault(view.queue, set()).add(key)
        rule = meta.annotations.get(GROUPING_RULE_ANNOTATION)
        if rule is None:
            self._managed.pop(key, None)
        else:
            self._managed[key] = Managed(
                min_member=spec.min_member,
                min_member_from=meta.annotations.get(MIN_MEMBER_FROM_ANNOTATION, ""),
                min_resources={k: str(v) for k, v in (spec.min_resources or {}).items()},
                sub_groups=spec.sub_group_policy,
                rule=rule,
            )
        if old is None or old.phase != view.phase or old.queue != view.queue:
            for queue in _queues(old, view):
                self.on_queue_change(queue)

    def _delete(self, key: str) -> None:
        old = self._views.pop(key, None)
        self._managed.pop(key, None)
        if old is None:
            return
        self._by_queue.get(old.queue, set()).discard(key)
        self.on_queue_change(old.queue)


def _key(group: CensusPodGroup) -> str:
    return f"{group.metadata.namespace}/{group.metadata.name}"


def _queues(old: PodGroupView | None, new: PodGroupView) -> Iterable[str]:
    if old is not None and old.queue != new.queue:
        yield old.queue
    yield new.queue
