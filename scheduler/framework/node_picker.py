"""NodePicker: the best node for a task without scoring every node for every pod.

Tasks with the same placement spec and request (the members of a gang,
usually) are one *shape*. Per shape the picker keeps a max-heap of node
scores over a window of admissible nodes. A heap entry remembers the node's
version; when it reaches the top with an old version it is rescored and
pushed back (scores only fall as a node fills under least-allocated, so a
stale entry over-promises and is caught at the top). A node that has no room
leaves the shape's heap until something frees room on it.

So a placement costs O(log window) instead of O(nodes), and a session over
P pods and N nodes costs about P log N plus, per shape, the window scored
once: the cost grows with pods x sampled nodes, never pods x all nodes.
Windows follow kube-scheduler's percentageOfNodesToScore: the picker scores
a sample, and looks further only when the sample is exhausted; so a task is
declared unschedulable only after every node was examined, and its message
counts all of them.

A pod with DoNotSchedule topology spread is refused by a whole domain at a time (a zone
holding more of its gang than the smallest one plus maxSkew): such nodes are set aside by
domain, and after a placement the picker asks once per domain, not once per node, whether
it still refuses. Its windows take the domains in turn, as kube-scheduler lists nodes zone
by zone, so a window offers every zone some nodes even where names group them by zone.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from scheduler.api.node import NodeInfo
from scheduler.api.task import PodPlacementSpec, PodTopologySpec, TaskInfo
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.framework.status import FitErrors, Status

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


def _alike(a: TaskInfo, b: TaskInfo) -> bool:
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


def _turns_yes_on_placement(task: TaskInfo) -> bool:
    """Whether a node that refused the task may take it after another pod is placed:
    required pod affinity (a matching pod arrives in the domain) and DoNotSchedule spread
    (the smallest domain grows)."""
    spec = task.topology
    return spec is not None and (bool(spec.required_affinity) or any(c.hard for c in spec.spread))


def _scores_by_domain(task: TaskInfo) -> bool:
    """Whether the task's own score reads pods in topology domains (so it changes on nodes
    whose version did not): preferred pod (anti-)affinity and ScheduleAnyway spread."""
    spec = task.topology
    return spec is not None and bool(
        spec.preferred_affinity
        or spec.preferred_anti_affinity
        or any(not c.hard for c in spec.spread)
    )


def pod_topology_of(session: Session) -> tuple[Symmetry, bool]:
    """What the required anti-affinity of the session's pods (placed or pending) reads of
    other pods' labels (empty when no pod has such terms: the common session), and whether
    any pod has terms that score nodes (preferences, required affinity, ScheduleAnyway)."""
    pairs: set[tuple[str, str]] = set()
    keys: set[str] = set()
    scored = False
    for spec in session.snapshot.topology_specs():
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


def nodes_to_score(total: int, percentage: int, minimum: int) -> int:
    """How many feasible nodes to score before choosing (kube-scheduler's adaptive rule)."""
    if total <= minimum:
        return total
    if percentage <= 0:
        # 50% at 100 nodes, falling by 1% every 125 nodes, never below 5%.
        percentage = max(5, 50 - total // 125)
    return max(minimum, total * percentage // 100)


@dataclass(slots=True)
class _Admissible:
    """Nodes whose static filters admit a placement spec, and why the others refuse."""

    nodes: list[NodeInfo]
    names: frozenset[str]
    refusals: list[Status]


# A node's score for a shape, as a min-heap orders it: (negated score, sequence, the node's
# version when scored, the node). Best score first, then the entry pushed first, so nodes
# themselves are never compared; version -1 for an entry to be scored when it reaches the
# top. A plain tuple: a NamedTuple is built through a Python-level __new__ even when
# compiled, and entries are made for every placement.
_HeapEntry = tuple[float, int, int, NodeInfo]


@dataclass(slots=True)
class _ShapeHeap:
    admissible: _Admissible
    heap: list[_HeapEntry] = field(default_factory=list)
    # Index into admissible.nodes of the next window to load.
    cursor: int = 0
    loaded: int = 0
    # Nodes taken off the heap because the shape did not fit there, with the entry they
    # were refused on: a reopen offers that entry again while the node is unchanged, so a
    # refusal that a placement elsewhere did not turn costs no second score.
    full: dict[str, _HeapEntry] = field(default_factory=dict)
    # Nodes set aside because their topology domain's spread skew refused the shape, by
    # domain, with their entries; and each such node's domain. A placement or removal only
    # asks again, per domain, whether it still refuses (`_recheck_parked`), so a refused domain's
    # nodes are not weighed again one by one after every placement. `checked` is the
    # picker's count of moves (placements and removals) when they were last asked.
    parked: dict[tuple[str, str], dict[str, _HeapEntry]] = field(default_factory=dict)
    parked_at: dict[str, tuple[str, str]] = field(default_factory=dict)
    checked: int = 0
    # The topology keys of the shape's DoNotSchedule spread constraints (its refusals may
    # be a domain's).
    spread_keys: tuple[str, ...] = ()
    # The node version of each node's newest entry, so stale duplicates are dropped.
    newest: dict[str, int] = field(default_factory=dict)
    failure: str | None = None
    # The task's verdicts depend on pods elsewhere in a topology domain: refused nodes are
    # offered again when a placement may turn them (`reopens`) or any pod leaves (`topology`).
    topology: bool = False
    reopens: bool = False
    # A task of the shape whose score reads pods elsewhere in its domains (preferred pod
    # affinity, ScheduleAnyway spread): its heap is rescored after each placement.
    rescored_for: TaskInfo | None = None
    # Windows of kube-scheduler's minimum sample rather than the picker's window: shapes
    # of one gang each (pod terms, images) whose best nodes are few and known.
    sampled: bool = False


def _parked_domain(
    shape: _ShapeHeap, keys: tuple[str, ...], node: NodeInfo
) -> tuple[str, str] | None:
    """The node's domain if the shape has set it aside. Asked within one pick, where no
    count moves: such a domain (asked again when the pick began) still refuses the task."""
    labels = node.labels
    for key in keys:
        value = labels.get(key)
        if value is not None and (key, value) in shape.parked:
            return key, value
    return None


def _park(shape: _ShapeHeap, domain: tuple[str, str], entry: _HeapEntry) -> None:
    """Set a node aside with its domain, to be offered again when the domain turns."""
    shape.parked.setdefault(domain, {})[entry[3].name] = entry
    shape.parked_at[entry[3].name] = domain


class NodePicker:
    """Best-node selection for the allocate-style actions of one session."""

    def __init__(
        self,
        session: Session,
        state: CycleState,
        *,
        percentage: int = 0,
        minimum: int = 100,
        nodes: list[NodeInfo] | None = None,
        pod_terms: tuple[Symmetry, bool] | None = None,
    ) -> None:
        self.session = session
        self.state = state
        self._fits, self._score = session.node_checks()
        # Read once: the plugins that write them (predicates, nodeorder) did so when the
        # session opened, and the picker asks them for every pick and every new shape.
        self._spread_domains = state.spread_domains
        self._image_holders = state.image_holders
        # Whether the node the last pick returned has room for its task now (False: it was
        # chosen for room being released, and the task is pipelined there).
        self.picked_now = False
        # The nodes this picker chooses among: every node, or one topology domain's.
        self.nodes = nodes if nodes is not None else session.node_list
        self._percentage = percentage
        self._minimum = minimum
        self.window = nodes_to_score(len(self.nodes), percentage, minimum)
        self._admissible: dict[PodPlacementSpec, _Admissible] = {}
        self._shapes: dict[Shape, _ShapeHeap] = {}
        self._sequence = itertools.count()
        # Where the next shape starts reading nodes, so shapes spread over the cluster.
        self._start = 0
        self._symmetry, self._topology_scores = (
            pod_terms if pod_terms is not None else pod_topology_of(session)
        )
        # The last task given a shape, and that shape: reconsider asks for the task pick just
        # had, and the next task is usually its gang mate, alike in every object the key
        # reads, which identity tells at once. Only the last one is kept: a memo per task
        # cost a dict entry per pod, more than the key it saved (a tuple of six, hashed).
        self._previous: tuple[TaskInfo, _ShapeHeap] | None = None
        # Shapes whose refused nodes a removal may turn (see _ShapeHeap), and those with
        # nodes refused since the last placement that a placement may turn.
        self._topological: list[_ShapeHeap] = []
        self._to_reopen: dict[int, _ShapeHeap] = {}
        self._rescoring: list[_ShapeHeap] = []
        # Placements and removals so far: shapes with domains set aside ask again, per
        # domain, once this moved (see _ShapeHeap.parked).
        self._moves = 0
        # Admissible nodes in the order spread shapes read them, by the admissible list
        # (kept with it, so its id is not reused) and topology key.
        self._by_domain: dict[tuple[int, str], tuple[_Admissible, _Admissible]] = {}
        # Pickers over one topology domain each, by domain (see within).
        self._children: dict[str, NodePicker] = {}
        # Shapes with pod-to-pod constraints have a shape of their own per gang, usually:
        # they score kube's minimum sample at a time, not the shared shapes' window.
        self._topology_window = min(self.window, minimum)

    def within(self, key: str, nodes: list[NodeInfo]) -> NodePicker:
        """A picker over only `nodes` (the topology domain `key`'s, in name order) that
        reads pod terms as this one does, kept for the session like this one's heaps.

        Its heaps are its own and stay valid as this one's do: a node's version tells
        either what the other placed, and room only comes back by discarding a statement
        through the picker that placed it, before any other picker picks again, or through
        `release` on this one, which offers it to every domain picker. Pod
        terms that a placement elsewhere may turn to yes (required affinity, spread) are
        reopened each time the picker is handed out."""
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = NodePicker(
                self.session,
                self.state,
                percentage=self._percentage,
                minimum=self._minimum,
                nodes=nodes,
                pod_terms=(self._symmetry, self._topology_scores),
            )
        else:
            child._moves += 1  # others may have placed pods since: domains set aside ask again
            for shape in child._topological:
                child._reopen(shape)
        return child

    def pick(self, task: TaskInfo) -> NodeInfo | None:
        """The best node with room for the task now (or once releasing pods go), else None."""
        shape = self._shape(task)
        if shape.failure is not None:
            return None
        if shape.parked and shape.checked != self._moves:
            self._recheck_parked(task, shape)
        fits = self._fits
        keys = shape.spread_keys
        domains = self._spread_domains if keys else None
        parked = shape.parked
        stash: list[_HeapEntry] = []
        chosen: NodeInfo | None = None
        while chosen is None:
            # A window may add nothing (its nodes refused already): read on until one does.
            while not shape.heap and self._load_window(task, shape):
                pass
            if not shape.heap:
                break
            entry = heapq.heappop(shape.heap)
            _, _, version, node = entry
            if node.name in shape.full or node.name in shape.parked_at:
                continue
            if version != node.version:
                if shape.newest.get(node.name) != node.version:
                    self._push(task, shape, node)
                continue
            domain = _parked_domain(shape, keys, node) if parked else None
            if domain is not None:
                _park(shape, domain, entry)  # its domain refuses the task: no need to weigh it
                continue
            if not fits(task, node).ok:
                domain = domains.refusing_domain(task, node) if domains is not None else None
                if domain is None:
                    shape.full[node.name] = entry
                else:
                    _park(shape, domain, entry)
                if shape.reopens:
                    self._to_reopen[id(shape)] = shape
                continue
            if task.request.fits_in(node.idle):
                chosen = node
            else:
                # Fits only once releasing pods go: prefer any node with room now.
                stash.append(entry)
        self.picked_now = chosen is not None
        if chosen is None and stash:
            _, _, _, chosen = stash.pop(0)
        for entry in stash:
            heapq.heappush(shape.heap, entry)
        if chosen is None:
            shape.failure = self._failure_message(task, shape)
            if shape.reopens:
                self._to_reopen[id(shape)] = shape
        return chosen

    def reconsider(self, task: TaskInfo, node: NodeInfo) -> None:
        """Score a picked node again for the task's shape: call after placing the task there
        (its room changed) or after deciding not to use it (it must not be lost)."""
        previous = self._previous
        if previous is not None and previous[0] is task:
            # The task pick just answered (every caller's): the node came off its heap.
            self._push(task, previous[1], node)
        else:
            shape = self._shapes.get(shape_of(task, self._symmetry))
            if shape is not None and node.name in shape.admissible.names:
                self._push(task, shape, node)
        if task.node_name == node.name:
            self._moves += 1
        if self._to_reopen and task.node_name == node.name:
            # The task was placed: affinity and spread verdicts elsewhere may turn to yes.
            for other in self._to_reopen.values():
                self._reopen(other)
            self._to_reopen.clear()
        if self._rescoring and task.node_name == node.name:
            for other in self._rescoring:
                self._rescore(other)

    def freed(self, node: NodeInfo) -> None:
        """Room came back on a node (a discarded statement): every shape may use it again,
        and shapes with pod-to-pod constraints every node of theirs (its domains changed)."""
        self._moves += 1
        for shape in self._topological:
            self._reopen(shape)
        for shape in self._shapes.values():
            if node.name not in shape.admissible.names:
                continue
            if shape.full.pop(node.name, None) is not None or shape.failure is not None:
                shape.failure = None
                self._push_any(shape, node)
        # Held room lifted for a gang (framework/holds.py) comes back outside any
        # statement: the domains' pickers must see it too.
        for child in self._children.values():
            child.freed(node)

    def discard(self, statement: Statement) -> int:
        """Discard a statement and offer the room it held back to every shape.

        Returns how many placements were undone."""
        touched = statement.touched_nodes()
        undone = len(statement)
        statement.discard()
        for name in touched:
            self.freed(self.session.nodes[name])
        return undone

    def release(self, statements: list[Statement]) -> int:
        """Discard statements made through this picker or its domain pickers (`within`),
        newest first, and offer the room they held back to every one of them: placements
        of one gang made in several domains (its subgroups) that others picked around.

        Returns how many placements were undone."""
        touched: dict[str, None] = {}
        undone = 0
        for statement in reversed(statements):
            touched.update(dict.fromkeys(statement.touched_nodes()))
            undone += len(statement)
            statement.discard()
        for name in touched:
            node = self.session.nodes[name]
            self.freed(node)
            for child in self._children.values():
                child.freed(node)
        return undone

    def failure(self, task: TaskInfo) -> str:
        """Why the last pick for the task's shape found nothing, in kube-scheduler's words."""
        shape = self._shape(task)
        return shape.failure or self._failure_message(task, shape)

    # Internals -------------------------------------------------------------
    def _rescore(self, shape: _ShapeHeap) -> None:
        # A placement moved the counts this shape's score reads, on nodes other than the
        # one placed on (whose version alone changed): score its heap again.
        task = shape.rescored_for
        if task is None or not shape.heap:
            return
        nodes = {node.name: node for _, _, _, node in shape.heap}
        shape.heap = []
        for name, node in nodes.items():
            if name not in shape.full and name not in shape.parked_at:
                self._push(task, shape, node)

    def _reopen(self, shape: _ShapeHeap) -> None:
        if not shape.full and shape.failure is None:
            return
        shape.failure = None
        for entry in shape.full.values():
            self._offer_again(shape, entry)
        shape.full.clear()

    def _offer_again(self, shape: _ShapeHeap, entry: _HeapEntry) -> None:
        # A refused node back on the heap: with the entry it was refused on while the node
        # is unchanged and scores read the node alone, else scored when it surfaces.
        if entry[2] == entry[3].version and shape.rescored_for is None:
            heapq.heappush(shape.heap, entry)
        else:
            self._push_any(shape, entry[3])

    def _recheck_parked(self, task: TaskInfo, shape: _ShapeHeap) -> None:
        # Counts moved since these domains refused: offer again the nodes of each domain
        # that no longer refuses the task (asked with the task about to be placed, whose
        # own membership the counts leave out).
        shape.checked = self._moves
        domains = self._spread_domains
        for domain in list(shape.parked):
            if domains is not None and domains.domain_refuses(task, domain):
                continue
            entries = shape.parked.pop(domain)
            for name, entry in entries.items():
                del shape.parked_at[name]
                self._offer_again(shape, entry)

    def _shape(self, task: TaskInfo) -> _ShapeHeap:
        previous = self._previous
        if previous is not None and (previous[0] is task or _alike(previous[0], task)):
            shape = previous[1]
        else:
            shape = self._shape_of_key(shape_of(task, self._symmetry), task)
        self._previous = (task, shape)
        return shape

    def _shape_of_key(self, key: Shape, task: TaskInfo) -> _ShapeHeap:
        shape = self._shapes.get(key)
        if shape is None:
            shape = _ShapeHeap(self._admissible_for(task))
            shape.topology = key[4] is not None or key[5] is not None
            shape.reopens = key[4] is not None and _turns_yes_on_placement(task)
            if key[4] is not None:
                shape.spread_keys = tuple(c.topology_key for c in key[4].hard_spread)
            if shape.topology:
                self._topological.append(shape)
            if key[4] is not None and _scores_by_domain(task):
                shape.rescored_for = task
                self._rescoring.append(shape)
            self._shapes[key] = shape
            copied = shape.topology and not self._topology_scores
            if copied:
                # No pod's terms score nodes: this shape's scores are its plain twin's, so
                # it starts from a copy of that heap instead of scoring a window itself.
                self._copy_heap(task, self._shape_of_key((*key[:4], None, None), task), shape)
            if shape.spread_keys:
                # Spread over domains: its windows take every domain in turn (kube-scheduler
                # lists nodes zone by zone alike), so a window offers each domain some nodes
                # instead of the few domains whose nodes sit together in name order. They
                # start over from the first: entries copied from the twin may come again,
                # as stale duplicates do.
                shape.admissible = self._interleaved(shape.admissible, shape.spread_keys[0])
                shape.cursor = shape.loaded = 0
            if not copied:
                if key[0].images and self._image_holders:
                    self._load_image_holders(task, shape, self._image_holders)
                if shape.admissible.nodes:
                    shape.cursor = self._start % len(shape.admissible.nodes)
                    self._start += self.window
        return shape

    def _interleaved(self, admissible: _Admissible, key: str) -> _Admissible:
        cache_key = (id(admissible), key)
        cached = self._by_domain.get(cache_key)
        if cached is not None and cached[0] is admissible:
            return cached[1]
        domains: dict[str, list[NodeInfo]] = {}
        unlabelled: list[NodeInfo] = []
        for node in admissible.nodes:
            value = node.labels.get(key)
            if value is None:
                unlabelled.append(node)
            else:
                domains.setdefault(value, []).append(node)
        rounds = itertools.zip_longest(*domains.values())
        nodes = [node for round_ in rounds for node in round_ if node is not None]
        interleaved = _Admissible(nodes + unlabelled, admissible.names, admissible.refusals)
        self._by_domain[cache_key] = (admissible, interleaved)
        return interleaved

    def _load_image_holders(
        self,
        task: TaskInfo,
        shape: _ShapeHeap,
        holders: Callable[[tuple[str, ...]], frozenset[str]],
    ) -> None:
        # A pod's images raise its score only on the nodes holding them: those are always
        # scored, and the rest of the shape's window is kube-scheduler's minimum sample, so
        # a session of gangs with images of their own (a shape each) scores about
        # minimum + holders nodes per gang, not a whole window each (ImageLocality).
        shape.sampled = True
        nodes = self.session.nodes
        admissible = shape.admissible.names
        for name in sorted(holders(task.placement.images)):
            if name in admissible:
                self._push(task, shape, nodes[name])

    def _copy_heap(self, task: TaskInfo, twin: _ShapeHeap, shape: _ShapeHeap) -> None:
        if not twin.heap and not twin.loaded:
            # Scored with the task itself: with no scoring terms it scores as its twin.
            self._load_window(task, twin)
        shape.heap = list(twin.heap)
        shape.cursor = twin.cursor
        shape.loaded = twin.loaded
        # `newest` starts empty: a stale copied entry is rescored once when it surfaces.
        shape.full = dict(twin.full)

    def _admissible_for(self, task: TaskInfo) -> _Admissible:
        # Images change a pod's score (ImageLocality), never what the filters say: pods
        # alike but for their images share the one admissible list.
        key = task.placement
        if key.images:
            key = dataclasses.replace(key, images=())
        cached = self._admissible.get(key)
        if cached is None:
            nodes: list[NodeInfo] = []
            refusals: list[Status] = []
            for node in self.nodes:
                status = self.session.admits(task, node)
                if status.ok:
                    nodes.append(node)
                else:
                    refusals.append(status)
            names = frozenset(node.name for node in nodes)
            cached = self._admissible[key] = _Admissible(nodes, names, refusals)
        return cached

    def _load_window(self, task: TaskInfo, shape: _ShapeHeap) -> bool:
        nodes = shape.admissible.nodes
        remaining = len(nodes) - shape.loaded
        if remaining <= 0:
            return False
        small = shape.topology or shape.sampled
        count = min(self._topology_window if small else self.window, remaining)
        # Domains set aside and asked since the last move still refuse: their nodes join
        # them unscored (scored when their domain turns).
        parked = bool(shape.parked) and shape.checked == self._moves
        for offset in range(count):
            node = nodes[(shape.cursor + offset) % len(nodes)]
            if node.name in shape.full or node.name in shape.parked_at:
                continue
            domain = _parked_domain(shape, shape.spread_keys, node) if parked else None
            if domain is not None:
                _park(shape, domain, (float("-inf"), next(self._sequence), -1, node))
            else:
                self._push(task, shape, node)
        shape.cursor = (shape.cursor + count) % len(nodes)
        shape.loaded += count
        return True

    def _push(self, task: TaskInfo, shape: _ShapeHeap, node: NodeInfo) -> None:
        score = self._score(task, node)
        shape.newest[node.name] = node.version
        heapq.heappush(shape.heap, (-score, next(self._sequence), node.version, node))

    def _push_any(self, shape: _ShapeHeap, node: NodeInfo) -> None:
        # Scored lazily: version -1 never matches, so the first pop rescores it.
        shape.newest.pop(node.name, None)
        heapq.heappush(shape.heap, (float("-inf"), next(self._sequence), -1, node))

    def _failure_message(self, task: TaskInfo, shape: _ShapeHeap) -> str:
        errors = FitErrors(len(self.nodes))
        errors.add_all(shape.admissible.refusals)
        for node in shape.admissible.nodes:
            status = self._fits(task, node)
            if not status.ok:
                errors.add(status)
        return errors.message()
