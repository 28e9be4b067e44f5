"""CRD x-kubernetes-validations as kube-apiserver evaluates them (the pure evaluator)."""

from __future__ import annotations

from typing import Any

import pytest

from muster_sim.validation.cel_rules import rule_errors

ONE_OF = {"rule": "has(self.a) != has(self.b)", "message": "exactly one of a and b"}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {"type": "object", "x-kubernetes-validations": [ONE_OF]},
                },
                "size": {
                    "type": "integer",
                    "x-kubernetes-validations": [
                        {"rule": "self >= oldSelf", "message": "may only grow"}
                    ],
                },
            },
        }
    },
}


@pytest.mark.parametrize(
    ("value", "old", "expected"),
    [
        pytest.param({"spec": {"items": [{"a": 1}]}}, None, [], id="rule-holds"),
        pytest.param(
            {"spec": {"items": [{"a": 1}, {}]}},
            None,
            [("spec.items[1]", 'Invalid value: "object": exactly one of a and b')],
            id="failing-element-named-by-index",
        ),
        pytest.param({"spec": {"size": 1}}, None, [], id="transition-rule-skipped-on-create"),
        pytest.param(
            {"spec": {"size": 1}},
            {"spec": {"size": 2}},
            [("spec.size", 'Invalid value: "integer": may only grow')],
            id="transition-rule-on-update",
        ),
        pytest.param({"spec": {"size": 3}}, {"spec": {"size": 2}}, [], id="transition-holds"),
    ],
)
def test_rules(value: Any, old: Any, expected: list[tuple[str, str]]) -> None:
    assert [(e.field, e.message) for e in rule_errors(SCHEMA, value, old)] == expected
