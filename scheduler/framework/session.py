"""Session: one scheduling cycle over a snapshot, with plugin answers combined by tier.

The session holds the snapshot, the config, the views of jobs, nodes and queues, the
plugins' answers by extension point and tier (which the cycle builder, framework/cycle.py,
registers), and what the cycle decides and learns (the SessionResult). Plugins and actions
talk to the rest of the cycle only through its declared channels: their answers at the
extension points, `warn`, `report_queue_figures`, the `record_*` methods that fill the
SessionResult (nothing else writes the result while the cycle runs), and the typed fields
of the cycle's state (framework/cycle_state.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from scheduler.api.errors import FieldRefused
from scheduler.api.job import JobInfo
from scheduler.api.node import NodeInfo
from scheduler.api.placement import PodPlacementSpec
from scheduler.api.queue import QueueInfo
from scheduler.api.reasons import FIELD_NOT_HONOURED, INVALID_PODGROUP
from scheduler.api.resources import Resource
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.framework.answers import Tiered, Vote, Waiting
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.decisions import (
    Bind,
    Evict,
    InvalidObjectReport,
    QueueFigures,
    SessionResult,
)
from scheduler.framework.status import OK, Status

_NO_TIERS: Tiered = []


class Session:
    """A snapshot being scheduled, the plugin answers that judge it, and what has been decided.

    Tier rules follow Volcano: orderings take the first non-zero answer;
    filters, job-ready and allocatable need every plugin to agree; enqueueable
    and pipelined are votes (a reject wins, else the first tier with a permit);
    victims are intersected within a tier and the first tier that answers wins.
    """

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        config: SchedulerConfig,
        points: Mapping[str, Tiered] | None = None,
        *,
        allocatable_adds_up: bool = True,
    ) -> None:
        """`points`: per extension point, the plugins' answers tier by tier (none: every
        question gets the answer of no plugin); `allocatable_adds_up`: whether every plugin
        answering `allocatable` declares that its answer adds up (Plugin.allocatable_adds_up)."""
        self.snapshot = snapshot
        self.config = config
        self.jobs = snapshot.jobs
        # The jobs the session may act on: all but those the cache left settled
        # (framework/settled.py), which it reads only for their queues' figures.
        settled = snapshot.settled
        self.active_jobs: dict[str, JobInfo] = (
            {key: job for key, job in snapshot.jobs.items() if key not in settled}
            if settled
            else snapshot.jobs
        )
        self.nodes = snapshot.nodes
        self.queues = snapshot.queues
        # A stable node order, so that sampling and ties do not depend on dict history.
        self.node_list: list[NodeInfo] = sorted(self.nodes.values(), key=lambda n: n.name)
        self._result = SessionResult()
        # Filled by the queue policy (report_queue_figures), read by the status writer.
        self._queue_figures: dict[str, QueueFigures] = {}
        # Jobs enqueue sent back to Pending this session, for its own later questions.
        self._timed_out: set[str] = set()
        self._points: dict[str, Tiered] = dict(points) if points is not None else {}
        # Flattened lists for the hot paths that ignore tiers.
        self._admits = self._flat("node_admits")
        self._fits = self._flat("node_fits")
        self._scores = self._flat("node_score")
        self._on_allocate = self._flat("on_allocate")
        self._allocatable_adds_up = allocatable_adds_up
        self._on_deallocate = self._flat("on_deallocate")
        self._on_commit = self._flat("on_commit")
        self._job_keys = self._flat("job_order")
        self._task_keys = self._flat("task_order")
        self._admit_cache: dict[tuple[PodPlacementSpec, str], Status] = {}

    def _flat(self, point: str) -> list[Callable[..., Any]]:
        return [fn for tier in self._points.get(point, _NO_TIERS) for fn in tier]

    # What the session decided and learnt ------------------------------------
    @property
    def result(self) -> SessionResult:
        """What the session has decided so far (read it; write through the record_* methods)."""
        return self._result

    def record_decisions(self, binds: Iterable[Bind], evictions: Iterable[Evict]) -> None:
        """A committed statement's binds and evictions (Statement.commit calls this)."""
        self._result.binds.extend(binds)
        self._result.evictions.extend(evictions)

    def committed(self, tasks: list[TaskInfo]) -> None:
        """Tell plugins a statement committed the placements of `tasks` (Statement.commit
        calls this, after recording its decisions)."""
        for fn in self._on_commit:
            fn(tasks)

    def record_attempt(self, job: JobInfo, *, placed: bool) -> None:
        """That the session tried to place the job, and whether anything of it was placed
        (the cache backs off a job whose attempts place nothing)."""
        self._result.attempts[job.key] = placed

    def record_devices(self, task: TaskInfo, words: list[str]) -> None:
        """muster's words for why the pod's ResourceClaims found no devices (the device
        filter's, for explain and whatif)."""
        self._result.devices[task.key] = words

    def record_admission(self, job: JobInfo) -> None:
        """That enqueue admitted the job (Pending -> Inqueue); the cache times it from now."""
        self._result.admitted.append(job.key)

    def record_inqueue_timeout(self, job: JobInfo) -> None:
        """That enqueue sent the admitted job back to Pending for not starting in time."""
        self._result.dequeued.append(job.key)
        self._timed_out.add(job.key)

    def timed_out(self, job: JobInfo) -> bool:
        """Whether enqueue sent the job back to Pending this session (it is not readmitted)."""
        return job.key in self._timed_out

    def report_queue_figures(self, queue: str, figures: QueueFigures) -> None:
        """What the queue policy computed for a queue (its deserved share and request)."""
        self._queue_figures[queue] = figures

    @property
    def queue_figures(self) -> Mapping[str, QueueFigures]:
        """Per queue, what the queue policy reported this session."""
        return self._queue_figures

    # Orderings ------------------------------------------------------------
    def _first_nonzero(self, point: str, a: Any, b: Any) -> int:
        for tier in self._points.get(point, _NO_TIERS):
            for fn in tier:
                answer: int = fn(a, b)
                if answer:
                    return answer
        return 0

    def compare_queues(self, a: QueueInfo, b: QueueInfo) -> int:
        """Negative when queue a is served before b."""
        answer = self._first_nonzero("queue_order", a, b)
        if answer:
            return answer
        return -1 if a.name < b.name else (1 if a.name > b.name else 0)

    def job_key(self, job: JobInfo) -> tuple[Any, ...]:
        """The job's place in job order (smaller first): the plugins' keys in tier order,
        then older first (RFC 3339 UTC timestamps sort as strings; they have one-second
        resolution, so ties go by name, which people can predict)."""
        return (*[fn(job) for fn in self._job_keys], job.creation_timestamp, job.key)

    def compare_jobs(self, a: JobInfo, b: JobInfo) -> int:
        """Negative when job a is served before b, positive when after (job_key's order)."""
        key_a, key_b = self.job_key(a), self.job_key(b)
        return (key_a > key_b) - (key_a < key_b)

    def task_key(self, task: TaskInfo) -> tuple[Any, ...]:
        """The task's place in placement order (as job_key, by pod name)."""
        keys = self._task_keys
        if len(keys) == 1:
            # The default config's one key (priority's), without a list per task.
            return (keys[0](task), task.creation_timestamp, task.name)
        return (*[fn(task) for fn in keys], task.creation_timestamp, task.name)

    def sorted_tasks(self, tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
        """Tasks in placement order."""
        return sorted(tasks, key=self.task_key)

    # Node filtering and scoring -------------------------------------------
    def admits(self, task: TaskInfo, node: NodeInfo) -> Status:
        """The static filters' verdict, cached per placement spec and node."""
        key = (task.placement, node.name)
        cached = self._admit_cache.get(key)
        if cached is not None:
            return cached
        verdict = OK
        for fn in self._admits:
            status: Status = fn(task, node)
            if not status.ok:
                verdict = status
                break
        self._admit_cache[key] = verdict
        return verdict

    def fits(self, task: TaskInfo, node: NodeInfo) -> Status:
        """The dynamic filters' verdict: is there room on the node now."""
        for fn in self._fits:
            status: Status = fn(task, node)
            if not status.ok:
                return status
        return OK

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        """The sum of every scorer's weighted score."""
        total = 0.0
        for fn in self._scores:
            total += fn(task, node)
        return total

    def node_checks(
        self,
    ) -> tuple[Callable[[TaskInfo, NodeInfo], Status], Callable[[TaskInfo, NodeInfo], float]]:
        """`fits` and `score`, or the one plugin's method where only one answers (the
        default config: predicates, nodeorder): the node picker calls them for every node
        it weighs, and the frame of the combining method cost as much as the answer."""
        fits = self._fits[0] if len(self._fits) == 1 else self.fits
        score = self._scores[0] if len(self._scores) == 1 else self.score
        return fits, score

    # Job and queue questions ------------------------------------------------
    def job_valid(self, job: JobInfo) -> Waiting | None:
        """Why the job cannot be scheduled this session, or None; recorded on the job."""
        if job.invalid is not None:
            # A field muster refuses (api/native.py) is no mistake in the object.
            reason = (
                FIELD_NOT_HONOURED if isinstance(job.invalid, FieldRefused) else INVALID_PODGROUP
            )
            verdict: Waiting | None = Waiting(reason, str(job.invalid))
        else:
            verdict = None
            for tier in self._points.get("job_valid", _NO_TIERS):
                for fn in tier:
                    verdict = fn(job)
                    if verdict is not None:
                        break
                if verdict is not None:
                    break
        if verdict is not None:
            job.wait(verdict.reason, verdict.message)
        return verdict

    def enqueued(self, job: JobInfo) -> None:
        """Tell plugins a job became Inqueue."""
        for tier in self._points.get("on_enqueue", _NO_TIERS):
            for fn in tier:
                fn(job)

    def dequeued(self, job: JobInfo) -> None:
        """Tell plugins an Inqueue job went back to Pending."""
        for tier in self._points.get("on_dequeue", _NO_TIERS):
            for fn in tier:
                fn(job)

    def _all_agree(self, point: str, *args: Any) -> bool:
        # Plain loops: this runs for every task placed (allocatable), where a
        # generator's frame costs more than the answers.
        for tier in self._points.get(point, _NO_TIERS):
            for fn in tier:
                if not fn(*args):
                    return False
        return True

    def job_ready(self, job: JobInfo) -> bool:
        """Whether what is placed of the job may be committed (gang satisfied)."""
        return self._all_agree("job_ready", job)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Whether the queue may take the task's request now; a plugin's reason for a
        refusal is recorded on the task's job."""
        for tier in self._points.get("allocatable", _NO_TIERS):
            for fn in tier:
                answer: bool | Waiting = fn(queue, task)
                if isinstance(answer, Waiting):
                    job = self.jobs.get(task.job)
                    if job is not None:
                        job.wait(answer.reason, answer.message)
                    return False
                if not answer:
                    return False
        return True

    def allocatable_all(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        """True when the queue may take every one of `tasks` placed in turn, asked once
        with their summed request; False when that says no or cannot be told (a plugin that
        does not add up): then ask `allocatable` task by task, which says why."""
        if len(tasks) < 2 or not self._allocatable_adds_up:
            return False
        probe = tasks[0].clone()
        total = Resource()
        for task in tasks:
            total.add(task.request)
        probe.set_request(total)
        for tier in self._points.get("allocatable", _NO_TIERS):
            for fn in tier:
                # A refusal's reason is not recorded: the tasks are asked one by one next.
                if fn(queue, probe) is not True:
                    return False
        return True

    def overused(self, queue: QueueInfo) -> bool:
        """Whether any plugin finds the queue over its share."""
        return any(fn(queue) for tier in self._points.get("overused", _NO_TIERS) for fn in tier)

    def reclaim_allowed(
        self, reclaimer: TaskInfo, queue: QueueInfo, taken: Resource, unit: Resource
    ) -> bool:
        """Whether `unit` may be reclaimed from the queue for `reclaimer`, on top of `taken`."""
        return self._all_agree("reclaim_allowed", reclaimer, queue, taken, unit)

    def preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        """Whether the queue may reclaim room from other queues to place `tasks`."""
        return self._all_agree("preemptive", queue, tasks)

    def warn(self, kind: str, name: str, reason: str, message: str) -> None:
        """A Warning event on an object the session uses but cannot fully honour."""
        self._result.invalid.append(InvalidObjectReport(kind, name, message, reason))

    def job_starving(self, job: JobInfo) -> bool:
        """Whether any plugin finds the job short of what it needs."""
        return any(fn(job) for tier in self._points.get("job_starving", _NO_TIERS) for fn in tier)

    def _vote(self, point: str, job: JobInfo) -> bool:
        for tier in self._points.get(point, _NO_TIERS):
            permitted = False
            for fn in tier:
                vote: Vote | Waiting = fn(job)
                if isinstance(vote, Waiting):
                    # A reject that says why: the job carries the reason.
                    job.wait(vote.reason, vote.message)
                    return False
                if vote is Vote.REJECT:
                    return False
                if vote is Vote.PERMIT:
                    permitted = True
            if permitted:
                return True
        return True

    def job_enqueueable(self, job: JobInfo) -> bool:
        """Whether a Pending job may become Inqueue; a rejecting plugin's reason is recorded
        on the job."""
        return self._vote("job_enqueueable", job)

    def job_pipelined(self, job: JobInfo) -> bool:
        """Whether the job may keep placements that wait for resources being released."""
        return self._vote("job_pipelined", job)

    def _victims(self, point: str, actor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        for tier in self._points.get(point, _NO_TIERS):
            chosen: set[str] | None = None
            for fn in tier:
                answer: list[TaskInfo] | None = fn(actor, candidates)
                if answer is None:
                    continue
                uids = {task.uid for task in answer}
                chosen = uids if chosen is None else chosen & uids
            if chosen is not None:
                return [task for task in candidates if task.uid in chosen]
        return []

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """The candidates the preemptor may evict (inside its queue)."""
        return self._victims("preemptable", preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """The candidates of other queues the reclaimer may evict."""
        return self._victims("reclaimable", reclaimer, candidates)

    # Moving tasks (called by Statement) ------------------------------------
    def place(self, task: TaskInfo, node: NodeInfo, status: TaskStatus) -> None:
        """Put a pending task on a node as Allocated or Pipelined."""
        self.snapshot.set_task_status(task, status, node_name=node.name)
        for fn in self._on_allocate:
            fn(task)

    def unplace(self, task: TaskInfo) -> None:
        """Undo place: the task is pending again and its node has the room back."""
        self.snapshot.set_task_status(task, TaskStatus.PENDING, node_name="")
        for fn in self._on_deallocate:
            fn(task)

    def mark_releasing(self, task: TaskInfo) -> TaskStatus:
        """Start evicting a placed task; returns the status it had."""
        previous = task.status
        self.snapshot.set_task_status(task, TaskStatus.RELEASING)
        for fn in self._on_deallocate:
            fn(task)
        return previous

    def unmark_releasing(self, task: TaskInfo, previous: TaskStatus) -> None:
        """Undo mark_releasing."""
        self.snapshot.set_task_status(task, previous)
        for fn in self._on_allocate:
            fn(task)
