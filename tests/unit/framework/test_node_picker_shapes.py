"""NodePicker shapes: a task reuses the shape of the task before it only when alike."""

from __future__ import annotations

from scheduler.api.job import JobInfo
from scheduler.api.resources import Resource
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskInfo
from scheduler.engine import default_config
from scheduler.framework.cycle import open_cycle
from scheduler.framework.node_picker import NodePicker
from scheduler.plugins import PLUGINS
from tests.unit.builders import gang, node, snapshot


def picker_over(snap: ClusterSnapshot) -> NodePicker:
    """A node picker of a cycle opened over the snapshot with the default config."""
    cycle = open_cycle(snap, default_config(), PLUGINS)
    return NodePicker(cycle.session, cycle.state)


def members_sharing_objects(job: JobInfo) -> list[TaskInfo]:
    """The gang's members holding one placement and one label mapping, as the cache's
    pods of one gang do."""
    members = sorted(job.tasks.values(), key=lambda t: t.name)
    for member in members:
        member.placement = members[0].placement
        member.labels = members[0].labels
    return members


def test_a_gang_mate_asking_more_does_not_take_the_small_ones_shape() -> None:
    # The big member differs from its mates only in its request: it finds no node, which
    # must not mark the shape of the small ones, picked before and after it, as failed.
    job = gang("g", 3, cpu=1)
    small, big, later = members_sharing_objects(job)
    big.set_request(Resource(64_000, 0))
    nodes = [node("n1", cpu=4), node("n2", cpu=4)]
    picker = picker_over(snapshot(nodes, [job]))
    first = picker.pick(small)
    assert first is not None
    picker.reconsider(small, first)
    assert picker.pick(big) is None
    assert "Insufficient cpu" in picker.failure(big)
    assert picker.pick(later) is not None


def test_alike_gang_mates_share_one_shape_heap() -> None:
    job = gang("g", 4, cpu=1)
    members = members_sharing_objects(job)
    picker = picker_over(snapshot([node("n1", cpu=8)], [job]))
    for member in members:
        chosen = picker.pick(member)
        assert chosen is not None
        picker.reconsider(member, chosen)
    assert len({id(picker._shape(m)) for m in members}) == 1
    assert len(picker._shapes) == 1


def test_a_node_given_back_for_an_earlier_task_returns_to_that_tasks_shape() -> None:
    # reconsider for a task other than the one pick just answered (a caller that picked
    # for two shapes before deciding) still gives the node back to the first one's heap.
    small_job, big_job = gang("s", 2, cpu=1), gang("b", 1, cpu=2)
    small, mate = members_sharing_objects(small_job)
    (big,) = big_job.tasks.values()
    picker = picker_over(snapshot([node("n1", cpu=4)], [small_job, big_job]))
    assert picker.pick(small) is not None
    chosen = picker.pick(big)
    assert chosen is not None
    picker.reconsider(small, chosen)
    assert picker.pick(mate) is chosen
