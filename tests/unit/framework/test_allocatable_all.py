"""Session.allocatable_all: one queue check for a gang's summed request, when it adds up."""

from __future__ import annotations

from typing import Any

from scheduler.actions import ACTIONS
from scheduler.api.queue import QueueInfo
from scheduler.api.task import TaskInfo
from scheduler.engine import default_config, schedule
from scheduler.framework.answers import Waiting
from scheduler.framework.config import DEFAULT_CONFIG_YAML, parse_config
from scheduler.framework.cycle import open_cycle
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session
from scheduler.plugins import PLUGINS
from tests.unit.builders import binds_per_job, gang, node, queue, resources, snapshot


def session_with(
    capped_cpu: float, size: int, plugins: Any = PLUGINS, config: Any = None
) -> Session:
    job = gang("g", size, cpu=1, queue="capped")
    snap = snapshot(
        [node("n1", cpu=16)], [job], [queue("capped", capability=resources(cpu=capped_cpu))]
    )
    return open_cycle(snap, config or default_config(), plugins).session


def members(session: Session) -> list[TaskInfo]:
    return sorted(session.jobs["default/g"].tasks.values(), key=lambda t: t.name)


def test_the_whole_gang_within_the_queue_is_one_yes() -> None:
    session = session_with(capped_cpu=4, size=4)
    assert session.allocatable_all(session.queues["capped"], members(session))


def test_a_gang_past_the_queue_is_a_no_that_records_nothing() -> None:
    # Three of the four fit: the answer is no for the lot, and the job carries no reason
    # from it (allocate then asks pod by pod, which says why).
    session = session_with(capped_cpu=3, size=4)
    assert not session.allocatable_all(session.queues["capped"], members(session))
    assert session.jobs["default/g"].wait_reason == ""
    assert session.allocatable(session.queues["capped"], members(session)[0])


def test_a_plugin_that_does_not_add_up_is_asked_pod_by_pod() -> None:
    class EveryOther(Plugin[Any]):
        """Takes the first pod of a queue, then every other: no sum can say that."""

        name = "every-other"

        def __init__(self, arguments: Any = None) -> None:
            super().__init__(arguments)
            self.asked = 0

        def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool | Waiting:
            self.asked += 1
            return self.asked % 2 == 1

    plugins = {**PLUGINS, "every-other": EveryOther}
    config = parse_config(
        f"{DEFAULT_CONFIG_YAML}  - name: every-other\n",
        known_actions=ACTIONS,
        known_plugins=plugins,
    )
    session = session_with(capped_cpu=8, size=4, plugins=plugins, config=config)
    assert not session.allocatable_all(session.queues["capped"], members(session))


def test_a_gang_the_queue_holds_only_in_part_is_placed_as_pod_by_pod_checks_say() -> None:
    # minMember 2 of 4 pods, queue capped at 3 cpu: three are placed, the fourth is
    # refused by the queue, the same as asking for each pod in turn.
    job = gang("g", 4, cpu=1, queue="capped", min_member=2)
    snap = snapshot([node("n1", cpu=16)], [job], [queue("capped", capability=resources(cpu=3))])
    result = schedule(snap, default_config())
    assert binds_per_job(result)["default/g"] == 3
