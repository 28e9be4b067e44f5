"""What a grouper decides, and the typed reads of workload fields every grouper shares.

A grouper reads one workload kind's spec and says, for the pods of one of its objects, which
group a pod joins (its key), how many members must start together (minMember), which pods
those are (roles with their pod templates, which minResources is summed from), the
sub-groups Volcano's `spec.subGroupPolicy` describes, and the rule it applied, in words a
user can check against the object (kind, field, value).

Groupers are pure: no I/O, no clock. What a rule needs to know beyond the owner and the pod
(whether an MPIJob's launcher exists) it names as probes; the caller reads them and passes
the ones present.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from scheduler.api.errors import InvalidObject

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Probe:
    """An object whose existence a rule depends on: apiVersion, kind, namespace, name."""

    api_version: str
    kind: str
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class Role:
    """Members of one kind in a group: how many count, and the template their request is
    read from (None: the pod being grouped stands for them)."""

    name: str
    count: int
    template: Obj | None = None


@dataclass(frozen=True, slots=True)
class SubGroup:
    """One entry of the PodGroup's `spec.subGroupPolicy` (Volcano 1.15): the pods the label
    selector picks, split by `match_label_keys`, in sub-groups of `size`, of which
    `min_groups` must be placeable."""

    name: str
    size: int
    min_groups: int
    match_labels: Mapping[str, str]
    not_in: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    match_label_keys: tuple[str, ...] = ()

    def manifest(self) -> Obj:
        """The subGroupPolicy entry as the PodGroup's CRD stores it."""
        selector: Obj = {"matchLabels": dict(self.match_labels)}
        if self.not_in:
            selector["matchExpressions"] = [
                {"key": key, "operator": "NotIn", "values": list(values)}
                for key, values in self.not_in.items()
            ]
        entry: Obj = {
            "name": self.name,
            "subGroupSize": self.size,
            "minSubGroups": self.min_groups,
            "labelSelector": selector,
        }
        if self.match_label_keys:
            entry["matchLabelKeys"] = list(self.match_label_keys)
        return entry


@dataclass(frozen=True, slots=True)
class Grouping:
    """A grouper's answer for one group of one owner."""

    min_member: int
    roles: tuple[Role, ...]
    rule: str
    sub_groups: tuple[SubGroup, ...] = ()


class Grouper(Protocol):
    """The gang rule of one workload kind, read from its spec."""

    @property
    def api_group(self) -> str:
        """The API group of the kind the rule is for."""

    @property
    def kind(self) -> str:
        """The kind the rule is for."""

    def key_of(self, owner: Obj, pod: Obj) -> str:
        """Which of the owner's groups the pod joins ("" when the owner has one)."""

    def keys(self, owner: Obj) -> tuple[str, ...]:
        """Every group the owner's spec implies, for following scale changes (empty: the
        rule depends on pods, so groups are updated only when a pod is grouped)."""

    def probes(self, owner: Obj) -> tuple[Probe, ...]:
        """Objects whose existence the rule reads."""

    def grouping(
        self, owner: Obj, key: str, pod: Obj | None, present: frozenset[Probe]
    ) -> Grouping:
        """The group `key` of `owner`; `pod` is the pod being grouped (None when the owner
        changed), `present` the probes that exist. Raises InvalidObject on a field the rule
        cannot read."""


class GrouperBase:
    """Defaults for the optional parts of a grouper: one group per owner, no probes."""

    def key_of(self, owner: Obj, pod: Obj) -> str:
        """The owner's one group."""
        return ""

    def keys(self, owner: Obj) -> tuple[str, ...]:
        """The owner's one group."""
        return ("",)

    def probes(self, owner: Obj) -> tuple[Probe, ...]:
        """No probes."""
        return ()


def describe(obj: Obj) -> tuple[str, str]:
    """(kind, namespace/name) of an object, as error messages name it."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    name = str(meta.get("name", ""))
    return str(obj.get("kind", "object")), f"{namespace}/{name}" if namespace else name


def nested(obj: Obj, path: Sequence[str | int]) -> Any:
    """The value at a path of keys (and list indexes), None when any part is missing."""
    value: Any = obj
    for key in path:
        if isinstance(key, int):
            if not isinstance(value, list) or key >= len(value):
                return None
            value = value[key]
        elif isinstance(value, dict):
            value = value.get(key)
        else:
            return None
    return value


def field_path(path: Sequence[str | int]) -> str:
    """A path as messages write it: spec.replicatedJobs[0].replicas."""
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text


def count_field(obj: Obj, path: Sequence[str | int], default: int) -> int:
    """A non-negative whole number at `path` of `obj`, or `default` when absent; raises
    InvalidObject naming the object, the field and the value when it is anything else."""
    value = nested(obj, path)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        kind, name = describe(obj)
        raise InvalidObject(kind, name, field_path(path), value, "must be a whole number >= 0")
    return int(value)


def label(pod: Obj, key: str) -> str | None:
    """A label of the pod, None when it has none of that key."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    value = labels.get(key)
    return None if value is None else str(value)


def required_label(pod: Obj, key: str, why: str) -> str:
    """A label the rule needs on the pod; raises InvalidObject naming it when absent."""
    value = label(pod, key)
    if value is None or value == "":
        kind, name = describe(pod)
        raise InvalidObject(kind or "Pod", name, f"metadata.labels[{key}]", value, why)
    return value


def pod_template(value: Any) -> Obj | None:
    """A pod template (metadata and spec) when `value` is one, else None."""
    return value if isinstance(value, dict) and isinstance(value.get("spec"), dict) else None
