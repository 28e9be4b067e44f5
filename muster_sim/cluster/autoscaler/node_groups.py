"""The stand-in autoscaler's node groups: each a node template (capacity, labels, taints)
with a minimum and a maximum size, from a YAML file (`muster sim --autoscaler-node-groups`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from muster_sim.cluster.nodes import NodePool, PoolError, dra_models, node_object

Obj = dict[str, Any]

GROUP_LABEL = "sim.muster.dev/node-group"
_TEMPLATE_FIELDS = ("cpu", "memory", "gpus", "pods", "labels", "taints", "draGpus", "draModels")


class NodeGroupError(ValueError):
    """A node-group file that cannot be used; the message names the group and the field."""


@dataclass(frozen=True)
class NodeGroup:
    """Nodes made from one template, between `min_size` and `max_size` of them."""

    name: str
    min_size: int
    max_size: int
    template: NodePool

    def node(self, index: int, serial: int) -> Obj:
        """The group's node number `index` (`serial` numbers its address)."""
        obj = node_object(self.template, f"{self.name}-{index:04d}", serial)
        obj["metadata"]["labels"][GROUP_LABEL] = self.name
        return obj


def load_node_groups(path: str | Path) -> list[NodeGroup]:
    """Node groups from YAML: a list, or a mapping with a `nodeGroups` list; each
    `{name, minSize, maxSize, template: {cpu, memory, gpus, pods, labels, taints, draGpus,
    draModels}}`."""
    data = yaml.safe_load(Path(path).read_text())
    if isinstance(data, dict):
        data = data.get("nodeGroups")
    if not isinstance(data, list) or not data:
        raise NodeGroupError(f"{path}: expected a list of node groups (or `nodeGroups: [...]`)")
    groups: list[NodeGroup] = []
    for index, raw in enumerate(data):
        if not isinstance(raw, dict) or not raw.get("name"):
            raise NodeGroupError(f"{path}: node group #{index} needs a name")
        name = str(raw["name"])
        unknown = sorted(set(raw) - {"name", "minSize", "maxSize", "template"})
        if unknown:
            raise NodeGroupError(
                f"{path}: node group {name!r}: {unknown[0]} is not a field (name, minSize, "
                "maxSize, template)"
            )
        template = raw.get("template") or {}
        if not isinstance(template, dict):
            raise NodeGroupError(f"{path}: node group {name!r}: template must be a mapping")
        unknown = sorted(set(template) - set(_TEMPLATE_FIELDS))
        if unknown:
            raise NodeGroupError(
                f"{path}: node group {name!r}: template.{unknown[0]} is not a field "
                f"({', '.join(_TEMPLATE_FIELDS)})"
            )
        try:
            minimum, maximum = int(raw.get("minSize", 0)), int(raw["maxSize"])
            pool = NodePool(
                name=name,
                count=0,
                cpu=str(template.get("cpu", "32")),
                memory=str(template.get("memory", "128Gi")),
                gpus=int(template.get("gpus", 0)),
                pods=int(template.get("pods", 110)),
                labels={str(k): str(v) for k, v in (template.get("labels") or {}).items()},
                taints=tuple(dict(t) for t in template.get("taints") or []),
                dra_gpus=int(template.get("draGpus", 0)),
                dra_models=dra_models(template.get("draModels")),
            )
        except KeyError:
            raise NodeGroupError(f"{path}: node group {name!r} needs maxSize") from None
        except (TypeError, ValueError, PoolError) as error:
            raise NodeGroupError(f"{path}: node group {name!r}: {error}") from None
        if not 0 <= minimum <= maximum:
            raise NodeGroupError(
                f"{path}: node group {name!r}: minSize {minimum} and maxSize {maximum} must "
                "satisfy 0 <= minSize <= maxSize"
            )
        groups.append(NodeGroup(name, minimum, maximum, pool))
    names = [g.name for g in groups]
    if len(set(names)) != len(names):
        raise NodeGroupError(f"{path}: node group names repeat: {names}")
    return groups
