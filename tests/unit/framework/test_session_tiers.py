"""Session: plugin answers combined by tier as Volcano does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api.job import JobInfo
from scheduler.api.node import NodeInfo
from scheduler.api.task import TaskInfo
from scheduler.framework.answers import Vote
from scheduler.framework.config import parse_config
from scheduler.framework.cycle import open_cycle
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session
from scheduler.framework.status import OK, Status, unresolvable
from tests.unit.builders import gang, node, snapshot


def make(name: str, **answers: Any) -> type[Plugin]:
    """A plugin class answering fixed values at the named extension points."""
    body: dict[str, Any] = {"name": name}
    for point, value in answers.items():
        body[point] = (lambda v: lambda self, *args: v)(value)
    return type(name, (Plugin,), body)


def session_with(tiers: list[list[str]], plugins: Mapping[str, type[Plugin]]) -> Session:
    text = "actions: allocate\ntiers:\n" + "".join(
        "- plugins:\n" + "".join(f"  - name: {p}\n" for p in tier) for tier in tiers
    )
    config = parse_config(text, known_actions={"allocate"}, known_plugins=plugins)
    return open_cycle(snapshot([node("n1")], [gang("a", 1), gang("b", 1)]), config, plugins).session


def jobs(session: Session) -> tuple[JobInfo, JobInfo]:
    return session.jobs["default/a"], session.jobs["default/b"]


def keyed(name: str, first: str) -> type[Plugin]:
    """A plugin whose job order puts the job named `first` before the others."""
    return type(name, (Plugin,), {"name": name, "job_order": lambda self, job: job.name != first})


def test_order_takes_the_first_plugin_whose_keys_differ_across_tiers() -> None:
    plugins = {
        "abstain": make("abstain", job_order=0),
        "b_first": keyed("b_first", "b"),
        "a_first": keyed("a_first", "a"),
    }
    session = session_with([["abstain", "b_first"], ["a_first"]], plugins)
    a, b = jobs(session)
    assert session.compare_jobs(a, b) == 1
    assert session.compare_jobs(b, a) == -1
    assert sorted([a, b], key=session.job_key) == [b, a]
    # the tiers the other way round: a_first decides
    session = session_with([["a_first"], ["abstain", "b_first"]], plugins)
    a, b = jobs(session)
    assert session.compare_jobs(a, b) == -1


def test_jobs_that_every_plugin_ties_go_older_first_then_by_name() -> None:
    plugins = {"abstain": make("abstain", job_order=0)}
    session = session_with([["abstain"]], plugins)
    a, b = jobs(session)
    b.creation_timestamp = "2026-01-01T00:00:00Z"
    a.creation_timestamp = "2026-01-01T00:00:01Z"
    assert session.compare_jobs(a, b) == 1
    a.creation_timestamp = b.creation_timestamp
    assert session.compare_jobs(a, b) == -1
    assert session.compare_jobs(a, a) == 0


def test_filters_need_every_plugin_to_agree_and_report_the_first_refusal() -> None:
    refuse = unresolvable("node(s) were unschedulable")
    plugins = {"agree": make("agree", node_admits=OK), "refuse": make("refuse", node_admits=refuse)}
    session = session_with([["agree"], ["refuse"]], plugins)
    a, _ = jobs(session)
    task: TaskInfo = next(iter(a.tasks.values()))
    n1: NodeInfo = session.nodes["n1"]
    verdict: Status = session.admits(task, n1)
    assert verdict == refuse


def test_votes_a_reject_wins_else_the_first_tier_with_a_permit() -> None:
    plugins = {
        "permit": make("permit", job_enqueueable=Vote.PERMIT),
        "reject": make("reject", job_enqueueable=Vote.REJECT),
        "abstain": make("abstain", job_enqueueable=Vote.ABSTAIN),
    }
    a, _ = jobs(session_with([["abstain"], ["permit"], ["reject"]], plugins))
    assert session_with([["abstain"], ["permit"], ["reject"]], plugins).job_enqueueable(a)
    assert not session_with([["permit", "reject"]], plugins).job_enqueueable(a)
    assert session_with([["abstain"]], plugins).job_enqueueable(a)


def test_job_ready_needs_every_plugin() -> None:
    plugins = {"ready": make("ready", job_ready=True), "not": make("not", job_ready=False)}
    a, _ = jobs(session_with([["ready"]], plugins))
    assert session_with([["ready"]], plugins).job_ready(a)
    assert not session_with([["ready"], ["not"]], plugins).job_ready(a)


def test_victims_intersect_within_a_tier_and_the_first_answering_tier_wins() -> None:
    def picks(*names: str) -> Any:
        return lambda self, actor, candidates: [c for c in candidates if c.name in names]

    plugins: dict[str, type[Plugin]] = {
        "x": type("x", (Plugin,), {"name": "x", "preemptable": picks("a-0", "b-0")}),
        "y": type("y", (Plugin,), {"name": "y", "preemptable": picks("b-0")}),
        "z": type("z", (Plugin,), {"name": "z", "preemptable": picks("a-0")}),
        "quiet": make("quiet"),
    }
    session = session_with([["quiet"], ["x", "y"], ["z"]], plugins)
    a, b = jobs(session)
    candidates = [next(iter(a.tasks.values())), next(iter(b.tasks.values()))]
    assert [t.name for t in session.preemptable(candidates[0], candidates)] == ["b-0"]


def test_a_disabled_extension_point_is_not_asked() -> None:
    plugins = {"b_first": keyed("b_first", "b")}
    text = "actions: allocate\ntiers:\n- plugins:\n  - name: b_first\n    enableJobOrder: false\n"
    config = parse_config(text, known_actions={"allocate"}, known_plugins=plugins)
    session = open_cycle(
        snapshot([node("n1")], [gang("a", 1), gang("b", 1)]), config, plugins
    ).session
    a, b = jobs(session)
    assert session.compare_jobs(a, b) == -1  # falls back to creation order / name
