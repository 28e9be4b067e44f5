"""The HyperNode kind: watched cluster-wide from topology.volcano.sh, optional (a cluster
without the CRD has none), and read by the inspect commands without failing there."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import msgspec
import pytest

from scheduler.api.hypernode import HyperNode
from scheduler.cache.kinds import hypernodes
from scheduler.cache.wiring import world_kinds
from scheduler.cache.world import World
from scheduler.inspect.cluster import build_world, list_cluster
from scheduler.kube.errors import NotFound


def kinds(world: World) -> dict[str, Any]:
    return {kind.name: kind for kind in world_kinds(world)}


def test_hypernodes_are_listed_cluster_wide_from_topology_volcano_sh() -> None:
    kind = kinds(World())["hypernode"]
    assert kind.path == "/apis/topology.volcano.sh/v1alpha1/hypernodes" == hypernodes.HANDLER.path
    assert kind.wire_type is HyperNode


def test_only_the_kinds_of_crds_most_clusters_lack_are_optional() -> None:
    optional = sorted(name for name, kind in kinds(World()).items() if kind.optional)
    assert optional == ["hypernode", "provisioningrequest"]


def test_a_hypernode_upserted_and_deleted_by_key_through_its_kind_reaches_the_world() -> None:
    world = World()
    kind = kinds(world)["hypernode"]
    raw = {"metadata": {"name": "rack-a"}, "spec": {"tier": 1, "members": []}}
    obj = msgspec.convert(raw, HyperNode)
    kind.upsert(obj)
    assert kind.key(obj) == "rack-a"
    assert "rack-a" in world.snapshot().hypernodes
    kind.delete("rack-a")
    assert world.snapshot().hypernodes == {}


class ListingClient:
    """Answers every list with `items[path]`, and 404 for a path it does not serve."""

    def __init__(self, items: Mapping[str, list[Any]]) -> None:
        self.items = items

    async def request(
        self, method: str, path: str, params: Mapping[str, str] | None = None
    ) -> bytes:
        if path not in self.items:
            raise NotFound(404, "NotFound", "the server could not find it", method, path)
        return json.dumps({"metadata": {}, "items": self.items[path]}).encode()


def every_kind_empty(overrides: Mapping[str, list[Any]] | None = None) -> dict[str, list[Any]]:
    served: dict[str, list[Any]] = {kind.path: [] for kind in world_kinds(World())}
    del served[hypernodes.HANDLER.path]
    return served | dict(overrides or {})


def test_inspect_reads_a_cluster_without_the_hypernode_crd_as_one_without_hypernodes() -> None:
    client: Any = ListingClient(every_kind_empty())
    objects = asyncio.run(list_cluster(client))
    assert objects.of_kind("hypernode") == []
    assert build_world(objects).snapshot().hypernodes == {}


def test_inspect_reads_the_hypernodes_of_a_cluster_that_has_them() -> None:
    rack = {"metadata": {"name": "rack-a"}, "spec": {"tier": 1}}
    client: Any = ListingClient(every_kind_empty({hypernodes.HANDLER.path: [rack]}))
    world = build_world(asyncio.run(list_cluster(client)))
    assert world.snapshot().hypernodes["rack-a"].tier == 1


def test_inspect_still_fails_on_a_kind_that_must_be_served() -> None:
    served = every_kind_empty()
    del served["/api/v1/nodes"]
    client: Any = ListingClient(served)
    with pytest.raises(NotFound):
        asyncio.run(list_cluster(client))
