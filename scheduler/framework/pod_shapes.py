"""Pod shapes: which tasks every node answers alike, so the node picker weighs a node once
per shape rather than once per pod.

A shape is what a node's filters and scores read of a task: its placement spec (selectors,
affinity, tolerations, ports, claims, images), its request, its pod-to-pod terms and, when
some pod of the session has required anti-affinity, the part of its labels those terms
can tell apart (Symmetry). The members of a gang usually share one shape; `alike` tells
so from object identity, before any key is built."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler.api.placement import PodPlacementSpec
from scheduler.api.pod_topology import PodTopologySpec
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskInfo

# What anti-affinity terms can tell of a pod: its namespace, the label pairs they name,
# the values of the keys they test.
Seen = tuple[str, tuple[tuple[str, str], ...], tuple[str | None, ...]]
Shape = tuple[
    PodPlacementSpec,
    int,
    int,
    frozenset[tuple[str, int]],
    PodTopologySpec | None,
    Seen | None,
]


@dataclass(frozen=True, slots=True)
class Symmetry:
    """What of a pod's labels the session's required anti-affinity selectors read: the
    label pairs they name by value (matchLabels, In) and the keys they test otherwise
    (NotIn, Exists, DoesNotExist). Pods alike there are kept away by the same pods."""

    pairs: frozenset[tuple[str, str]] = frozenset()
    keys: tuple[str, ...] = ()
    # `of` per namespace and label set: a gang's pods share one label mapping (the cache
    # shares equal ones), so the answer is worked out once a gang, not once a pod. Keyed
    # by the mapping's id, and holding the mapping, so the id cannot be reused meanwhile.
    _known: dict[tuple[str, int], tuple[Mapping[str, str], Seen | None]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )

    def of(self, task: TaskInfo) -> Seen | None:
        """The part of a pod's identity anti-affinity terms can tell apart, or None."""
        labels = task.labels
        memo_key = (task.namespace, id(labels))
        known = self._known.get(memo_key)
        if known is not None and known[0] is labels:
            return known[1]
        seen = self._seen(task.namespace, labels)
        self._known[memo_key] = (labels, seen)
        return seen

    def _seen(self, namespace: str, labels: Mapping[str, str]) -> Seen | None:
        named = self.pairs.intersection(labels.items()) if self.pairs else None
        if not self.keys:
            if not named:
                return None  # no term can match this pod, whatever its namespace
            return (namespace, tuple(sorted(named)), ())
        tested = tuple(map(labels.get, self.keys))
        if not named and tested.count(None) == len(tested):
            return None
        return (namespace, tuple(sorted(named or ())), tested)


def shape_of(task: TaskInfo, symmetry: Symmetry | None = None) -> Shape:
    """Tasks with equal shapes get the same filter and score answers from every node."""
    request = task.request
    scalars = frozenset(request.scalars.items()) if request.scalars else frozenset()
    seen = symmetry.of(task) if symmetry is not None else None
    return (task.placement, request.cpu, request.memory, scalars, task.topology, seen)


def alike(a: TaskInfo, b: TaskInfo) -> bool:
    """Whether two tasks surely have one shape: the same placement, topology and label
    objects (the cache shares equal ones; a gang's pods hold the same), namespace and
    request, which is all shape_of reads."""
    if a.placement is not b.placement or a.topology is not b.topology or a.labels is not b.labels:
        return False
    first, second = a.request, b.request
    return (
        a.namespace == b.namespace
        and first.cpu == second.cpu
        and first.memory == second.memory
        and first.scalars == second.scalars
    )


def turns_yes_on_placement(task: TaskInfo) -> bool:
    """Whether a node that refused the task may take it after another pod is placed:
    required pod affinity (a matching pod arrives in the domain) and DoNotSchedule spread
    (the smallest domain grows)."""
    spec = task.topology
    return spec is not None and (bool(spec.required_affinity) or any(c.hard for c in spec.spread))


def scores_by_domain(task: TaskInfo) -> bool:
    """Whether the task's own score reads pods in topology domains (so it changes on nodes
    whose version did not): preferred pod (anti-)affinity and ScheduleAnyway spread."""
    spec = task.topology
    return spec is not None and bool(
        spec.preferred_affinity
        or spec.preferred_anti_affinity
        or any(not c.hard for c in spec.spread)
    )


def pod_topology_of(snapshot: ClusterSnapshot) -> tuple[Symmetry, bool]:
    """What the required anti-affinity of the snapshot's pods (placed or pending) reads of
    other pods' labels (empty when no pod has such terms: the common session), and whether
    any pod has terms that score nodes (preferences, required affinity, ScheduleAnyway)."""
    pairs: set[tuple[str, str]] = set()
    keys: set[str] = set()
    scored = False
    for spec in snapshot.topology_specs():
        scored = scored or bool(
            spec.required_affinity
            or spec.preferred_affinity
            or spec.preferred_anti_affinity
            or any(not c.hard for c in spec.spread)
        )
        for term in spec.required_anti_affinity:
            selector = term.selector
            if selector is None:
                continue
            pairs.update(selector.match_labels)
            for requirement in selector.match_expressions:
                if requirement.operator == "In":
                    pairs.update((requirement.key, value) for value in requirement.values)
                else:
                    keys.add(requirement.key)
    return Symmetry(frozenset(pairs), tuple(sorted(keys))), scored
