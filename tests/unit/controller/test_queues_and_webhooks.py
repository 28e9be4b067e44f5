"""Queue state transitions and the admission rules, on plain documents."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.controller.queues import PodGroupView, QueueView, State, state_change
from scheduler.controller.webhooks import (
    Refusal,
    default_podgroup_queue,
    validate_pod,
    validate_podgroup,
    validate_queue,
    validate_queue_deletion,
)


def queue(name: str, state: str = "Open", requested: str = "", parent: str = "") -> QueueView:
    return QueueView(name, state, requested, parent)


def group(phase: str, queue_name: str = "team") -> PodGroupView:
    return PodGroupView("ns", f"pg-{phase}", queue_name, phase)


QUEUES = {
    "default": queue("default"),
    "team": queue("team"),
    "shut": queue("shut", "Closed", "Closed"),
    "leaving": queue("leaving", "Closing", "Closed"),
}


def podgroup(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "pg", "namespace": "ns"}, "spec": spec}


def queue_doc(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"weight": 1, **spec}}


# queue state


def test_a_queue_without_state_is_made_open() -> None:
    assert state_change(queue("q", ""), []) is State.OPEN


def test_closing_waits_for_admitted_podgroups_then_closes() -> None:
    asked = queue("team", "Open", "Closed")
    assert state_change(asked, [group("Running"), group("Pending")]) is State.CLOSING
    assert state_change(asked, [group("Inqueue")]) is State.CLOSING
    assert state_change(asked, [group("Pending"), group("Completed")]) is State.CLOSED
    assert state_change(queue("team", "Closed", "Closed"), []) is None


def test_reopening_is_immediate() -> None:
    assert state_change(queue("team", "Closing", "Open"), [group("Running")]) is State.OPEN
    assert state_change(queue("team", "Closed", ""), []) is State.OPEN


# PodGroup admission


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"minMember": -1}, "spec.minMember=-1"),
        ({"minMember": 1, "minResources": {"cpu": "1.2.3"}}, "spec.minResources.cpu='1.2.3'"),
        ({"minMember": 1, "minResources": {"memory": "-1Gi"}}, "must be 0 or more"),
        ({"minMember": 2, "minTaskMember": {"a": 2, "b": 1}}, "raise minMember to 3"),
        ({"minMember": 2, "minTaskMember": {"a": -1}}, "spec.minTaskMember[a]=-1"),
        ({"minMember": 1, "queue": "nowhere"}, "queue 'nowhere' does not exist"),
        ({"minMember": 1, "queue": "shut"}, "is Closed; open it (muster queue open shut)"),
        ({"minMember": 1, "queue": "leaving"}, "is Closing"),
        (
            {"minMember": 1, "networkTopology": {"highestTierAllowed": 1, "highestTierName": "r"}},
            "spec.networkTopology.highestTierName='r': cannot be set with highestTierAllowed",
        ),
        (
            {
                "minMember": 1,
                "subGroupPolicy": [
                    {
                        "name": "w",
                        "networkTopology": {"highestTierAllowed": 1, "highestTierName": "r"},
                    }
                ],
            },
            "spec.subGroupPolicy[0].networkTopology.highestTierName='r': cannot be set",
        ),
        (
            {"minMember": 1, "subGroupPolicy": [{"name": "w", "subGroupSize": 0}]},
            "spec.subGroupPolicy[0].subGroupSize=0: must be 1 or more",
        ),
    ],
)
def test_a_bad_podgroup_is_refused_with_what_to_fix(spec: dict[str, Any], expected: str) -> None:
    with pytest.raises(Refusal) as caught:
        validate_podgroup(podgroup(**spec), None, QUEUES)
    assert expected in str(caught.value)
    assert str(caught.value).startswith("PodGroup ns/pg: ")


def test_a_podgroup_with_no_queue_goes_to_the_default_queue() -> None:
    validate_podgroup(podgroup(minMember=3, minResources={"cpu": "3"}), None, QUEUES)
    with pytest.raises(Refusal, match="queue 'default' does not exist"):
        validate_podgroup(podgroup(minMember=1), None, {})


def test_kuberay_may_scale_and_finish_a_gang_in_a_closing_queue() -> None:
    old = podgroup(minMember=3, queue="leaving", minTaskMember={"head": 1, "worker": 2})
    validate_podgroup(podgroup(minMember=5, queue="leaving"), old, QUEUES)
    finished = podgroup(minMember=0, queue="leaving", minResources={}, minTaskMember={"w": 2})
    validate_podgroup(finished, old, QUEUES)
    with pytest.raises(Refusal, match="is Closed"):
        validate_podgroup(podgroup(minMember=1, queue="shut"), old, QUEUES)


@pytest.mark.parametrize(
    ("spec_queue", "namespace_queue", "expected"),
    [
        pytest.param(None, "ml", "ml", id="no-queue-takes-the-namespace-queue"),
        # the CRD has already defaulted spec.queue when mutating admission runs
        pytest.param("default", "ml", "ml", id="crd-defaulted-queue-counts-as-unset"),
        pytest.param("mine", "ml", None, id="a-named-queue-is-kept"),
        pytest.param(None, "", None, id="no-namespace-queue-leaves-it-alone"),
        pytest.param("default", "", None, id="default-without-namespace-queue-stays"),
    ],
)
def test_the_namespace_queue_fills_an_empty_or_defaulted_queue(
    spec_queue: str | None, namespace_queue: str, expected: str | None
) -> None:
    doc = podgroup(minMember=1) if spec_queue is None else podgroup(minMember=1, queue=spec_queue)
    assert default_podgroup_queue(doc, namespace_queue, "default") == expected


# Queue admission


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (queue_doc("q", weight=0), "spec.weight=0: must be 1 or more"),
        (
            queue_doc("q", capability={"cpu": "2"}, guarantee={"resource": {"cpu": "4"}}),
            "lower the guarantee or raise the capability",
        ),
        (queue_doc("q", capability={"cpu": "x"}), "spec.capability.cpu='x'"),
        (queue_doc("q", parent="ghost"), "queue 'ghost' does not exist"),
        (queue_doc("q", parent="q"), "cannot be its own parent"),
        (queue_doc("a", parent="b"), "makes a cycle"),
    ],
)
def test_a_bad_queue_is_refused_with_what_to_fix(doc: dict[str, Any], expected: str) -> None:
    tree = {"a": queue("a"), "b": queue("b", parent="a")}
    with pytest.raises(Refusal) as caught:
        validate_queue(doc, tree)
    assert expected in str(caught.value)


def test_a_bad_state_request_is_refused() -> None:
    doc = queue_doc("q")
    doc["metadata"]["annotations"] = {"muster.dev/queue-state": "Paused"}
    with pytest.raises(Refusal, match="must be Open or Closed"):
        validate_queue(doc, {})


def test_a_queue_under_root_or_an_existing_parent_is_admitted() -> None:
    validate_queue(queue_doc("q", parent="root"), {})
    validate_queue(queue_doc("q", parent="a", capability={"cpu": "4"}), {"a": queue("a")})


def test_default_and_root_cannot_be_deleted_while_in_use() -> None:
    with pytest.raises(Refusal, match="in use by PodGroup ns/pg-Running"):
        validate_queue_deletion("default", [group("Running", "default")], QUEUES)
    with pytest.raises(Refusal, match="root queue is the parent of a"):
        validate_queue_deletion("root", [], {"a": queue("a", parent="root")})
    validate_queue_deletion("default", [], QUEUES)
    validate_queue_deletion("team", [group("Running")], QUEUES)


# pod admission


def test_a_pod_of_ours_must_name_an_open_queue() -> None:
    def pod(queue_name: str, scheduler: str = "muster") -> dict[str, Any]:
        return {
            "metadata": {
                "name": "p",
                "namespace": "ns",
                "annotations": {"scheduling.volcano.sh/queue-name": queue_name},
            },
            "spec": {"schedulerName": scheduler},
        }

    names = frozenset({"muster"})
    with pytest.raises(Refusal, match="queue 'shut' is Closed"):
        validate_pod(pod("shut"), QUEUES, names)
    with pytest.raises(Refusal, match="does not exist"):
        validate_pod(pod("gone"), QUEUES, names)
    validate_pod(pod("team"), QUEUES, names)
    validate_pod(pod("gone", "default-scheduler"), QUEUES, names)
