"""Actions: what happens in each scheduling cycle, in the order the config lists them."""

from __future__ import annotations

from typing import Any

from scheduler.actions.allocate import Allocate
from scheduler.actions.backfill import Backfill
from scheduler.actions.enqueue import Enqueue
from scheduler.actions.gangpreempt import GangPreempt
from scheduler.actions.gangreclaim import GangReclaim
from scheduler.actions.preempt import Preempt
from scheduler.actions.reclaim import Reclaim
from scheduler.framework.action import Action

ACTIONS: dict[str, type[Action[Any]]] = {
    action.name: action
    for action in (Enqueue, Allocate, Preempt, Reclaim, GangPreempt, GangReclaim, Backfill)
}

__all__ = ["ACTIONS"]
