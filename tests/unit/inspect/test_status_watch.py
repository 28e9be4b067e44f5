"""muster status --watch: a new frame only when what the tables say changed."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from scheduler.inspect import status
from scheduler.inspect.cluster import Observed, Options, build_world
from scheduler.inspect.config import built_in
from scheduler.kube.client import KubeClient
from tests.unit.inspect.test_views import NOW, cluster


def args(**given: Any) -> argparse.Namespace:
    return argparse.Namespace(
        **{"all_namespaces": True, "namespace": None, "output": None, **given}
    )


def frame(objects: Any, now: float, **given: Any) -> status.Frame:
    observed = Observed(build_world(objects), objects, built_in())
    return status.render(args(**given), Options(), observed, now)


def test_frames_of_the_same_state_read_later_are_the_same_change_though_ages_moved() -> None:
    first, later = frame(cluster(), NOW), frame(cluster(), NOW + 600)

    assert first.text != later.text  # the AGE column moved
    assert first.content == later.content


def test_a_podgroup_that_changed_makes_a_new_frame() -> None:
    objects = cluster()
    before = frame(objects, NOW)
    objects.podgroups[1].spec.queue = "other"

    after = frame(objects, NOW)

    assert after.content != before.content
    assert "other" in after.text


def test_the_text_frame_is_the_queue_table_then_the_podgroup_table() -> None:
    lines = frame(cluster(), NOW).text.splitlines()

    assert lines[0].split()[:2] == ["NAME", "STATE"]
    blank = lines.index("")
    assert lines[blank + 1].split()[:3] == ["NAMESPACE", "NAME", "PHASE"]


def test_the_json_frame_states_the_configuration_it_used() -> None:
    text = frame(cluster(), NOW, output="json").text

    assert '"source": "built-in default"' in text


class Lists:
    """Answers the two list GETs of the change poll."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any]] = []

    async def get_json(self, path: str, params: Any = None) -> Any:
        self.asked.append((path, params))
        return {"metadata": {"resourceVersion": str(len(self.asked))}, "items": []}


def test_the_change_poll_asks_one_item_of_podgroups_and_queues_for_their_versions() -> None:
    fake: Any = Lists()
    client: KubeClient = fake

    versions = asyncio.run(status.collection_versions(client))

    assert versions == ("1", "2")
    assert [path.rsplit("/", 1)[-1] for path, _ in fake.asked] == ["podgroups", "queues"]
    assert all(params == {"limit": "1"} for _, params in fake.asked)
