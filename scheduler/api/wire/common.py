"""What every kind's wire structs share: the base struct (camelCase names, defaults
omitted), metadata, status conditions, resource lists, and the node and label selectors that
pods, volumes and budgets all use."""

from __future__ import annotations

import msgspec

Quantity = str | int | float
ResourceList = dict[str, Quantity]
# The value of a field read only for its presence, when it is absent (an empty Raw is
# falsy; msgspec skips a Raw field's JSON without parsing it).
ABSENT = msgspec.Raw()


class Wire(msgspec.Struct, rename="camel", omit_defaults=True):
    """Base of every wire struct."""


class OwnerReference(Wire):
    """metadata.ownerReferences[]."""

    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False


class ObjectMeta(Wire):
    """metadata."""

    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    owner_references: list[OwnerReference] = msgspec.field(default_factory=list)


class Condition(Wire):
    """A status condition (pods, nodes, PodGroups)."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class NodeSelectorRequirement(Wire):
    """A matchExpressions or matchFields entry."""

    key: str = ""
    operator: str = ""
    values: list[str] = msgspec.field(default_factory=list)


class NodeSelectorTerm(Wire):
    """nodeSelectorTerms[]."""

    match_expressions: list[NodeSelectorRequirement] = msgspec.field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = msgspec.field(default_factory=list)


class NodeSelector(Wire):
    """requiredDuringSchedulingIgnoredDuringExecution."""

    node_selector_terms: list[NodeSelectorTerm] = msgspec.field(default_factory=list)


class LabelSelectorRequirement(Wire):
    """A labelSelector.matchExpressions entry."""

    key: str = ""
    operator: str = ""
    values: list[str] = msgspec.field(default_factory=list)


class LabelSelector(Wire):
    """A metav1.LabelSelector (pod affinity terms, topology spread constraints)."""

    match_labels: dict[str, str] = msgspec.field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = msgspec.field(default_factory=list)
