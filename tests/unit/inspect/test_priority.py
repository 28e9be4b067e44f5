"""The Priority admission rule whatif and muster sim share: one rule, one refusal."""

from __future__ import annotations

from typing import Any

import pytest

from muster_sim.apiserver import admission_plugins
from muster_sim.errors import ApiError
from scheduler.api.priority import PriorityRefused, admit_priority

CLASSES = {
    "high": {"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"},
    "base": {"metadata": {"name": "base"}, "value": 5, "globalDefault": True},
}


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": dict(spec)}


def test_a_pod_gets_the_value_and_preemption_policy_of_the_class_it_names() -> None:
    obj = pod(priorityClassName="high")

    admit_priority(obj, CLASSES.get, lambda: None)

    assert obj["spec"]["priority"] == 1000
    assert obj["spec"]["preemptionPolicy"] == "Never"


def test_a_pod_naming_no_class_gets_the_global_default_else_zero() -> None:
    defaulted, bare = pod(), pod()

    admit_priority(defaulted, CLASSES.get, lambda: CLASSES["base"])
    admit_priority(bare, CLASSES.get, lambda: None)

    assert (defaulted["spec"]["priorityClassName"], defaulted["spec"]["priority"]) == ("base", 5)
    assert defaulted["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert bare["spec"]["priority"] == 0
    assert "priorityClassName" not in bare["spec"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"priorityClassName": "missing"}, "no PriorityClass with name missing was found"),
        (
            {"priorityClassName": "high", "priority": 7},
            "the integer value of priority (7) must not be provided in pod spec; priority "
            "admission controller computed 1000 from the given PriorityClass name",
        ),
    ],
)
def test_the_refusal_is_the_same_words_here_and_as_sims_403(
    spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(PriorityRefused) as refused:
        admit_priority(pod(**spec), CLASSES.get, lambda: None)
    with pytest.raises(ApiError) as forbidden:
        admission_plugins.admit_priority(pod(**spec), CLASSES.get, lambda: None)

    assert (refused.value.pod_name, refused.value.message) == ("p", message)
    assert forbidden.value.code == 403
    assert forbidden.value.message == f'pods "p" is forbidden: {message}'
