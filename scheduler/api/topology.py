"""Network topology as a session reads it: tiers of domains (sets of nodes), resolved once.

A domain is a HyperNode (topology.volcano.sh/v1alpha1) with every node it holds, its
nested HyperNodes' nodes included; or, on a cluster with no HyperNodes, the nodes that
share the value of a node label the scheduler config names for a tier (for example tier
1 `example.com/rack`, tier 2 `topology.kubernetes.io/zone`). A node is in no domain of
a tier it has no label or HyperNode for: nothing is guessed.

What cannot be used (a cycle of HyperNodes, a member HyperNode whose tier is not below
its parent's, a regular expression that does not compile) is never raised: the HyperNode
is left out of placement and the problem is listed in `Topology.problems`, for the
caller to turn into an event.

A session's view of the domains (their free room, the order to try them in for a gang) is
api/session_topology.py's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.api.hypernode import HyperNodeInfo, MemberSelector
from scheduler.api.node import NodeInfo

# Why a HyperNode is left out of placement (the reason of its Warning event).
HYPERNODE_IGNORED = "HyperNodeIgnored"
# A HyperNode member muster reads differently from how it was probably meant.
HYPERNODE_MEMBER_UNUSED = "HyperNodeMemberUnused"


@dataclass(frozen=True, slots=True)
class LabelTier:
    """A tier derived from a node label: nodes with equal values share a domain."""

    tier: int
    node_label: str
    tier_name: str = ""


@dataclass(frozen=True, slots=True)
class Domain:
    """A set of nodes close on the network: a HyperNode, or a node label's value."""

    name: str
    tier: int
    tier_name: str
    nodes: frozenset[str]


@dataclass(frozen=True, slots=True)
class TopologyProblem:
    """Something in the topology muster cannot use, on the object that has it."""

    kind: str
    name: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Topology:
    """The domains of every tier (lowest tier first), and where they came from."""

    # Per tier, its domains in name order; tiers ascending.
    tiers: Mapping[int, tuple[Domain, ...]]
    # "HyperNode" or "label": what a domain is called in messages.
    source: str
    problems: tuple[TopologyProblem, ...] = ()
    # tierName -> tier, for spec.networkTopology.highestTierName.
    tier_names: Mapping[str, int] = field(default_factory=dict)
    # Per tier of a label source, the label (for messages).
    labels: Mapping[int, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """Whether there is no domain at all."""
        return not any(self.tiers.values())

    @property
    def highest_tier(self) -> int:
        """The highest tier that has a domain (0 when none has)."""
        return max((tier for tier, domains in self.tiers.items() if domains), default=0)

    def domains(self, up_to: int) -> list[Domain]:
        """Every domain of a tier at most `up_to`, lowest tier first."""
        return [d for tier in sorted(self.tiers) if tier <= up_to for d in self.tiers[tier]]

    def containing(self, nodes: Iterable[str], up_to: int) -> list[Domain]:
        """The domains of tier at most `up_to` that hold every one of `nodes`, lowest
        tier first (a gang's placed members: its later members join one of these)."""
        wanted = frozenset(nodes)
        return [d for d in self.domains(up_to) if wanted <= d.nodes]

    def describe_tiers(self, up_to: int) -> str:
        """How messages name the domains of tiers up to `up_to`: "tier-1 HyperNode",
        "HyperNode of tier 1 to 2", "tier-1 domain (example.com/rack)"."""
        tiers = [tier for tier in sorted(self.tiers) if tier <= up_to and self.tiers[tier]]
        if self.source == "label":
            labels = ", ".join(self.labels[tier] for tier in tiers if tier in self.labels)
            suffix = f" ({labels})" if labels else ""
            noun = "domain"
        else:
            suffix = ""
            noun = "HyperNode"
        if len(tiers) <= 1:
            tier = tiers[0] if tiers else up_to
            return f"tier-{tier} {noun}{suffix}"
        return f"{noun} of tier {tiers[0]} to {tiers[-1]}{suffix}"


# Resolution ------------------------------------------------------------------


def resolve(
    hypernodes: Mapping[str, HyperNodeInfo],
    nodes: Mapping[str, NodeInfo],
    label_tiers: Sequence[LabelTier] = (),
) -> Topology:
    """The topology of a snapshot: from its HyperNodes when it has any, else from the node
    labels the config names; linear in nodes x (tiers or member selectors)."""
    if hypernodes:
        topology = _from_hypernodes(hypernodes, nodes)
        if label_tiers:
            labels = ", ".join(t.node_label for t in label_tiers)
            problem = TopologyProblem(
                "HyperNode",
                min(hypernodes),
                HYPERNODE_MEMBER_UNUSED,
                f"the cluster has HyperNodes, so the network-topology-aware plugin's label "
                f"tiers ({labels}) are not used; remove the plugin's tiers argument, or "
                f"delete the HyperNodes to place by node labels",
            )
            return Topology(
                topology.tiers,
                topology.source,
                (*topology.problems, problem),
                topology.tier_names,
            )
        return topology
    return _from_labels(nodes, label_tiers)


_CACHE: list[tuple[object, tuple[LabelTier, ...], tuple[tuple[str, int], ...], Topology]] = []


def resolve_cached(
    hypernodes: Mapping[str, HyperNodeInfo],
    nodes: Mapping[str, NodeInfo],
    label_tiers: Sequence[LabelTier] = (),
) -> Topology:
    """`resolve`, reused while the HyperNodes mapping is the same object and every node
    keeps the same labels object (sessions clone nodes but share their labels): the
    regular expressions and selectors of HyperNodes are matched once, not every cycle."""
    tiers = tuple(label_tiers)
    # The labels objects are kept alive by the snapshot holding them, so an id is not
    # reused while its node is in the key.
    key = tuple((name, id(node.labels)) for name, node in nodes.items())
    for cached_hypernodes, cached_tiers, cached_key, topology in _CACHE:
        if cached_hypernodes is hypernodes and cached_tiers == tiers and cached_key == key:
            return topology
    topology = resolve(hypernodes, nodes, tiers)
    # One entry: the scheduler runs one world; tests and tools get a fresh resolve.
    _CACHE[:] = [(hypernodes, tiers, key, topology)]
    return topology


_LABEL_CACHE: list[tuple[str, tuple[tuple[str, int], ...], Topology]] = []


def label_topology(nodes: Mapping[str, NodeInfo], node_label: str) -> Topology:
    """The domains of one node label, as tier 1: a native PodGroup's topology constraint
    (`schedulingConstraints.topology[].key`, every pod in one domain of that label; nodes
    without the label are in none). Cached as resolve_cached is, a few labels at a time."""
    key = tuple((name, id(node.labels)) for name, node in nodes.items())
    for label, cached_key, topology in _LABEL_CACHE:
        if label == node_label and cached_key == key:
            return topology
    topology = _from_labels(nodes, (LabelTier(1, node_label),))
    _LABEL_CACHE[:] = [*_LABEL_CACHE[-3:], (node_label, key, topology)]
    return topology


def member_counts(
    hypernodes: Mapping[str, HyperNodeInfo], nodes: Mapping[str, NodeInfo]
) -> dict[str, int]:
    """Each HyperNode's status.nodeCount, counted as Volcano's HyperNode controller counts
    it: the distinct names its members choose, a name by exactMatch counting whether or
    not such a node exists (so a member HyperNode counts as one), regexMatch and
    labelMatch counting the nodes they match. Cached as resolve_cached is."""
    key = tuple((name, id(node.labels)) for name, node in nodes.items())
    known = _COUNTS_CACHE[0] if _COUNTS_CACHE else None
    if known is not None and known[0] is hypernodes and known[1] == key:
        return known[2]
    counts: dict[str, int] = {}
    for name, info in hypernodes.items():
        chosen: set[str] = set()
        for member in info.members:
            if member.exact_name is not None:
                chosen.add(member.exact_name)
            else:
                chosen.update(_matching_nodes(name, member, nodes, _compiled_or_none))
        counts[name] = len(chosen)
    _COUNTS_CACHE[:] = [(hypernodes, key, counts)]
    return counts


_COUNTS_CACHE: list[tuple[object, tuple[tuple[str, int], ...], dict[str, int]]] = []


def _compiled_or_none(_owner: str, text: str) -> re.Pattern[str] | None:
    try:
        return re.compile(text)
    except re.error:
        return None  # resolve() reports it; it matches nothing here either


def _from_labels(nodes: Mapping[str, NodeInfo], label_tiers: Sequence[LabelTier]) -> Topology:
    tiers: dict[int, tuple[Domain, ...]] = {}
    names: dict[str, int] = {}
    labels: dict[int, str] = {}
    for spec in sorted(label_tiers, key=lambda t: t.tier):
        groups: dict[str, set[str]] = {}
        for name, node in nodes.items():
            value = node.labels.get(spec.node_label)
            if value is not None:
                groups.setdefault(value, set()).add(name)
        tiers[spec.tier] = tuple(
            Domain(f"{spec.node_label}={value}", spec.tier, spec.tier_name, frozenset(members))
            for value, members in sorted(groups.items())
        )
        labels[spec.tier] = spec.node_label
        if spec.tier_name:
            names[spec.tier_name] = spec.tier
    return Topology(tiers, "label", (), names, labels)


def _from_hypernodes(
    hypernodes: Mapping[str, HyperNodeInfo], nodes: Mapping[str, NodeInfo]
) -> Topology:
    problems: list[TopologyProblem] = []
    compiled: dict[str, re.Pattern[str] | None] = {}

    def pattern(owner: str, text: str) -> re.Pattern[str] | None:
        if text not in compiled:
            try:
                compiled[text] = re.compile(text)
            except re.error as error:
                compiled[text] = None
                problems.append(
                    TopologyProblem(
                        "HyperNode",
                        owner,
                        HYPERNODE_MEMBER_UNUSED,
                        f"HyperNode {owner}: spec.members[].selector.regexMatch.pattern="
                        f"{text!r} is not a valid regular expression ({error}); the member "
                        f"matches nothing; fix the pattern",
                    )
                )
        return compiled[text]

    direct: dict[str, set[str]] = {}
    children: dict[str, list[str]] = {}
    for name, info in hypernodes.items():
        direct[name] = set()
        children[name] = []
        for index, member in enumerate(info.members):
            if member.type == "Node":
                direct[name].update(_matching_nodes(name, member, nodes, pattern))
            else:
                children[name].extend(
                    _matching_hypernodes(name, index, member, hypernodes, problems)
                )
    ignored = _ignored_hypernodes(hypernodes, children, problems)
    resolved: dict[str, frozenset[str]] = {}

    def nodes_of(name: str) -> frozenset[str]:
        # Kept HyperNodes form a DAG whose tiers fall along every edge: the recursion is
        # at most as deep as there are tiers.
        known = resolved.get(name)
        if known is None:
            union = set(direct[name])
            for child in children[name]:
                if child not in ignored:
                    union |= nodes_of(child)
            known = resolved[name] = frozenset(union)
        return known

    by_tier: dict[int, list[Domain]] = {}
    tier_names: dict[str, int] = {}
    for name in sorted(hypernodes):
        if name in ignored:
            continue
        info = hypernodes[name]
        members = nodes_of(name)
        if members:
            by_tier.setdefault(info.tier, []).append(
                Domain(name, info.tier, info.tier_name, members)
            )
        if info.tier_name:
            known_tier = tier_names.setdefault(info.tier_name, info.tier)
            if known_tier != info.tier:
                problems.append(
                    TopologyProblem(
                        "HyperNode",
                        name,
                        HYPERNODE_MEMBER_UNUSED,
                        f"HyperNode {name}: spec.tierName={info.tier_name!r} names tier "
                        f"{known_tier} on other HyperNodes but tier {info.tier} here; "
                        f"highestTierName means tier {known_tier}; give each tier one name",
                    )
                )
    tiers = {tier: tuple(by_tier[tier]) for tier in sorted(by_tier)}
    return Topology(tiers, "HyperNode", tuple(problems), tier_names)


def _matching_nodes(
    owner: str,
    member: MemberSelector,
    nodes: Mapping[str, NodeInfo],
    pattern: Callable[[str, str], re.Pattern[str] | None],
) -> Iterable[str]:
    if member.exact_name is not None:
        return [member.exact_name] if member.exact_name in nodes else []
    if member.pattern is not None:
        compiled = pattern(owner, member.pattern)
        if compiled is None:
            return []
        # Volcano matches with Go's Regexp.MatchString, which is not anchored: the
        # pattern may match any part of the name ("rack-a" matches "rack-a-node-3").
        return [name for name in nodes if compiled.search(name)]
    selector = member.labels
    if selector is None or (not selector.match_labels and not selector.match_expressions):
        # Volcano: an empty labelMatch selects no node (not every node).
        return []
    return [name for name, node in nodes.items() if selector.matches(node.labels)]


def _matching_hypernodes(
    owner: str,
    index: int,
    member: MemberSelector,
    hypernodes: Mapping[str, HyperNodeInfo],
    problems: list[TopologyProblem],
) -> list[str]:
    if member.exact_name is not None:
        if member.exact_name not in hypernodes:
            problems.append(
                TopologyProblem(
                    "HyperNode",
                    owner,
                    HYPERNODE_MEMBER_UNUSED,
                    f"HyperNode {owner}: spec.members[{index}] names HyperNode "
                    f"{member.exact_name!r}, which does not exist; its nodes are not in "
                    f"{owner} until it is created",
                )
            )
            return []
        return [member.exact_name]
    # Volcano adds a child HyperNode by exactMatch only; a regexMatch or labelMatch there
    # chooses no child (api/hypernode.py refuses one on read; this keeps the rule whole).
    chooser = "regexMatch" if member.pattern is not None else "labelMatch"
    problems.append(
        TopologyProblem(
            "HyperNode",
            owner,
            HYPERNODE_MEMBER_UNUSED,
            f"HyperNode {owner}: spec.members[{index}] chooses HyperNodes by {chooser}, "
            f"which chooses Nodes only (as in Volcano); the member adds no child; list each "
            f"child HyperNode by exactMatch",
        )
    )
    return []


def _ignored_hypernodes(
    hypernodes: Mapping[str, HyperNodeInfo],
    children: Mapping[str, list[str]],
    problems: list[TopologyProblem],
) -> set[str]:
    """HyperNodes on a cycle of members, or with a member HyperNode of a tier not below
    their own: both are left out of placement (their nodes would be ill-defined)."""
    ignored: set[str] = set()
    for name, members in children.items():
        tier = hypernodes[name].tier
        for child in members:
            child_tier = hypernodes[child].tier
            if child_tier >= tier:
                ignored.add(name)
                problems.append(
                    TopologyProblem(
                        "HyperNode",
                        name,
                        HYPERNODE_IGNORED,
                        f"HyperNode {name} (tier {tier}) has member HyperNode {child} of tier "
                        f"{child_tier}, which is not below it; {name} is not used for "
                        f"placement; give members a lower tier than their parent",
                    )
                )
                break
    for cycle in _cycles(children):
        fresh = [name for name in cycle if name not in ignored]
        ignored.update(cycle)
        if not fresh:
            continue
        path = " -> ".join([*cycle, cycle[0]])
        for name in fresh:
            problems.append(
                TopologyProblem(
                    "HyperNode",
                    name,
                    HYPERNODE_IGNORED,
                    f"HyperNode {name} is on a cycle of members ({path}); it is not used "
                    f"for placement; a HyperNode may not contain itself",
                )
            )
    return ignored


def _cycles(children: Mapping[str, list[str]]) -> list[list[str]]:
    """Each cycle of the member graph once (as the path found first), iteratively."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    cycles: list[list[str]] = []
    for root in sorted(children):
        if root in state:
            continue
        path: list[str] = []
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            name, index = stack.pop()
            if index == 0:
                state[name] = 1
                path.append(name)
            members = children.get(name, [])
            if index < len(members):
                stack.append((name, index + 1))
                child = members[index]
                if state.get(child) == 1:
                    cycles.append(path[path.index(child) :])
                elif child not in state:
                    stack.append((child, 0))
                continue
            state[name] = 2
            path.pop()
    return cycles
