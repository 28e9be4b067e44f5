"""The API server's Priority admission rule on pod create: fill spec.priority (and
preemptionPolicy) from the pod's PriorityClass, or refuse the pod.

Pure: the caller says how PriorityClasses are found. muster sim applies it to every pod it
creates (turning a refusal into its 403), and `muster whatif` to the pods of its file, so
both give a pod the priority a real cluster would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
# What a pod gets when it names no class and no class is the global default (as the real
# admission does).
PRIORITY_WITHOUT_DEFAULT_CLASS = 0


class PriorityRefused(Exception):
    """The admission refuses the pod; `message` is the API server's reason, in its words."""

    def __init__(self, pod_name: str, message: str) -> None:
        super().__init__(message)
        self.pod_name = pod_name
        self.message = message


def admit_priority(
    pod: Obj, find_class: Callable[[str], Obj | None], default_class: Callable[[], Obj | None]
) -> None:
    """Fill the pod's spec.priority and spec.preemptionPolicy from its PriorityClass (the
    one it names, else the global default), in place; raise PriorityRefused when it names
    a class that does not exist or sets a priority other than its class's value.

    `find_class(name)` and `default_class()` return PriorityClass objects as the API
    serves them (metadata.name, value, preemptionPolicy), or None."""
    spec = pod.setdefault("spec", {})
    name = str(pod["metadata"].get("name") or pod["metadata"].get("generateName", ""))
    class_name = spec.get("priorityClassName")
    if class_name:
        pc = find_class(str(class_name))
        if pc is None:
            raise PriorityRefused(name, f"no PriorityClass with name {class_name} was found")
    else:
        pc = default_class()
        if pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
    value = int(pc.get("value", 0)) if pc is not None else PRIORITY_WITHOUT_DEFAULT_CLASS
    if "priority" in spec and spec["priority"] is not None and spec["priority"] != value:
        raise PriorityRefused(
            name,
            f"the integer value of priority ({spec['priority']}) must not be provided in pod "
            f"spec; priority admission controller computed {value} from the given "
            "PriorityClass name",
        )
    spec["priority"] = value
    policy = (pc or {}).get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY
    spec.setdefault("preemptionPolicy", policy)
