"""PodGroup fields muster accepts but does not honour yet are named on the PodGroup."""

from __future__ import annotations

from typing import Any

import pytest

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


def test_sub_group_policy_is_honoured_and_gets_no_such_condition() -> None:
    found = conditions_of({"minMember": 2, "subGroupPolicy": [{"name": "a", "subGroupSize": 1}]})
    assert "FieldsNotHonoured" not in found


def test_subgroup_network_topology_without_the_plugin_is_named_as_not_honoured() -> None:
    policy = {"name": "a", "subGroupSize": 2, "networkTopology": {"highestTierAllowed": 1}}
    found = conditions_of({"minMember": 2, "subGroupPolicy": [policy]})
    message = found["FieldsNotHonoured"].message
    assert "spec.subGroupPolicy[].networkTopology is not honoured yet" in message
    assert "placed whole but on any nodes that fit" in message


def test_plain_podgroup_has_no_such_condition() -> None:
    assert "FieldsNotHonoured" not in conditions_of({"minMember": 2})


def queue_warnings(spec: dict[str, Any]) -> dict[str, str]:
    """The not-honoured warnings a session reports for a Queue with this spec, by field."""
    decoded = wire.from_dict({"metadata": {"name": "team", "uid": "q1"}, "spec": spec}, wire.Queue)
    snap = build_snapshot(queues=[decoded])
    reports = [r for r in schedule(snap).invalid if (r.kind, r.name) == ("Queue", "team")]
    assert all(r.reason == "NotHonouredYet" for r in reports)
    return {r.message.split(" ", 1)[0]: r.message for r in reports}


@pytest.mark.parametrize("strategy", ["fifo", "traverse"])
def test_both_dequeue_strategies_are_honoured_and_get_no_warning(strategy: str) -> None:
    assert queue_warnings({"dequeueStrategy": strategy}) == {}


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
