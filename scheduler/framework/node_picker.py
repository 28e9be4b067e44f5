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

What makes two tasks one shape is framework/pod_shapes.py; what the picker keeps per shape
(its heap, the nodes refused by node or by domain), framework/shape_heap.py.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections.abc import Callable

from scheduler.api.node import NodeInfo
from scheduler.api.placement import PodPlacementSpec
from scheduler.api.task import TaskInfo
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.pod_shapes import (
    Shape,
    Symmetry,
    alike,
    pod_topology_of,
    scores_by_domain,
    shape_of,
    turns_yes_on_placement,
)
from scheduler.framework.session import Session
from scheduler.framework.shape_heap import Admissible, HeapEntry, ShapeHeap, park, parked_domain
from scheduler.framework.statement import Statement
from scheduler.framework.status import FitErrors, Status


def nodes_to_score(total: int, percentage: int, minimum: int) -> int:
    """How many feasible nodes to score before choosing (kube-scheduler's adaptive rule)."""
    if total <= minimum:
        return total
    if percentage <= 0:
        # 50% at 100 nodes, falling by 1% every 125 nodes, never below 5%.
        percentage = max(5, 50 - total // 125)
    return max(minimum, total * percentage // 100)


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
        self._devices = state.devices
        # Whether the node the last pick returned has room for its task now (False: it was
        # chosen for room being released, and the task is pipelined there).
        self.picked_now = False
        # The nodes this picker chooses among: every node, or one topology domain's.
        self.nodes = nodes if nodes is not None else session.node_list
        self._percentage = percentage
        self._minimum = minimum
        self.window = nodes_to_score(len(self.nodes), percentage, minimum)
        self._admissible: dict[PodPlacementSpec, Admissible] = {}
        self._shapes: dict[Shape, ShapeHeap] = {}
        self._sequence = itertools.count()
        # Where the next shape starts reading nodes, so shapes spread over the cluster.
        self._start = 0
        self._symmetry, self._topology_scores = (
            pod_terms if pod_terms is not None else pod_topology_of(session.snapshot)
        )
        # The last task given a shape, and that shape: reconsider asks for the task pick just
        # had, and the next task is usually its gang mate, alike in every object the key
        # reads, which identity tells at once. Only the last one is kept: a memo per task
        # cost a dict entry per pod, more than the key it saved (a tuple of six, hashed).
        self._previous: tuple[TaskInfo, ShapeHeap] | None = None
        # Shapes whose refused nodes a removal may turn (see ShapeHeap), and those with
        # nodes refused since the last placement that a placement may turn.
        self._topological: list[ShapeHeap] = []
        self._to_reopen: dict[int, ShapeHeap] = {}
        self._rescoring: list[ShapeHeap] = []
        # Placements and removals so far: shapes with domains set aside ask again, per
        # domain, once this moved (see ShapeHeap.parked).
        self._moves = 0
        # Admissible nodes in the order spread shapes read them, by the admissible list
        # (kept with it, so its id is not reused) and topology key.
        self._by_domain: dict[tuple[int, str], tuple[Admissible, Admissible]] = {}
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
        devices = self._devices if task.devices is not None else None
        if devices is not None:
            problem = devices.pod_problem(task, len(self.nodes))
            if problem is not None:
                # Nothing a node offers helps (a claim not made yet, a class missing).
                shape.failure = problem
                return None
        if shape.parked and shape.checked != self._moves:
            self._recheck_parked(task, shape)
        fits = self._fits
        keys = shape.spread_keys
        domains = self._spread_domains if keys else None
        parked = shape.parked
        stash: list[HeapEntry] = []
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
            domain = parked_domain(shape, keys, node) if parked else None
            if domain is not None:
                park(shape, domain, entry)  # its domain refuses the task: no need to weigh it
                continue
            if not fits(task, node).ok:
                domain = domains.refusing_domain(task, node) if domains is not None else None
                if domain is None:
                    shape.full[node.name] = entry
                else:
                    park(shape, domain, entry)
                if shape.reopens:
                    self._to_reopen[id(shape)] = shape
                continue
            if task.node_request.fits_in(node.idle) and (
                devices is None or not devices.later(task, node)
            ):
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
    def _rescore(self, shape: ShapeHeap) -> None:
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

    def _reopen(self, shape: ShapeHeap) -> None:
        if not shape.full and shape.failure is None:
            return
        shape.failure = None
        for entry in shape.full.values():
            self._offer_again(shape, entry)
        shape.full.clear()

    def _offer_again(self, shape: ShapeHeap, entry: HeapEntry) -> None:
        # A refused node back on the heap: with the entry it was refused on while the node
        # is unchanged and scores read the node alone, else scored when it surfaces.
        if entry[2] == entry[3].version and shape.rescored_for is None:
            heapq.heappush(shape.heap, entry)
        else:
            self._push_any(shape, entry[3])

    def _recheck_parked(self, task: TaskInfo, shape: ShapeHeap) -> None:
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

    def _shape(self, task: TaskInfo) -> ShapeHeap:
        previous = self._previous
        if previous is not None and (previous[0] is task or alike(previous[0], task)):
            shape = previous[1]
        else:
            shape = self._shape_of_key(shape_of(task, self._symmetry), task)
        self._previous = (task, shape)
        return shape

    def _shape_of_key(self, key: Shape, task: TaskInfo) -> ShapeHeap:
        shape = self._shapes.get(key)
        if shape is None:
            shape = ShapeHeap(self._admissible_for(task))
            shape.topology = key[4] is not None or key[5] is not None
            shape.reopens = key[4] is not None and turns_yes_on_placement(task)
            if key[4] is not None:
                shape.spread_keys = tuple(c.topology_key for c in key[4].hard_spread)
            if shape.topology:
                self._topological.append(shape)
            if key[4] is not None and scores_by_domain(task):
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

    def _interleaved(self, admissible: Admissible, key: str) -> Admissible:
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
        interleaved = Admissible(nodes + unlabelled, admissible.names, admissible.refusals)
        self._by_domain[cache_key] = (admissible, interleaved)
        return interleaved

    def _load_image_holders(
        self,
        task: TaskInfo,
        shape: ShapeHeap,
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

    def _copy_heap(self, task: TaskInfo, twin: ShapeHeap, shape: ShapeHeap) -> None:
        if not twin.heap and not twin.loaded:
            # Scored with the task itself: with no scoring terms it scores as its twin.
            self._load_window(task, twin)
        shape.heap = list(twin.heap)
        shape.cursor = twin.cursor
        shape.loaded = twin.loaded
        # `newest` starts empty: a stale copied entry is rescored once when it surfaces.
        shape.full = dict(twin.full)

    def _admissible_for(self, task: TaskInfo) -> Admissible:
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
            cached = self._admissible[key] = Admissible(nodes, names, refusals)
        return cached

    def _load_window(self, task: TaskInfo, shape: ShapeHeap) -> bool:
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
            domain = parked_domain(shape, shape.spread_keys, node) if parked else None
            if domain is not None:
                park(shape, domain, (float("-inf"), next(self._sequence), -1, node))
            else:
                self._push(task, shape, node)
        shape.cursor = (shape.cursor + count) % len(nodes)
        shape.loaded += count
        return True

    def _push(self, task: TaskInfo, shape: ShapeHeap, node: NodeInfo) -> None:
        score = self._score(task, node)
        shape.newest[node.name] = node.version
        heapq.heappush(shape.heap, (-score, next(self._sequence), node.version, node))

    def _push_any(self, shape: ShapeHeap, node: NodeInfo) -> None:
        # Scored lazily: version -1 never matches, so the first pop rescores it.
        shape.newest.pop(node.name, None)
        heapq.heappush(shape.heap, (float("-inf"), next(self._sequence), -1, node))

    def _failure_message(self, task: TaskInfo, shape: ShapeHeap) -> str:
        errors = FitErrors(len(self.nodes))
        errors.add_all(shape.admissible.refusals)
        for node in shape.admissible.nodes:
            status = self._fits(task, node)
            if not status.ok:
                errors.add(status)
        return errors.message()
