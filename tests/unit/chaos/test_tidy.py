"""The soak's tidying: which gangs count as running, waiting or finished, and what a given-up
gang was waiting for."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from chaos.workload import FINISHED, RUNNING, WAITING, gang_state, wait_reason


def pod(node: str | None = None, phase: str = "Pending") -> dict[str, Any]:
    return {"spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("pods", "state"),
    [
        pytest.param([pod("n0", "Running"), pod()], RUNNING, id="one-member-runs"),
        pytest.param([pod("n0", "Pending"), pod()], RUNNING, id="bound-not-yet-started"),
        pytest.param([pod(), pod()], WAITING, id="none-placed"),
        pytest.param([pod("n0", "Succeeded"), pod()], WAITING, id="done-and-one-waiting"),
        pytest.param([pod("n0", "Succeeded"), pod("n1", "Failed")], FINISHED, id="all-done"),
        pytest.param([], WAITING, id="podgroup-without-pods"),
    ],
)
def test_a_gang_is_running_while_a_member_holds_a_node_else_waiting_until_all_are_done(
    pods: list[dict[str, Any]], state: str
) -> None:
    assert gang_state(pods) == state


def test_a_given_up_gang_is_counted_by_its_unschedulable_reason_else_its_phase() -> None:
    waiting = {
        "status": {
            "phase": "Inqueue",
            "conditions": [
                {"type": "Scheduled", "status": "False", "reason": "x"},
                {"type": "Unschedulable", "status": "True", "reason": "NotEnoughTasks"},
            ],
        }
    }
    assert wait_reason(waiting) == "NotEnoughTasks"
    assert wait_reason({"status": {"phase": "Inqueue"}}) == "phase Inqueue"
    assert wait_reason({}) == "phase unset"
    assert wait_reason(None) == "phase unset"
