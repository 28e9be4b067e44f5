"""The Plugin interface: one optional, typed method per extension point.

A plugin implements only the points it cares about; the cycle builder
(framework/cycle.py) asks which methods a plugin class overrides and registers them on the
session, which combines them by tier (framework/session.py writes the tier rules once). A
plugin class declares its arguments model as its type parameter
(`Plugin[BinpackArguments]`), and is checked when it is defined, as kube-scheduler's
`var _ FilterPlugin = &Fit{}` is at compile time: a public method that looks like an
extension point but is none (a misspelling the session would never call), or an override
with the wrong parameters, is a TypeError. A new plugin object is made for every session,
so its fields are that session's state and nothing leaks from one cycle into the next;
what it shares with the actions and other plugins goes through the cycle's state
(framework/cycle_state.py), which it gets when the session opens.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from typing import Any, ClassVar

from scheduler.api.job import JobInfo
from scheduler.api.node import NodeInfo
from scheduler.api.queue import QueueInfo
from scheduler.api.resources import Resource
from scheduler.api.task import TaskInfo
from scheduler.framework.answers import SortKey, Vote, Waiting
from scheduler.framework.arguments import A, Configurable
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.session import Session
from scheduler.framework.status import OK, Status


class Plugin(Configurable[A]):
    """Base of every plugin; override the extension points the policy needs."""

    kind: ClassVar[str] = "plugin"
    # Set by a plugin whose `allocatable` says yes to a request only if it would to every
    # smaller one, and whose figures move during a session only by the requests placed:
    # then a yes to the summed requests of a gang's pods is a yes to each of them placed in
    # turn, and the session asks once per gang (Session.allocatable_all).
    allocatable_adds_up: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_extension_points(cls)

    def unused_points(self) -> frozenset[str]:
        """The extension points the class implements that these arguments do not need
        (the session never calls them): a score whose weight is 0, say. Asked once, when
        the cycle opens (framework/cycle.py)."""
        return frozenset()

    # Lifecycle: the session and the cycle's state come here; the extension points below
    # read what the plugin kept of them.
    def on_session_open(self, session: Session, state: CycleState) -> None:
        """Read the snapshot, set up this session's state, and write the cycle state's
        fields this plugin is the writer of."""

    def on_session_close(self, session: Session, state: CycleState) -> None:
        """Release per-session state."""

    # Ordering. The queue order compares two queues: negative when a comes first,
    # positive when b does, 0 to defer (shares in a hierarchy compare at the two queues'
    # common ancestor, which no key per queue can say). Job and task orders are sort
    # keys, smaller first, the same key for all to defer: jobs and tasks are many, and
    # a key is computed once per item where a comparison runs for every pair a heap or
    # a sort looks at. Tiers combine keys as Volcano combines comparisons: the first
    # plugin whose keys differ decides.
    def queue_order(self, a: QueueInfo, b: QueueInfo) -> int:
        """Which queue is served first."""
        return 0

    def job_order(self, job: JobInfo) -> SortKey:
        """Where the job stands among its queue's jobs (smaller is served first)."""
        return 0

    def task_order(self, task: TaskInfo) -> SortKey:
        """Where the task stands among its job's tasks (smaller is placed first)."""
        return 0

    # Node filtering and scoring
    def node_admits(self, task: TaskInfo, node: NodeInfo) -> Status:
        """Static filter: may depend only on task.placement and the node's labels, taints and
        conditions, never on what is placed on it; the session caches the verdict."""
        return OK

    def node_fits(self, task: TaskInfo, node: NodeInfo) -> Status:
        """Dynamic filter: whether the node has room for the task now (resources, ports)."""
        return OK

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """How good a node is for a task (higher is better), already weighted."""
        return 0.0

    # Gang and job questions
    def job_valid(self, job: JobInfo) -> Waiting | None:
        """Why the job cannot be scheduled at all this session, or None."""
        return None

    def job_ready(self, job: JobInfo) -> bool:
        """Whether what is placed of the job may be committed."""
        return True

    def job_pipelined(self, job: JobInfo) -> Vote:
        """Whether the job may keep its pipelined placements."""
        return Vote.ABSTAIN

    def job_enqueueable(self, job: JobInfo) -> Vote | Waiting:
        """Whether a Pending job may become Inqueue; a Waiting is a REJECT that says why
        (the session records it on the job)."""
        return Vote.ABSTAIN

    def job_starving(self, job: JobInfo) -> bool:
        """Whether the job wants more than it has (a preemptor candidate)."""
        return False

    # Queue questions
    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool | Waiting:
        """Whether the queue may take the task's request now; a Waiting refuses and says
        why (the session records it on the task's job)."""
        return True

    def overused(self, queue: QueueInfo) -> bool:
        """Whether the queue already holds more than it deserves."""
        return False

    def reclaim_allowed(
        self, reclaimer: TaskInfo, queue: QueueInfo, taken: Resource, unit: Resource
    ) -> bool:
        """Whether `unit` may be taken back from the queue for the reclaimer's task, on top
        of `taken`, what this eviction already takes from it (the queue keeps its
        deserved share). Unlike `reclaimable`, every tier's answer counts."""
        return True

    def preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        """Whether the queue may take room back from other queues to place `tasks`."""
        return True

    # Victims: None abstains; a list is the subset of candidates this plugin allows.
    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Which candidates the preemptor may evict inside its queue."""
        return None

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Which candidates of other queues the reclaimer may evict."""
        return None

    # Events: the session calls these when a statement moves a task.
    def on_allocate(self, task: TaskInfo) -> None:
        """A task got resources (allocated or pipelined) in this session."""

    def on_deallocate(self, task: TaskInfo) -> None:
        """A task gave its resources back (discard, or evicted)."""

    def on_commit(self, tasks: list[TaskInfo]) -> None:
        """A statement committed: these tasks' placements (allocated ones become binds,
        pipelined ones stay promised) are decided, and no later discard undoes them."""

    def on_enqueue(self, job: JobInfo) -> None:
        """A Pending job became Inqueue: its minResources are now reserved."""

    def on_dequeue(self, job: JobInfo) -> None:
        """An Inqueue job went back to Pending: its reservation is released."""


EXTENSION_POINTS: dict[str, str] = {
    # extension point -> Volcano's enable flag in the scheduler config
    "queue_order": "enableQueueOrder",
    "job_order": "enableJobOrder",
    "task_order": "enableTaskOrder",
    "node_admits": "enablePredicate",
    "node_fits": "enablePredicate",
    "node_score": "enableNodeOrder",
    "job_valid": "",
    "job_ready": "enableJobReady",
    "job_pipelined": "enableJobPipelined",
    "job_enqueueable": "enableJobEnqueued",
    "job_starving": "enableJobStarving",
    "allocatable": "enabledAllocatable",
    "overused": "enabledOverused",
    "reclaim_allowed": "enableReclaimable",
    "preemptive": "enablePreemptive",
    "preemptable": "enablePreemptable",
    "reclaimable": "enableReclaimable",
    "on_allocate": "",
    "on_deallocate": "",
    "on_commit": "",
    "on_enqueue": "",
    "on_dequeue": "",
}


# Methods the session calls on every plugin besides the extension points.
LIFECYCLE = ("on_session_open", "on_session_close")
# Public names that read as extension points: a plugin's helper must not start so.
_POINT_PREFIXES = ("on_", "job_", "node_", "queue_", "task_")


def implements(plugin: Plugin[Any], point: str) -> bool:
    """Whether the plugin's class overrides an extension point."""
    return getattr(type(plugin), point) is not getattr(Plugin, point)


def check_extension_points(cls: type[Plugin[Any]]) -> None:
    """Refuse a plugin class whose public method is not an extension point but reads like
    one (a misspelling the session would never call), or that overrides an extension
    point with other parameters than the point's."""
    known = [*EXTENSION_POINTS, *LIFECYCLE]
    for attribute, value in vars(cls).items():
        function = _function_of(value)
        if attribute.startswith("_") or function is None:
            continue
        if attribute in known:
            _check_parameters(cls, attribute, function)
            continue
        close = difflib.get_close_matches(attribute, known, n=1, cutoff=0.8)
        if close or attribute.startswith(_POINT_PREFIXES):
            hint = f"did you mean {close[0]}()? " if close else ""
            raise TypeError(
                f"plugin class {cls.__qualname__} (plugin {cls.name!r}) defines {attribute}(), "
                f"which is not an extension point, so no session would call it; {hint}"
                f"rename it to the point it implements, or make a helper private "
                f"(_{attribute}); the points are: {', '.join(known)}"
            )


def _function_of(value: object) -> Callable[..., Any] | None:
    if isinstance(value, staticmethod | classmethod):
        inner: Callable[..., Any] = value.__func__
        return inner
    if inspect.isfunction(value):
        return value
    return None


def _check_parameters(cls: type[Plugin[Any]], point: str, function: Callable[..., Any]) -> None:
    expected = inspect.signature(getattr(Plugin, point))
    actual = inspect.signature(function)
    kinds = [p.kind for p in actual.parameters.values()]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    wanted = len(expected.parameters)
    given = [p for p in actual.parameters.values() if p.kind in positional]
    required = [p for p in given if p.default is inspect.Parameter.empty]
    if len(required) <= wanted <= len(given):
        return
    raise TypeError(
        f"plugin class {cls.__qualname__} (plugin {cls.name!r}) defines {point}{actual}, "
        f"but the extension point is {point}{expected}; take the point's parameters"
    )
