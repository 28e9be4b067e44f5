"""The binpack plugin: Volcano's best-fit score, filling nodes before opening new ones.

score = binpack.weight * 100 * sum(w_r * (used_r + request_r) / allocatable_r) / sum(w_r)

over the resources the pod requests that have a weight (cpu, memory, and
those listed in `binpack.resources`); 0 when the pod does not fit the node in
one of them. Arguments keep Volcano's names:

    binpack.weight: 10
    binpack.cpu: 5
    binpack.memory: 1
    binpack.resources: nvidia.com/gpu, example.com/foo
    binpack.resources.nvidia.com/gpu: 2
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, model_validator

from scheduler.api.node import NodeInfo
from scheduler.api.task import TaskInfo
from scheduler.framework.arguments import Arguments, Names, Weight, gather_prefixed
from scheduler.framework.plugin import Plugin

MAX_NODE_SCORE = 100.0

BINPACK_WEIGHT = "binpack.weight"
BINPACK_CPU = "binpack.cpu"
BINPACK_MEMORY = "binpack.memory"
BINPACK_RESOURCES = "binpack.resources"


class BinpackArguments(Arguments):
    """binpack's arguments, in Volcano's spelling; `binpack.resources.NAME: W` weighs a
    resource listed in binpack.resources (1 when not given)."""

    weight: Weight = Field(1.0, alias="binpack.weight")
    cpu: Weight = Field(1.0, alias="binpack.cpu")
    memory: Weight = Field(1.0, alias="binpack.memory")
    resources: Names = Field(default_factory=list, alias="binpack.resources")
    resource_weights: dict[str, Weight] = Field(default_factory=dict, alias="binpack.resources.*")

    @model_validator(mode="before")
    @classmethod
    def _gather_resource_weights(cls, values: Any) -> Any:
        return gather_prefixed(values, f"{BINPACK_RESOURCES}.", "binpack.resources.*")

    @model_validator(mode="after")
    def _weights_name_listed_resources(self) -> BinpackArguments:
        unlisted = sorted(set(self.resource_weights) - set(self.resources))
        if unlisted:
            raise ValueError(
                f"weights {', '.join(f'{BINPACK_RESOURCES}.{n}' for n in unlisted)} name "
                f"resources not in {BINPACK_RESOURCES}; add them there"
            )
        return self


class BinpackPlugin(Plugin[BinpackArguments]):
    """Prefers the nodes a pod fills most, weighting each resource as configured."""

    name = "binpack"

    def __init__(self, arguments: BinpackArguments | Mapping[str, Any] | None = None) -> None:
        super().__init__(arguments)
        args = self.arguments
        self.weight = args.weight
        self.cpu_weight = args.cpu
        self.memory_weight = args.memory
        self.scalar_weights: dict[str, float] = {
            resource: args.resource_weights.get(resource, 1.0) for resource in args.resources
        }
        # As in Volcano, binpack.cpu and binpack.memory win over a listed cpu or memory.
        self.scalar_weights.pop("cpu", None)
        self.scalar_weights.pop("memory", None)

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """How full the node would be with this pod, 0..100 times binpack.weight."""
        if not self.weight:
            return 0.0
        request = task.request
        allocatable = node.allocatable
        used = node.used
        total = 0.0
        weight_sum = 0.0
        if request.cpu > 0:
            share = _share(request.cpu, used.cpu, allocatable.cpu, self.cpu_weight)
            if share is None:
                return 0.0
            total += share
            weight_sum += self.cpu_weight
        if request.memory > 0:
            share = _share(request.memory, used.memory, allocatable.memory, self.memory_weight)
            if share is None:
                return 0.0
            total += share
            weight_sum += self.memory_weight
        if request.scalars and self.scalar_weights:
            for name, value in request.scalars.items():
                weight = self.scalar_weights.get(name)
                if value <= 0 or weight is None:
                    continue
                share = _share(
                    value, used.scalars.get(name, 0), allocatable.scalars.get(name, 0), weight
                )
                if share is None:
                    return 0.0
                total += share
                weight_sum += weight
        if weight_sum <= 0:
            return 0.0
        return self.weight * MAX_NODE_SCORE * total / weight_sum


def _share(request: int, used: int, capacity: int, weight: float) -> float | None:
    """One resource's weighted fill, or None when the pod does not fit in it."""
    if weight == 0:
        # Volcano counts a zero-weight resource but scores it 0, fitting or not.
        return 0.0
    after = used + request
    if after > capacity:
        return None
    return weight * after / capacity
