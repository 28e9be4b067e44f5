"""spec.subGroupPolicy: which subgroup a pod is in, when subgroups and policies count, and
how a policy that cannot be used is named on the PodGroup."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.job import JobInfo
from scheduler.api.subgroups import (
    policies_satisfied,
    read_policies,
    split,
    subgroup_key,
    summary,
)
from scheduler.api.task import READY_STATUSES, TaskInfo, TaskStatus, task_name
from tests.unit.builders import task

GROUP = "ray.io/group"
REPLICA = "ray.io/worker-group-replica-name"


def policy(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def pod(name: str, **labels: str) -> TaskInfo:
    return task(name, labels=dict(labels))


def test_the_first_policy_that_matches_a_pod_takes_it() -> None:
    policies = read_policies(
        "ns/pg",
        [
            policy("gpu", labelSelector={"matchLabels": {GROUP: "gpu"}}, matchLabelKeys=[REPLICA]),
            policy("any", matchLabelKeys=[REPLICA]),
        ],
    )
    assert subgroup_key(policies, {GROUP: "gpu", REPLICA: "r0"}) == (0, ("r0",))
    assert subgroup_key(policies, {GROUP: "cpu", REPLICA: "r0"}) == (1, ("r0",))


@pytest.mark.parametrize(
    "labels",
    [
        pytest.param({GROUP: "gpu"}, id="key-missing"),
        pytest.param({GROUP: "gpu", REPLICA: ""}, id="value-empty"),
        pytest.param({GROUP: "cpu", REPLICA: "r0"}, id="selector-mismatch"),
    ],
)
def test_a_pod_no_policy_matches_stays_in_the_default_group(labels: dict[str, str]) -> None:
    policies = read_policies(
        "ns/pg",
        [policy("gpu", labelSelector={"matchLabels": {GROUP: "gpu"}}, matchLabelKeys=[REPLICA])],
    )
    assert subgroup_key(policies, labels) is None


def test_a_policy_without_match_label_keys_makes_one_subgroup_of_its_pods() -> None:
    policies = read_policies("ns/pg", [policy("all", labelSelector={"matchLabels": {GROUP: "a"}})])
    groups, default = split(policies, [pod("p1", **{GROUP: "a"}), pod("p2", **{GROUP: "a"})])
    assert [(g.name, len(g.members)) for g in groups] == [("all", 2)]
    assert default == []


def test_subgroups_are_in_policy_order_and_their_values_in_natural_order() -> None:
    policies = read_policies("ns/pg", [policy("w", matchLabelKeys=[REPLICA])])
    tasks = [pod(f"p{i}", **{REPLICA: f"r{i}"}) for i in (10, 2, 1)]
    groups, _ = split(policies, tasks)
    assert [g.name for g in groups] == ["w[r1]", "w[r2]", "w[r10]"]


def test_a_policy_counts_its_whole_subgroups_against_min_subgroups() -> None:
    policies = read_policies(
        "ns/pg", [policy("w", subGroupSize=2, minSubGroups=2, matchLabelKeys=[REPLICA])]
    )
    tasks = [pod(f"{r}-{h}", **{REPLICA: r}) for r in ("a", "b") for h in range(2)]
    for member in tasks[:3]:
        member.status = TaskStatus.RUNNING
    # a is whole, b has one of its two: one whole subgroup of the two needed
    assert not policies_satisfied(policies, tasks, READY_STATUSES)
    tasks[3].status = TaskStatus.RUNNING
    assert policies_satisfied(policies, tasks, READY_STATUSES)
    assert "2 of 2 subgroups of 2 pods placed (minSubGroups 2): w[a], w[b]" in summary(
        policies, tasks, READY_STATUSES
    )


def test_defaults_are_a_size_of_one_and_no_minimum() -> None:
    (only,) = read_policies("ns/pg", [{}])
    assert (only.size, only.min_subgroups, only.label) == (1, 0, "subGroupPolicy[0]")


@pytest.mark.parametrize(
    ("raw", "field", "said"),
    [
        pytest.param({"a": 1}, "spec.subGroupPolicy", "must be a list", id="not-a-list"),
        pytest.param([7], "spec.subGroupPolicy[0]", "must be an object", id="entry"),
        pytest.param(
            [policy("w", subGroupSize=0)],
            "spec.subGroupPolicy[0].subGroupSize",
            "must be 1 or more",
            id="size-zero",
        ),
        pytest.param(
            [policy("w", subGroupSize=True)],
            "spec.subGroupPolicy[0].subGroupSize",
            "must be an integer",
            id="size-bool",
        ),
        pytest.param(
            [policy("w", minSubGroups=-1)],
            "spec.subGroupPolicy[0].minSubGroups",
            "must be 0 or more",
            id="min-negative",
        ),
        pytest.param(
            [policy("w", minSubGroups=2**31)],
            "spec.subGroupPolicy[0].minSubGroups",
            "must be at most 2147483647",
            id="min-int32",
        ),
        pytest.param(
            [policy("w"), policy("w")],
            "spec.subGroupPolicy[1].name",
            "is also the name of spec.subGroupPolicy[0]",
            id="duplicate-name",
        ),
        pytest.param(
            [policy("w", matchLabelKeys=[""])],
            "spec.subGroupPolicy[0].matchLabelKeys[0]",
            "must be a label key",
            id="empty-key",
        ),
        pytest.param(
            [policy("w", labelSelector={"matchExpressions": [{"key": "k", "operator": "Is"}]})],
            "spec.subGroupPolicy[0].labelSelector.matchExpressions[0].operator",
            "must be In, NotIn, Exists or DoesNotExist",
            id="operator",
        ),
        pytest.param(
            [policy("w", labelSelector={"matchExpressions": [{"key": "k", "operator": "In"}]})],
            "spec.subGroupPolicy[0].labelSelector.matchExpressions[0].values",
            "operator In needs one or more values",
            id="in-without-values",
        ),
        pytest.param(
            [policy("w", networkTopology={"highestTierAllowed": 1, "highestTierName": "rack"})],
            "spec.subGroupPolicy[0].networkTopology.highestTierName",
            "cannot be set with highestTierAllowed (1); set one of the two",
            id="both-tier-fields",
        ),
        pytest.param(
            [policy("w", networkTopology={"mode": "strict"})],
            "spec.subGroupPolicy[0].networkTopology.mode",
            'must be "hard" or "soft"',
            id="mode",
        ),
        pytest.param(
            [policy("w", size=2)],
            "spec.subGroupPolicy[0].size",
            "is not a field of subGroupPolicy",
            id="unknown-field",
        ),
    ],
)
def test_a_policy_that_cannot_be_used_is_refused_naming_the_field(
    raw: Any, field: str, said: str
) -> None:
    with pytest.raises(InvalidObject) as caught:
        read_policies("ns/pg", raw)
    assert caught.value.field == field
    assert said in str(caught.value)


def test_a_podgroup_with_an_unusable_policy_is_kept_invalid_with_the_fields_name() -> None:
    group = wire.from_dict(
        {
            "metadata": {"name": "pg", "namespace": "ns"},
            "spec": {"minMember": 1, "subGroupPolicy": [policy("w", subGroupSize=0)]},
        },
        wire.PodGroup,
    )
    job = JobInfo.read(group, 0, "default")
    assert job.invalid is not None
    assert "spec.subGroupPolicy[0].subGroupSize" in str(job.invalid)


def test_a_pods_task_is_its_annotation_else_its_label() -> None:
    both = wire.ObjectMeta(
        annotations={"volcano.sh/task-spec": "worker"}, labels={"volcano.sh/task-spec": "ps"}
    )
    label_only = wire.ObjectMeta(labels={"volcano.sh/task-spec": "ps"})
    assert (task_name(both), task_name(label_only), task_name(wire.ObjectMeta())) == (
        "worker",
        "ps",
        "",
    )
