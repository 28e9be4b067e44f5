"""A kind served at whichever version the server has (Kubernetes' own gang API): discovery
picks v1beta1, else v1alpha2, else none (synced and empty, as an optional kind not served);
a 404 on the version in use (an upgrade dropped it) asks discovery again at once. No sockets."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from scheduler.api.native import PODGROUPS, VERSIONS, WORKLOADS
from scheduler.cache.kinds.base import Versions
from scheduler.cache.reflector import Kind, Reflector
from scheduler.cache.world import World
from scheduler.kube.errors import NotFound
from tests.unit.cache.test_reflector import Item, item, polled, run_until


class Server:
    """Serves discovery for the versions in `served` (each with podgroups, unless the gate
    that stores them is off), a list of `items` at each served collection, and watches that
    end in 404 once `upgraded` (the version in use dropped)."""

    def __init__(self, served: list[str], items: list[Any], without: tuple[str, ...] = ()) -> None:
        self.served = served
        self.items = items
        self.without = without
        self.listed: list[str] = []
        self.watched: list[str] = []
        self.upgraded = False

    async def request(
        self, method: str, path: str, params: Mapping[str, str] | None = None, **_: Any
    ) -> bytes:
        if path == "/readyz":
            return b"ok"
        parts = path.strip("/").split("/")
        version = parts[2]
        if version not in self.served:
            raise NotFound(404, "NotFound", "not found", method, path)
        if len(parts) == 3:
            resources = [] if version in self.without else [{"name": PODGROUPS}]
            return json.dumps({"resources": [*resources, {"name": WORKLOADS}]}).encode()
        self.listed.append(path)
        return json.dumps({"metadata": {"resourceVersion": "5"}, "items": self.items}).encode()

    async def watch(
        self,
        path: str,
        params: Mapping[str, str],
        *,
        timeout: float,
    ) -> AsyncIterator[bytes]:
        self.watched.append(path)
        version = path.strip("/").split("/")[2]
        if version not in self.served:
            raise NotFound(404, "NotFound", "not found", "WATCH", path)
        while not self.upgraded:
            await asyncio.sleep(0.001)
        raise NotFound(404, "NotFound", "not found", "WATCH", path)
        yield b""  # an async generator


def reflector_for(server: Server) -> tuple[Reflector[Item], World, dict[str, int]]:
    """A reflector of native PodGroups from `server`, the World it tells the version found,
    and the store it keeps the objects in."""
    world = World()
    store: dict[str, int] = {}
    versions = Versions("scheduling.k8s.io", PODGROUPS, VERSIONS)

    async def discover(client: Any) -> str | None:
        return await versions.discover(world, client)

    kind = Kind(
        "nativepodgroup",
        "",
        Item,
        lambda o: o.metadata["name"],
        lambda o: store.__setitem__(o.metadata["name"], o.size),
        lambda key: store.pop(key, None),  # type: ignore[arg-type,return-value]
        discover=discover,
    )
    fake: Any = server
    return Reflector(fake, kind, absent_recheck=0.001), world, store


def test_v1beta1_is_watched_when_the_server_serves_it() -> None:
    server = Server(["v1alpha2", "v1beta1"], [item("a", 1)])
    reflector, world, store = reflector_for(server)
    asyncio.run(run_until(reflector, lambda: bool(server.watched)))
    assert server.listed == ["/apis/scheduling.k8s.io/v1beta1/podgroups"]
    assert world.served_versions[PODGROUPS] == "v1beta1"
    assert store == {"a": 1}


def test_v1alpha2_is_watched_on_a_136_server() -> None:
    server = Server(["v1alpha2"], [item("a", 1)])
    reflector, world, _ = reflector_for(server)
    asyncio.run(run_until(reflector, lambda: bool(server.watched)))
    assert server.listed == ["/apis/scheduling.k8s.io/v1alpha2/podgroups"]
    assert world.served_versions[PODGROUPS] == "v1alpha2"


def test_a_version_served_without_its_podgroups_does_not_count() -> None:
    server = Server(["v1alpha2", "v1beta1"], [], without=("v1beta1",))
    reflector, _, _ = reflector_for(server)
    asyncio.run(run_until(reflector, lambda: bool(server.watched)))
    assert server.listed == ["/apis/scheduling.k8s.io/v1alpha2/podgroups"]


def test_a_server_with_neither_version_is_synced_with_none_and_not_broken() -> None:
    server = Server(["v1"], [item("a", 1)])
    reflector, world, store = reflector_for(server)
    asyncio.run(run_until(reflector, reflector.is_synced))
    assert reflector.is_synced() and reflector.broken_since() is None
    assert store == {} and server.listed == []
    assert world.served_versions[PODGROUPS] == ""


def test_an_upgrade_that_drops_the_version_in_use_moves_the_watch_to_the_next() -> None:
    server = Server(["v1alpha2"], [item("a", 1)])
    reflector, world, store = reflector_for(server)

    async def scenario() -> None:
        task = asyncio.get_running_loop().create_task(reflector.run())
        await polled(lambda: bool(server.watched))
        # kube-apiserver 1.37: v1beta1 served, v1alpha2 gone
        server.served = ["v1beta1"]
        server.items = [item("a", 1), item("b", 2)]
        server.upgraded = True
        await polled(lambda: "b" in store)
        task.cancel()

    asyncio.run(scenario())
    assert server.listed[-1] == "/apis/scheduling.k8s.io/v1beta1/podgroups"
    assert world.served_versions[PODGROUPS] == "v1beta1"
    assert store == {"a": 1, "b": 2}


def test_a_version_served_after_an_upgrade_is_listed_without_a_restart() -> None:
    """A cluster that turns the API on later (an upgrade, a feature gate) is read once
    discovery finds it, by the reflector that found none before."""
    server = Server(["v1"], [item("a", 1)])
    reflector, world, store = reflector_for(server)

    async def scenario() -> None:
        task = asyncio.get_running_loop().create_task(reflector.run())
        await polled(reflector.is_synced)
        server.served = ["v1", "v1alpha2"]
        await polled(lambda: bool(server.watched))
        assert not task.done(), "the reflector task must never end"
        task.cancel()

    asyncio.run(scenario())
    assert server.listed == ["/apis/scheduling.k8s.io/v1alpha2/podgroups"]
    assert world.served_versions[PODGROUPS] == "v1alpha2"
    assert store == {"a": 1}
