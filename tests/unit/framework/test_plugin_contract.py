"""The plugin contract: a plugin class is checked when it is defined, declares its
arguments model as its type parameter, and answers only through declared channels."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import Field

from scheduler.api.job import JobInfo
from scheduler.api.queue import QueueInfo
from scheduler.api.task import TaskInfo
from scheduler.framework.action import Action
from scheduler.framework.answers import Vote, Waiting
from scheduler.framework.arguments import Arguments, NoArguments
from scheduler.framework.config import parse_config
from scheduler.framework.cycle import open_cycle
from scheduler.framework.plugin import Plugin, check_extension_points
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.plugins import PLUGINS
from tests.unit.builders import gang, node, snapshot


class _Weights(Arguments):
    weight: float = Field(1.0, alias="w.weight")


@pytest.mark.parametrize(
    ("method", "suggestion"),
    [
        pytest.param("node_fit", "did you mean node_fits()?", id="node_fit-for-node_fits"),
        pytest.param("preemtable", "did you mean preemptable()?", id="preemtable-for-preemptable"),
        pytest.param("on_alocate", "did you mean on_allocate()?", id="on_alocate-for-on_allocate"),
        pytest.param("job_ordering", "did you mean job_order()?", id="job_ordering-for-job_order"),
        pytest.param("queue_helper", "make a helper private (_queue_helper)", id="point-prefix"),
    ],
)
def test_a_misspelt_extension_point_is_refused_when_the_plugin_class_is_defined(
    method: str, suggestion: str
) -> None:
    body = {"name": "typo", method: lambda self, *args: None}
    with pytest.raises(TypeError) as raised:
        type("Typo", (Plugin,), body)
    message = str(raised.value)
    assert f"defines {method}(), which is not an extension point" in message
    assert "plugin 'typo'" in message
    assert suggestion in message


def test_an_extension_point_overridden_with_other_parameters_is_refused() -> None:
    with pytest.raises(TypeError) as raised:

        class _OneArgument(Plugin[NoArguments]):
            name = "one"

            def node_fits(self, task: TaskInfo) -> Any:  # type: ignore[override]
                return None

    assert "defines node_fits(self, task: 'TaskInfo')" in str(raised.value)
    assert "the extension point is node_fits(self, task: 'TaskInfo', node: 'NodeInfo')" in str(
        raised.value
    )


def test_a_session_hook_that_does_not_take_the_cycle_state_is_refused() -> None:
    with pytest.raises(TypeError) as raised:

        class _SessionOnly(Plugin[NoArguments]):
            name = "session-only"

            def on_session_open(self, session: Session) -> None:  # type: ignore[override]
                return None

    assert "the extension point is on_session_open(self, session: 'Session', " in str(raised.value)
    assert "state: 'CycleState')" in str(raised.value)


def test_private_helpers_and_unrelated_public_methods_are_allowed() -> None:
    class _Helpers(Plugin[NoArguments]):
        name = "helpers"

        def share(self, key: str) -> float:
            return 0.0

        def _node_fit(self) -> None:
            return None

    assert _Helpers().share("x") == 0.0


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_every_shipped_plugin_defines_only_extension_points_it_can_serve(plugin: str) -> None:
    check_extension_points(PLUGINS[plugin])


def test_the_type_parameter_declares_the_arguments_model() -> None:
    class _Weighted(Plugin[_Weights]):
        name = "weighted"

    assert _Weighted.arguments_model is _Weights
    assert _Weighted({"w.weight": "2"}).arguments.weight == 2.0
    assert PLUGINS["binpack"].arguments_model.__name__ == "BinpackArguments"


def test_a_plugin_given_another_plugins_arguments_model_is_refused() -> None:
    class _Weighted(Plugin[_Weights]):
        name = "weighted"

    with pytest.raises(TypeError, match="plugin weighted takes _Weights, not NoArguments"):
        _Weighted(NoArguments())


def test_an_action_declares_its_arguments_model_the_same_way() -> None:
    class _Tuned(Action[_Weights]):
        name = "tuned"

    assert _Tuned.arguments_model is _Weights
    assert _Tuned({"w.weight": 3}).arguments.weight == 3.0


def _session(plugins: Mapping[str, type[Plugin[Any]]]) -> Session:
    text = "actions: allocate\ntiers:\n- plugins:\n" + "".join(
        f"  - name: {name}\n" for name in plugins
    )
    config = parse_config(text, known_actions={"allocate"}, known_plugins=plugins)
    return open_cycle(snapshot([node("n1"), node("n2")], [gang("a", 2)]), config, plugins).session


def test_a_rejecting_vote_that_says_why_is_recorded_on_the_job_by_the_session() -> None:
    class _Full(Plugin[NoArguments]):
        name = "full"

        def job_enqueueable(self, job: JobInfo) -> Vote | Waiting:
            return Waiting("QueueCapacityExceeded", "queue 'q' cannot hold minResources")

    session = _session({"full": _Full})
    job = session.jobs["default/a"]
    assert session.job_enqueueable(job) is False
    assert (job.wait_reason, job.wait_message) == (
        "QueueCapacityExceeded",
        "queue 'q' cannot hold minResources",
    )


def test_an_allocatable_refusal_that_says_why_is_recorded_on_the_tasks_job() -> None:
    class _Capped(Plugin[NoArguments]):
        name = "capped"

        def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool | Waiting:
            return Waiting("QueueCapacityExceeded", f"queue {queue.name!r} cannot take it")

    session = _session({"capped": _Capped})
    job = session.jobs["default/a"]
    task = next(iter(job.tasks.values()))
    assert session.allocatable(QueueInfo("q"), task) is False
    assert job.wait_reason == "QueueCapacityExceeded"
    assert job.wait_message == "queue 'q' cannot take it"


def test_a_statement_names_the_nodes_it_touched_once_each_in_order() -> None:
    session = _session({"gang": PLUGINS["gang"]})
    first, second = session.jobs["default/a"].tasks.values()
    statement = Statement(session)
    statement.allocate(first, session.nodes["n2"])
    statement.allocate(second, session.nodes["n2"])
    assert statement.touched_nodes() == ["n2"]
    assert len(statement) == 2
    statement.discard()
    assert statement.touched_nodes() == [] and len(statement) == 0
