"""An in-memory API server for the controller's handlers (its ClusterObjects protocol)."""

from __future__ import annotations

import copy

import msgspec

from scheduler.controller.census import CensusPodGroup, PodGroupCensus
from scheduler.controller.objects import Obj, OwnerForbidden
from tests.unit.controller.workloads import PLURALS


def merge(target: Obj, patch: Obj) -> Obj:
    """A JSON merge patch (RFC 7386) applied to a copy of target."""
    result = copy.deepcopy(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


class FakeObjects:
    """ClusterObjects in memory: stored objects, PodGroups, pod annotations, events."""

    def __init__(
        self, *objects: Obj, namespace_queue: str = "", forbidden: tuple[str, ...] = ()
    ) -> None:
        self.stored: dict[tuple[str, str, str], Obj] = {}
        for obj in objects:
            self.add(obj)
        self.ns_queue = namespace_queue
        self.forbidden = set(forbidden)  # kinds RBAC refuses
        self.podgroups: dict[str, Obj] = {}
        self.annotations: dict[str, dict[str, str]] = {}
        self.events: list[tuple[str, str, str]] = []
        self.creates = 0
        self.patches: list[tuple[str, Obj]] = []
        self.native_patches: list[tuple[str, dict[str, str]]] = []
        self.owner_reads = 0

    def add(self, obj: Obj) -> Obj:
        meta = obj["metadata"]
        self.stored[(obj["kind"], meta.get("namespace", ""), meta["name"])] = obj
        return obj

    async def owner(self, namespace: str, reference: Obj) -> Obj | None:
        self.owner_reads += 1
        kind = str(reference.get("kind"))
        if kind in self.forbidden:
            group = str(reference.get("apiVersion", "")).rpartition("/")[0]
            raise OwnerForbidden(
                kind, f"{namespace}/{reference.get('name')}", group, PLURALS.get(kind, kind.lower())
            )
        found = self.stored.get((kind, namespace, str(reference.get("name"))))
        if found is None or found["metadata"].get("uid") != reference.get("uid"):
            return None
        return found

    async def namespace_queue(self, namespace: str) -> str:
        return self.ns_queue

    async def exists(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        return (kind, namespace, name) in self.stored

    async def create_podgroup(self, namespace: str, body: Obj) -> bool:
        self.creates += 1
        name = body["metadata"]["name"]
        if name in self.podgroups:
            return False  # 409 AlreadyExists
        self.podgroups[name] = copy.deepcopy(body)
        return True

    async def patch_podgroup(self, namespace: str, name: str, patch: Obj) -> None:
        self.patches.append((name, patch))
        if name in self.podgroups:
            self.podgroups[name] = merge(self.podgroups[name], patch)

    async def annotate_pod(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        self.annotations.setdefault(name, {}).update(annotations)

    async def warn(self, pod: Obj, reason: str, message: str) -> None:
        self.events.append((pod["metadata"]["name"], reason, message))

    async def native_podgroup(self, namespace: str, name: str) -> Obj | None:
        return self.stored.get(("NativePodGroup", namespace, name))

    async def native_workload(self, namespace: str, name: str) -> Obj | None:
        return self.stored.get(("Workload", namespace, name))

    async def native_podgroups_in(self, namespace: str) -> list[Obj]:
        return [
            obj
            for (kind, ns, _), obj in self.stored.items()
            if kind == "NativePodGroup" and ns == namespace
        ]

    async def annotate_native_podgroup(
        self, namespace: str, name: str, annotations: dict[str, str]
    ) -> None:
        self.native_patches.append((name, annotations))
        found = self.stored.get(("NativePodGroup", namespace, name))
        if found is not None:
            meta = found["metadata"]
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}

    async def set_queue_state(self, name: str, state: str) -> None:
        raise AssertionError("not used")

    async def ensure_queue(self, name: str) -> None:
        raise AssertionError("not used")

    async def ensure_peering(self, name: str) -> None:
        raise AssertionError("not used")


def census_of(*podgroups: Obj, default_queue: str = "default") -> PodGroupCensus:
    """A census that has seen these PodGroups (no API server behind it)."""
    census = PodGroupCensus(None, default_queue)  # type: ignore[arg-type]
    for group in podgroups:
        seen(census, group)
    census.reflectors[0].synced.set()
    return census


def seen(census: PodGroupCensus, podgroup: Obj) -> None:
    """The census sees a PodGroup's event, as its watch would bring it."""
    census.reflectors[0].kind.upsert(msgspec.convert(podgroup, CensusPodGroup))


def stored(census: PodGroupCensus, objects: FakeObjects) -> None:
    """The census sees every PodGroup the fake holds now."""
    for group in objects.podgroups.values():
        seen(census, group)
