"""cdp: Volcano's cooldown protection plugin (`volcano.sh/cooldown-time` on pods).

muster always honours a pod's `volcano.sh/cooldown-time` label or annotation: a pod
that started less than that ago is not a victim of preempt or reclaim
(actions/protection.py), whatever the config lists. The plugin is accepted so that
Volcano configs load; it changes nothing.
"""

from __future__ import annotations

from scheduler.framework.arguments import NoArguments
from scheduler.framework.plugin import Plugin


class CdpPlugin(Plugin[NoArguments]):
    """Accepted for Volcano compatibility; cooldowns are always honoured."""

    name = "cdp"
