"""Multi-level gangs: a PodGroup's spec.subGroupPolicy, which subgroup each pod is in, and
when a subgroup and a policy count as placed. Each rule is defined here once; the gang
questions of api/gang_state.py, allocate and eviction ask these.

The rules (Volcano 1.15's subGroupPolicy):

- the policies are tried in order and the first that matches a pod wins; a policy matches
  a pod that passes its labelSelector (when one is set) and has a non-empty value for
  every key of its matchLabelKeys;
- the subgroup is the policy plus those values (KubeRay's `ray.io/worker-group-replica-
  name`: one subgroup per replica); pods that match no policy stay in the PodGroup's
  default group, the gang of minMember and minTaskMember;
- a subgroup is a gang of subGroupSize: it counts (is whole) once that many of its members
  are placed, and it is placed whole or not at all;
- a policy is satisfied when at least minSubGroups of its subgroups are whole;
- the PodGroup is ready when minMember, minTaskMember and every policy are satisfied.

Volcano 1.15 leaves the pods of a policy without matchLabelKeys in the default group, so
such a policy with minSubGroups above 0 never starts; muster reads the rule as written:
they form one subgroup of the policy.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from scheduler.api import wire
from scheduler.api.errors import InvalidObject
from scheduler.api.names import INT32_MAX
from scheduler.api.network_topology import NetworkTopology
from scheduler.api.selectors import LabelSelector, label_selector
from scheduler.api.task import TaskInfo, TaskStatus

SUB_GROUP_POLICY_FIELD = "spec.subGroupPolicy"
_KEYS = (
    "name",
    "subGroupSize",
    "minSubGroups",
    "labelSelector",
    "matchLabelKeys",
    "networkTopology",
)
# metav1.LabelSelectorAsSelector's operators, and whether each takes values.
_OPERATORS_WITH_VALUES = frozenset({"In", "NotIn"})
_OPERATORS_WITHOUT_VALUES = frozenset({"Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class SubGroupPolicy:
    """One spec.subGroupPolicy entry: which pods it groups, by which label values, and how
    many whole subgroups of how many pods the PodGroup needs."""

    name: str
    index: int
    size: int = 1
    min_subgroups: int = 0
    selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    network_topology: NetworkTopology | None = None

    @property
    def label(self) -> str:
        """How messages name the policy: its name, or its place in the list."""
        return self.name or f"subGroupPolicy[{self.index}]"

    def values_for(self, labels: Mapping[str, str]) -> tuple[str, ...] | None:
        """The pod's values of matchLabelKeys when the policy matches it, else None."""
        if self.selector is not None and not self.selector.matches(labels):
            return None
        values = []
        for key in self.match_label_keys:
            value = labels.get(key)
            if not value:
                return None
            values.append(value)
        return tuple(values)


# A subgroup's identity inside its PodGroup: the policy's index and the pods' values.
SubGroupKey = tuple[int, tuple[str, ...]]


@dataclass(slots=True)
class SubGroup:
    """The members of one subgroup, as the job holds them now."""

    policy: SubGroupPolicy
    values: tuple[str, ...]
    members: list[TaskInfo] = field(default_factory=list)

    @property
    def key(self) -> SubGroupKey:
        """(policy index, values): unique inside the PodGroup."""
        return (self.policy.index, self.values)

    @property
    def name(self) -> str:
        """How messages name the subgroup: "workers[replica-2]", or the policy's label
        when it groups by no label."""
        if not self.values:
            return self.policy.label
        return f"{self.policy.label}[{','.join(self.values)}]"

    def placed(self, statuses: Collection[TaskStatus]) -> int:
        """How many members are in one of `statuses`."""
        return sum(1 for task in self.members if task.status in statuses)

    def whole(self, statuses: Collection[TaskStatus]) -> bool:
        """Whether subGroupSize members are in one of `statuses`: the subgroup counts."""
        return self.placed(statuses) >= self.policy.size

    def pending(self) -> list[TaskInfo]:
        """Members waiting for a node that the scheduler may place (not gated)."""
        return [t for t in self.members if t.status is TaskStatus.PENDING and not t.gated]

    def could_be_whole(self) -> bool:
        """Whether it has subGroupSize members that have not failed (pods still to come
        cannot be placed)."""
        live = sum(1 for t in self.members if t.status is not TaskStatus.FAILED)
        return live >= self.policy.size


def subgroup_key(
    policies: Iterable[SubGroupPolicy], labels: Mapping[str, str]
) -> SubGroupKey | None:
    """The subgroup a pod with `labels` is in: the first policy that matches it; None for
    the default group."""
    for policy in policies:
        values = policy.values_for(labels)
        if values is not None:
            return (policy.index, values)
    return None


def split(
    policies: tuple[SubGroupPolicy, ...], tasks: Iterable[TaskInfo]
) -> tuple[list[SubGroup], list[TaskInfo]]:
    """The subgroups of `tasks` (in policy order, then their values in natural order:
    replica 2 before replica 10) and the tasks of the default group."""
    groups: dict[SubGroupKey, SubGroup] = {}
    default: list[TaskInfo] = []
    for task in tasks:
        key = subgroup_key(policies, task.labels)
        if key is None:
            default.append(task)
            continue
        group = groups.get(key)
        if group is None:
            group = groups[key] = SubGroup(policies[key[0]], key[1])
        group.members.append(task)
    ordered = sorted(groups.values(), key=lambda g: (g.policy.index, _natural(g.values)))
    return ordered, default


def whole_count(
    policy: SubGroupPolicy, groups: Iterable[SubGroup], statuses: Collection[TaskStatus]
) -> int:
    """How many of the policy's subgroups are whole in `statuses`."""
    return sum(1 for g in groups if g.policy is policy and g.whole(statuses))


def policies_satisfied(
    policies: tuple[SubGroupPolicy, ...],
    tasks: Iterable[TaskInfo],
    statuses: Collection[TaskStatus],
) -> bool:
    """Whether every policy has minSubGroups whole subgroups in `statuses`."""
    if not any(policy.min_subgroups for policy in policies):
        return True
    groups, _ = split(policies, tasks)
    return all(whole_count(p, groups, statuses) >= p.min_subgroups for p in policies)


def missing_subgroups(
    policies: tuple[SubGroupPolicy, ...], tasks: Iterable[TaskInfo]
) -> tuple[SubGroupPolicy, int] | None:
    """The first policy with fewer subgroups that could be whole (enough live members)
    than minSubGroups, and how many it has; None when every policy has enough."""
    if not any(policy.min_subgroups for policy in policies):
        return None
    groups, _ = split(policies, tasks)
    for policy in policies:
        possible = sum(1 for g in groups if g.policy is policy and g.could_be_whole())
        if possible < policy.min_subgroups:
            return policy, possible
    return None


def summary(
    policies: tuple[SubGroupPolicy, ...],
    tasks: Iterable[TaskInfo],
    statuses: Collection[TaskStatus],
) -> str:
    """Which subgroups of each policy are placed (whole in `statuses`) and which wait, by
    name: "subGroupPolicy workers: 2 of 4 subgroups of 4 pods placed (minSubGroups 2):
    workers[a], workers[b]; waiting: workers[c], workers[d]"."""
    groups, _ = split(policies, tasks)
    parts = []
    for policy in policies:
        mine = [g for g in groups if g.policy is policy]
        whole = [g.name for g in mine if g.whole(statuses)]
        waiting = [g.name for g in mine if not g.whole(statuses)]
        text = (
            f"subGroupPolicy {policy.label}: {len(whole)} of {len(mine)} subgroups of "
            f"{policy.size} pods placed (minSubGroups {policy.min_subgroups})"
        )
        if whole:
            text += f": {_listed(whole)}"
        if waiting:
            text += f"; waiting: {_listed(waiting)}"
        parts.append(text)
    return "; ".join(parts)


def _listed(names: list[str], shown: int = 8) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def _natural(values: tuple[str, ...]) -> tuple[tuple[tuple[int, int | str], ...], ...]:
    """A sort key that orders the digits in values as numbers."""
    return tuple(
        tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", v))
        for v in values
    )


# Reading -------------------------------------------------------------------------------


def read_policies(key: str, raw: Any) -> tuple[SubGroupPolicy, ...]:
    """spec.subGroupPolicy of the PodGroup `key`; InvalidObject naming the first field
    that cannot be used (the CRD's types and bounds, and what grouping needs: distinct
    names, selectors and keys that select)."""
    field = SUB_GROUP_POLICY_FIELD
    if not isinstance(raw, list):
        raise InvalidObject("PodGroup", key, field, raw, "must be a list of policies")
    policies = tuple(
        _policy(key, f"{field}[{index}]", index, entry) for index, entry in enumerate(raw)
    )
    seen: dict[str, int] = {}
    for policy in policies:
        earlier = seen.setdefault(policy.name, policy.index)
        if earlier != policy.index:
            raise InvalidObject(
                "PodGroup",
                key,
                f"{field}[{policy.index}].name",
                policy.name,
                f"is also the name of {field}[{earlier}]; give each policy a name of its own "
                "(subgroups are counted per policy)",
            )
    return policies


def _policy(key: str, path: str, index: int, raw: Any) -> SubGroupPolicy:
    if not isinstance(raw, Mapping):
        raise InvalidObject("PodGroup", key, path, raw, "must be an object")
    unknown = sorted(str(name) for name in raw if name not in _KEYS)
    if unknown:
        raise InvalidObject(
            "PodGroup",
            key,
            f"{path}.{unknown[0]}",
            raw[unknown[0]],
            f"is not a field of subGroupPolicy (known: {', '.join(_KEYS)}); remove it",
        )
    name = raw.get("name") or ""
    if not isinstance(name, str):
        raise InvalidObject("PodGroup", key, f"{path}.name", name, "must be a string")
    size = _integer(key, f"{path}.subGroupSize", raw.get("subGroupSize"), default=1, minimum=1)
    minimum = _integer(key, f"{path}.minSubGroups", raw.get("minSubGroups"), default=0, minimum=0)
    selector_raw = raw.get("labelSelector")
    selector = (
        _selector(key, f"{path}.labelSelector", selector_raw) if selector_raw is not None else None
    )
    keys = _label_keys(key, f"{path}.matchLabelKeys", raw.get("matchLabelKeys"))
    topology_raw = raw.get("networkTopology")
    topology = (
        NetworkTopology.read(key, topology_raw, f"{path}.networkTopology")
        if topology_raw is not None
        else None
    )
    return SubGroupPolicy(name, index, size, minimum, selector, keys, topology)


def _integer(key: str, field: str, value: Any, *, default: int, minimum: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidObject("PodGroup", key, field, value, "must be an integer")
    if value < minimum:
        raise InvalidObject("PodGroup", key, field, value, f"must be {minimum} or more")
    if value > INT32_MAX:
        raise InvalidObject("PodGroup", key, field, value, f"must be at most {INT32_MAX}")
    return int(value)


def _label_keys(key: str, field: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidObject("PodGroup", key, field, value, "must be a list of label keys")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise InvalidObject(
                "PodGroup",
                key,
                f"{field}[{index}]",
                item,
                "must be a label key (a non-empty string)",
            )
    return tuple(value)


def _selector(key: str, field: str, value: Any) -> LabelSelector:
    if not isinstance(value, Mapping):
        raise InvalidObject("PodGroup", key, field, value, "must be a label selector (an object)")
    try:
        selector = msgspec.convert(value, wire.LabelSelector)
    except msgspec.ValidationError as error:
        raise InvalidObject(
            "PodGroup", key, field, dict(value), f"is not a label selector ({error})"
        ) from None
    for index, requirement in enumerate(selector.match_expressions):
        where = f"{field}.matchExpressions[{index}]"
        operator = requirement.operator
        if operator in _OPERATORS_WITH_VALUES:
            if not requirement.values:
                raise InvalidObject(
                    "PodGroup",
                    key,
                    f"{where}.values",
                    [],
                    f"operator {operator} needs one or more values",
                )
        elif operator in _OPERATORS_WITHOUT_VALUES:
            if requirement.values:
                raise InvalidObject(
                    "PodGroup",
                    key,
                    f"{where}.values",
                    requirement.values,
                    f"operator {operator} takes no values",
                )
        else:
            raise InvalidObject(
                "PodGroup",
                key,
                f"{where}.operator",
                operator,
                "must be In, NotIn, Exists or DoesNotExist",
            )
    return label_selector(selector)
