"""PodGroup fields muster accepts but does not honour yet are named on the PodGroup."""

from __future__ import annotations

from typing import Any

from scheduler.api import wire
from scheduler.api.queue import QueueInfo
from scheduler.api.snapshot import build_snapshot
from scheduler.engine import schedule
from scheduler.framework.decisions import GroupCondition


def conditions_of(spec: dict[str, Any]) -> dict[str, GroupCondition]:
    group = wire.from_dict(
        {"metadata": {"name": "ray-pg", "namespace": "ml", "uid": "u1"}, "spec": spec},
        wire.PodGroup,
    )
    snap = build_snapshot(podgroups=[group])
    snap.queues["default"] = QueueInfo("default")
    (update,) = schedule(snap).podgroups
    return {c.type: c for c in update.conditions}


def test_network_topology_from_kuberay_gets_a_condition_saying_it_is_not_honoured() -> None:
    found = conditions_of(
        {"minMember": 2, "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}
    )
    condition = found["FieldsNotHonoured"]
    assert (condition.status, condition.reason) == ("True", "NotHonouredYet")
    assert "spec.networkTopology is not honoured yet" in condition.message
    assert "any nodes that fit" in condition.message


def test_sub_group_policy_gets_a_condition_saying_the_whole_group_is_one_gang() -> None:
    found = conditions_of({"minMember": 2, "subGroupPolicy": [{"name": "a", "subGroupSize": 1}]})
    assert "spec.subGroupPolicy is not honoured yet" in found["FieldsNotHonoured"].message
    assert "one gang" in found["FieldsNotHonoured"].message


def test_plain_podgroup_has_no_such_condition() -> None:
    assert "FieldsNotHonoured" not in conditions_of({"minMember": 2})


def queue_warnings(spec: dict[str, Any]) -> dict[str, str]:
    """The not-honoured warnings a session reports for a Queue with this spec, by field."""
    decoded = wire.from_dict({"metadata": {"name": "team", "uid": "q1"}, "spec": spec}, wire.Queue)
    snap = build_snapshot(queues=[decoded])
    reports = [r for r in schedule(snap).invalid if (r.kind, r.name) == ("Queue", "team")]
    assert all(r.reason == "NotHonouredYet" for r in reports)
    return {r.message.split(" ", 1)[0]: r.message for r in reports}


def test_fifo_dequeue_strategy_is_named_as_not_honoured_and_traverse_is_said() -> None:
    warned = queue_warnings({"dequeueStrategy": "fifo"})
    assert list(warned) == ["spec.dequeueStrategy"]
    assert "always dequeues as 'traverse'" in warned["spec.dequeueStrategy"]


def test_traverse_dequeue_strategy_is_what_muster_does_and_gets_no_warning() -> None:
    assert queue_warnings({"dequeueStrategy": "traverse"}) == {}


def test_queue_affinity_extend_clusters_and_type_each_get_a_warning_naming_the_field() -> None:
    warned = queue_warnings(
        {
            "affinity": {
                "nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["g1"]}
            },
            "extendClusters": [{"name": "east", "weight": 1}],
            "type": "batch",
        }
    )
    assert set(warned) == {"spec.affinity", "spec.extendClusters", "spec.type"}
    assert "node groups" in warned["spec.affinity"]
    assert "this cluster only" in warned["spec.extendClusters"]
    assert "every queue the same way" in warned["spec.type"]


def test_plain_queue_gets_no_not_honoured_warning() -> None:
    assert queue_warnings({"weight": 2, "capability": {"cpu": "4"}}) == {}
