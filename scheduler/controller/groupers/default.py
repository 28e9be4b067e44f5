"""Every other owner (ReplicaSet, StatefulSet, DaemonSet, a kind with no rule) and bare pods.

These kinds have no gang in their spec: a Deployment's or StatefulSet's replicas start one
by one. Each controlling owner is one group of minMember 1, unless an annotation says
otherwise (as Volcano's controller does); a pod no one controls is a group of its own.
"""

from __future__ import annotations

from scheduler.controller.groupers.base import Grouping, Obj, Probe, Role, describe


class DefaultGrouper:
    """One group per controlling owner (or bare pod), minMember 1."""

    api_group = ""
    kind = ""

    def key_of(self, owner: Obj, pod: Obj) -> str:
        """The owner's one group."""
        return ""

    def keys(self, owner: Obj) -> tuple[str, ...]:
        """None: nothing in the spec changes the group."""
        return ()

    def probes(self, owner: Obj) -> tuple[Probe, ...]:
        """No probes."""
        return ()

    def grouping(
        self, owner: Obj, key: str, pod: Obj | None, present: frozenset[Probe]
    ) -> Grouping:
        """minMember 1."""
        kind, name = describe(owner)
        if kind == "Pod" and pod is not None and owner is pod:
            rule = f"pod {name} has no controlling owner: a group of its own, minMember 1"
        else:
            rule = f"{kind} {name}: no gang rule for {kind}, its pods start one by one: minMember 1"
        return Grouping(1, (Role("pods", 1, None),), rule)
