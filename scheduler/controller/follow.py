"""PodGroups the controller made follow their owner: a scale change moves minMember with it.

The workload kinds whose rule reads their spec (a JobSet's replicas, a RayCluster's worker
groups that Ray's autoscaler scales, an Indexed Job that scales elastically...) are
listed and watched; on each change, every group the owner's spec implies is computed again
(plan.desired_for_owner) and, where the census holds a PodGroup the controller made under
that name and its minMember, minResources or subGroupPolicy differ, merge-patched with the
rule in words. A group whose minMember an annotation set (on the pod or an owner) keeps it.
A replay of unchanged owners writes nothing: the comparison is with the census, in memory.

Kinds that are not installed are not served (404): their watch checks again every minute.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.names import GROUPING_RULE_ANNOTATION
from scheduler.api.resources import Resource
from scheduler.cache.reflector import Kind, Reflector
from scheduler.controller.census import Managed, PodGroupCensus
from scheduler.controller.groupers import GROUPERS
from scheduler.controller.groupers.base import Grouper, Obj
from scheduler.controller.objects import ClusterObjects
from scheduler.controller.plan import FROM_RULE, Desired, desired_for_owner, podgroup_name
from scheduler.kube.client import KubeClient

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Followed:
    """A workload kind whose groups follow its spec: where it is served."""

    api_group: str
    version: str
    plural: str
    kind: str

    @property
    def grouper(self) -> Grouper:
        """The kind's rule."""
        return GROUPERS[(self.api_group, self.kind)]


# Every kind with a rule that reads its spec (Spark's reads the pods' labels).
FOLLOWED = (
    Followed("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),
    Followed("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet"),
    Followed("ray.io", "v1", "rayclusters", "RayCluster"),
    Followed("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"),
    Followed("kubeflow.org", "v1", "tfjobs", "TFJob"),
    Followed("kubeflow.org", "v1", "xgboostjobs", "XGBoostJob"),
    Followed("kubeflow.org", "v1", "jaxjobs", "JAXJob"),
    Followed("kubeflow.org", "v1", "paddlejobs", "PaddleJob"),
    Followed("kubeflow.org", "v2beta1", "mpijobs", "MPIJob"),
    Followed("batch", "v1", "jobs", "Job"),
)


class Owned(msgspec.Struct, rename="camel"):
    """A followed owner as listed: its identity and spec (its status is not read)."""

    api_version: str = ""
    kind: str = ""
    metadata: wire.ObjectMeta = msgspec.field(default_factory=wire.ObjectMeta)
    spec: dict[str, Any] = msgspec.field(default_factory=dict)

    def document(self) -> Obj:
        """The owner as the groupers read it."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": msgspec.to_builtins(self.metadata),
            "spec": self.spec,
        }


def follow_patch(desired: Desired, current: Managed) -> Obj | None:
    """The merge patch that brings a PodGroup in step with its owner, None when it is."""
    if current.min_member_from != FROM_RULE:
        return None  # an annotation set minMember: it stays
    spec: Obj = {}
    if desired.min_member != current.min_member:
        spec["minMember"] = desired.min_member
    if desired.min_resources is not None and _canonical(desired.min_resources) != _canonical(
        current.min_resources
    ):
        gone = {name: None for name in current.min_resources if name not in desired.min_resources}
        spec["minResources"] = {**gone, **desired.min_resources}
    if (desired.sub_groups or None) != (current.sub_groups or None):
        spec["subGroupPolicy"] = desired.sub_groups or None
    if not spec:
        return None
    return {"metadata": {"annotations": {GROUPING_RULE_ANNOTATION: desired.rule}}, "spec": spec}


def _canonical(resources: dict[str, str]) -> dict[str, str]:
    try:
        return Resource.from_list(resources).to_list()
    except Exception:
        return dict(resources)  # unreadable: compared as written, so it is rewritten


class OwnerFollower:
    """Watches the followed kinds and patches the groups whose owner's spec moved."""

    def __init__(
        self,
        client: KubeClient,
        objects: ClusterObjects,
        census: PodGroupCensus,
        namespaces: tuple[str, ...] = (),
        on_updated: Callable[[str], None] = lambda name: None,
        on_error: Callable[[], None] = lambda: None,
    ) -> None:
        self.objects = objects
        self.census = census
        self.on_updated = on_updated
        self.on_error = on_error
        self._pending: dict[str, tuple[Followed, Obj]] = {}
        self._wake = asyncio.Event()
        scopes = [f"/namespaces/{ns}" for ns in namespaces] or [""]
        self.reflectors = [
            Reflector(
                client,
                Kind(
                    followed.plural,
                    f"/apis/{followed.api_group}/{followed.version}{scope}/{followed.plural}",
                    Owned,
                    _uid,
                    _on_change(self, followed),
                    lambda key: None,
                    optional=True,
                ),
                page_size=500,
            )
            for followed in FOLLOWED
            for scope in scopes
        ]

    async def run(self) -> None:
        """Once the census is complete, watch the owners and follow them, until cancelled."""
        await self.census.wait_synced()
        await asyncio.gather(self._work(), *(reflector.run() for reflector in self.reflectors))

    def changed(self, followed: Followed, owner: Owned) -> None:
        """Follow the owner soon (its latest state: a newer one replaces a queued one)."""
        self._pending[owner.metadata.uid] = (followed, owner.document())
        self._wake.set()

    async def _work(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                uid = next(iter(self._pending))
                followed, owner = self._pending.pop(uid)
                try:
                    await self.follow(followed.grouper, owner)
                except InvalidObject as error:
                    self.on_error()
                    log.warning("cannot follow %s: %s", followed.kind, error)
                except Exception:
                    self.on_error()
                    log.exception("following %s %s failed", followed.kind, uid)
                await asyncio.sleep(0)

    async def follow(self, grouper: Grouper, owner: Obj) -> None:
        """Patch every group of the owner that the controller made and that moved."""
        meta = owner.get("metadata") or {}
        namespace, uid = str(meta.get("namespace", "")), str(meta.get("uid", ""))
        keys = grouper.keys(owner)
        managed = [
            (key, name, current)
            for key in keys
            if (current := self.census.managed(namespace, name := podgroup_name(uid, key)))
            is not None
        ]
        if not managed:
            return
        present = frozenset(
            [
                probe
                for probe in grouper.probes(owner)
                if await self.objects.exists(
                    probe.api_version, probe.kind, probe.namespace, probe.name
                )
            ]
        )
        for key, name, current in managed:
            patch = follow_patch(desired_for_owner(grouper, owner, key, present), current)
            if patch is None:
                continue
            await self.objects.patch_podgroup(namespace, name, patch)
            self.on_updated(name)
            log.info(
                "PodGroup follows its owner: %s",
                patch["metadata"]["annotations"][GROUPING_RULE_ANNOTATION],
                extra={"podgroup": f"{namespace}/{name}"},
            )


def _uid(owner: Owned) -> str:
    return owner.metadata.uid


def _on_change(follower: OwnerFollower, followed: Followed) -> Callable[[Owned], None]:
    return lambda owner: follower.changed(followed, owner)
