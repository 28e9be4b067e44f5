"""Statement: commit yields decisions; discard restores the session exactly."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.task import TaskStatus
from scheduler.engine import default_config
from scheduler.framework.cycle import open_cycle
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.plugins import PLUGINS
from tests.unit.builders import gang, node, running_gang, snapshot


def world() -> Session:
    running = running_gang("run", 3, on=["n0", "n1", "n2"])
    pending = gang("wait", 4, cpu=0.5, memory="1Gi")
    snap = snapshot([node(f"n{i}", cpu=4, memory="8Gi") for i in range(3)], [running, pending])
    return open_cycle(snap, default_config(), PLUGINS).session


def fingerprint(session: Session) -> object:
    nodes = {
        name: (
            n.used.to_list(),
            n.idle.to_list(),
            n.releasing.to_list(),
            n.pipelined.to_list(),
            n.pod_count,
            sorted((uid, t.status.value) for uid, t in n.tasks.items()),
        )
        for name, n in session.nodes.items()
    }
    jobs = {
        key: (
            sorted((t.uid, t.status.value, t.node_name) for t in j.tasks.values()),
            {s.value: sorted(b) for s, b in j.tasks_by_status.items() if b},
            j.allocated.to_list(),
            j.ready_count(),
            j.pipelined_count(),
        )
        for key, j in session.jobs.items()
    }
    return nodes, jobs


operation = st.tuples(st.sampled_from(["allocate", "pipeline", "evict"]), st.integers(0, 50))


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, max_size=12))
def test_discard_restores_node_and_job_state_exactly(ops: list[tuple[str, int]]) -> None:
    session = world()
    before = fingerprint(session)
    statement = Statement(session)
    nodes = session.node_list
    for kind, pick in ops:
        if kind == "evict":
            placed = [t for j in session.jobs.values() for t in j.tasks_in(TaskStatus.RUNNING)]
            if placed:
                statement.evict(placed[pick % len(placed)], "test")
            continue
        pending = [t for j in session.jobs.values() for t in j.tasks_in(TaskStatus.PENDING)]
        if not pending:
            continue
        target = nodes[pick % len(nodes)]
        task = pending[pick % len(pending)]
        if kind == "allocate":
            statement.allocate(task, target)
        else:
            statement.pipeline(task, target)
    statement.discard()
    assert fingerprint(session) == before
    assert session.result.binds == [] and session.result.evictions == []


def test_commit_yields_binds_for_allocations_and_evictions_with_reason() -> None:
    session = world()
    statement = Statement(session)
    waiting = session.jobs["default/wait"]
    first = next(waiting.tasks_in(TaskStatus.PENDING))
    statement.allocate(first, session.nodes["n1"])
    victim = next(session.jobs["default/run"].tasks_in(TaskStatus.RUNNING))
    statement.evict(victim, "preempted by default/wait")
    statement.commit()
    (bind,) = session.result.binds
    assert (bind.name, bind.node) == (first.name, "n1")
    (evict,) = session.result.evictions
    assert evict.name == victim.name and evict.reason == "preempted by default/wait"
    assert victim.status is TaskStatus.RELEASING
