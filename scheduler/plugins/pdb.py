"""pdb: Volcano's plugin that keeps preempt and reclaim within PodDisruptionBudgets.

muster always does: it evicts through the Eviction API, and plans victims against each
budget's `status.disruptionsAllowed` (actions/protection.py), whatever the config lists.
The plugin is accepted so that Volcano configs load; it changes nothing.
"""

from __future__ import annotations

from scheduler.framework.arguments import NoArguments
from scheduler.framework.plugin import Plugin


class PdbPlugin(Plugin[NoArguments]):
    """Accepted for Volcano compatibility; budgets are always honoured."""

    name = "pdb"
