"""The status writer writes only PodGroups still muster's, and a 404 on one is no "gone"."""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.api.podgroup import PodGroupPhase
from scheduler.effects.status_writer import StatusWriter
from scheduler.framework.decisions import PodGroupStatusUpdate, PodUnschedulable
from scheduler.kube.errors import NotFound
from tests.unit.effects.test_status_writer_lanes import Quiet


class Recording:
    """Records PodGroup patches; answers 404 while `not_served` is set (a CRD not served)."""

    def __init__(self) -> None:
        self.patched: list[str] = []
        self.not_served = False

    async def patch(self, path: str, body: Any, **_: Any) -> bytes:
        if self.not_served:
            raise NotFound(
                404, "NotFound", "the server could not find the requested resource", "PATCH", path
            )
        self.patched.append(path)
        return b"{}"


def update(name: str, running: int = 0) -> PodGroupStatusUpdate:
    return PodGroupStatusUpdate("ns", name, PodGroupPhase.INQUEUE, (), running, 0, 0, uid="u")


def test_a_status_queued_for_a_podgroup_that_became_another_schedulers_is_not_written() -> None:
    theirs = {"ns/taken"}

    async def main() -> list[str]:
        client = Recording()
        writer = StatusWriter(
            client,  # type: ignore[arg-type]
            Quiet(),  # type: ignore[arg-type]
            is_ours=lambda key: key not in theirs,
        )
        writer.podgroups([update("taken"), update("kept")])
        await writer.drain()
        return client.patched

    patched = asyncio.run(main())
    assert patched == ["/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/kept"]


def test_a_podgroup_write_answered_404_asks_for_a_session_that_makes_it_again() -> None:
    asked: list[str] = []

    async def main() -> list[str]:
        client = Recording()
        writer = StatusWriter(
            client,  # type: ignore[arg-type]
            Quiet(),  # type: ignore[arg-type]
            on_unwritten=lambda: asked.append("session"),
        )
        client.not_served = True
        writer.podgroups([update("g")])
        await writer.drain()
        assert asked == ["session"]
        client.not_served = False
        writer.podgroups([update("g")])  # the next session concludes the same
        await writer.drain()
        return client.patched

    assert asyncio.run(main()) == ["/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/g"]


def test_a_pod_condition_queued_before_its_pod_was_bound_is_not_written() -> None:
    bound = {"uid-bound"}

    async def main() -> list[str]:
        client = Recording()
        writer = StatusWriter(
            client,  # type: ignore[arg-type]
            Quiet(),  # type: ignore[arg-type]
            is_pending=lambda uid: uid not in bound,
        )
        writer.pods(
            [
                PodUnschedulable("ns", name, f"uid-{name}", "ns/g", "Unschedulable", "full")
                for name in ("bound", "waiting")
            ]
        )
        await writer.drain()
        return client.patched

    assert asyncio.run(main()) == ["/api/v1/namespaces/ns/pods/waiting/status"]
