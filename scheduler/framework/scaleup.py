"""Scale-up: ask a cluster autoscaler for the nodes of a whole gang at once.

A gang that is admitted and still fits on no node for lack of resources (allocate left it
waiting with NotEnoughResources) gets a ProvisioningRequest (api/provisioning.py): one
PodTemplate per distinct pod shape of its pending members, and one pod set per template
counting them. An autoscaler answering it with an atomic class (cluster-autoscaler's
best-effort-atomic) adds nodes for every pod or for none, so no node is added for half a
gang. The gang's pending pods carry the consume-provisioning-request and
provisioning-class-name annotations, naming its request (or, while it waits for something
else, such as the rest of its pods or its queue's turn, the request it would get): cluster-
autoscaler leaves every pod so annotated out of its ordinary scale-up, so it never adds
nodes for part of the gang one pod at a time.

What the request's conditions make muster do (read in Kueue's order):

- none yet, Accepted: it waits; the PodGroup's ScaleUp condition names the request;
- Provisioned=False: it waits; the autoscaler found no capacity yet and tries again itself;
- Provisioned=True: allocate serves the gang first and holds the room of the nodes it
  would go on against every other gang (framework/holds.py) until it is placed;
- Failed, BookingExpired, CapacityRevoked: a new attempt after Kueue's backoff (60 s,
  doubling, at most 1800 s), up to `limit` retries; then the PodGroup says the scale-up
  failed and why.

A gang placed has its requests deleted (their templates with them). Older attempts are
deleted once a newer one is seen, never before: the attempt count is read back from the
requests, so one must always stand. Nothing lives only in memory: which request is whose
(owner reference, labels), which attempt, since when and why (conditions) are on the API
objects, so a restarted scheduler decides the same.

The `scaleup` plugin sets the policy when a session opens; without it muster asks for
nothing, and deletes the requests it made before. A PodGroup annotated
`muster.dev/scale-up: "false"` is never asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from scheduler.api.gang_state import gang_ready, may_place
from scheduler.api.job import JobInfo
from scheduler.api.native import GROUP as NATIVE_GROUP
from scheduler.api.pod_templates import PodShape, shapes, template_spec
from scheduler.api.provisioning import (
    BEST_EFFORT_ATOMIC,
    MAX_POD_SETS,
    RequestState,
    ScaleUpRequest,
    request_name,
    template_name,
)
from scheduler.api.reasons import (
    CLUSTER_FULL,
    NOT_ENOUGH_RESOURCES,
    QUEUE_FULL,
    QUEUE_SHARE_EXCEEDED,
    SCALE_UP_FAILED,
    SCALE_UP_NOT_FOUND,
    SCALE_UP_PROVISIONED,
    SCALE_UP_REQUESTED,
    SCALE_UP_RETRYING,
)
from scheduler.api.resources import Resource, describe
from scheduler.api.timestamps import format_rfc3339
from scheduler.api.verdicts import ScaleUpVerdict
from scheduler.framework.decisions import (
    AnnotatePod,
    CreateProvisioningRequest,
    DeleteProvisioningRequest,
    PodSetTemplate,
    ScaleUpReport,
    SessionResult,
)
from scheduler.framework.session import Session

# Kueue's defaults (ProvisioningRequestConfig.spec.retryStrategy): 3 retries, waiting 60 s
# before the first and twice as long before each next, at most 1800 s.
DEFAULT_RETRY_LIMIT = 3
DEFAULT_BACKOFF_BASE = 60.0
DEFAULT_BACKOFF_MAX = 1800.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often, and after how long, a request that ended is made again."""

    limit: int = DEFAULT_RETRY_LIMIT
    base: float = DEFAULT_BACKOFF_BASE
    maximum: float = DEFAULT_BACKOFF_MAX

    def delay(self, attempt: int) -> float:
        """How long after request `attempt` ended the next one is made."""
        return min(self.base * float(2 ** max(attempt - 1, 0)), self.maximum)


@dataclass(frozen=True, slots=True)
class ScaleUpPolicy:
    """What muster asks and for whom (the `scaleup` plugin's arguments)."""

    class_name: str = BEST_EFFORT_ATOMIC
    parameters: tuple[tuple[str, str], ...] = ()
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # The queues whose gangs may be asked for; None: every queue.
    queues: frozenset[str] | None = None

    def covers(self, job: JobInfo) -> bool:
        """Whether muster may ask for nodes for the job."""
        if job.shadow or job.invalid is not None or not job.settings.scale_up:
            return False
        return self.queues is None or job.queue in self.queues


class ScaleUp:
    """One session's scale-up: which gangs have provisioned capacity (allocate serves them
    first and holds it), and, when the session closes, what to ask, retry, delete and
    annotate.

    A session policy: the cycle builder (framework/cycle.py) makes it, the cycle's state
    carries it, and the scaleup plugin sets its policy when the session opens."""

    def __init__(self, session: Session) -> None:
        self.session = session
        # What muster asks and for whom; None (the scaleup plugin is not listed): muster
        # asks for nothing, and deletes the requests it made before.
        # Writer: plugins/scaleup.py. Readers: ScaleUp itself.
        self.policy: ScaleUpPolicy | None = None
        self._provisioned: dict[str, ScaleUpRequest] | None = None

    def provisioned(self) -> dict[str, ScaleUpRequest]:
        """Per job key, oldest provisioned first: the request whose capacity was provisioned
        for a gang that is not placed yet, admitted or not (worked out once, from the
        snapshot)."""
        if self._provisioned is not None:
            return self._provisioned
        found: list[ScaleUpRequest] = []
        policy = self.policy
        jobs = self.session.jobs
        for key, requests in self.session.snapshot.scale_up_requests.items():
            latest = requests[-1]
            job = jobs.get(key)
            if latest.state is not RequestState.PROVISIONED or job is None:
                continue
            if policy is None or not policy.covers(job) or job.uid != latest.podgroup_uid:
                continue
            if not gang_ready(job):
                found.append(latest)
        found.sort(key=lambda request: (request.since, request.key))
        self._provisioned = {request.key: request for request in found}
        return self._provisioned

    def decide(self, result: SessionResult, held_for: Callable[[JobInfo], str]) -> None:
        """What the session's end means for every gang's requests (the session is closing;
        holds are still in place, and `held_for` says what the room held for a gang holds,
        for the provisioned gangs' conditions: framework/holds.py's Holds.held_for)."""
        session = self.session
        by_job = session.snapshot.scale_up_requests
        for key, requests in by_job.items():
            job = session.jobs.get(key)
            for request in requests:
                if job is None or job.uid != request.podgroup_uid:
                    # Its PodGroup is gone (the garbage collector deletes it too; a server
                    # without one does not).
                    _delete(result, request, "its PodGroup is gone")
        if self.policy is None and not by_job:
            return  # no gang may ask and none has asked
        for job in session.jobs.values():
            if job.shadow or job.invalid is not None:
                continue
            own = tuple(r for r in by_job.get(job.key, ()) if r.podgroup_uid == job.uid)
            if own or self._may_ask(job):
                self._decide(job, own, result, held_for)

    # Per gang -------------------------------------------------------------------
    def _may_ask(self, job: JobInfo) -> bool:
        policy = self.policy
        return policy is not None and policy.covers(job)

    def _decide(
        self,
        job: JobInfo,
        own: tuple[ScaleUpRequest, ...],
        result: SessionResult,
        held_for: Callable[[JobInfo], str],
    ) -> None:
        policy = self.policy
        if gang_ready(job) or not job.pending_tasks():
            for request in own:
                _delete(result, request, "its gang is placed")
            # Members beyond the gang go one by one, as any pod: an autoscaler may add
            # nodes for them.
            self._annotate(job, "", "", result)
            return
        if policy is None or not policy.covers(job):
            for request in own:
                _delete(result, request, "scale-up is off for it")
            self._annotate(job, "", "", result)
            return
        latest = own[-1] if own else None
        for request in own[:-1]:
            _delete(result, request, f"attempt {latest.attempt if latest else 0} replaces it")
        if latest is None:
            if _needs_capacity(job, self.session):
                self._ask(job, 1, policy, result)
            else:
                # It waits for something else (its pods, its queue): its pods name the
                # request it would get, so that no autoscaler adds nodes for some of them.
                self._annotate(
                    job, request_name(job.name, 1, native=job.native), policy.class_name, result
                )
            return
        if not latest.state.ended:
            self._say_standing(job, latest, result, held_for)
            return
        if latest.attempt > policy.retry.limit:
            attempts = latest.attempt
            self._report(job, latest, "failed", result)
            job.scale_up = ScaleUpVerdict(
                "False",
                SCALE_UP_FAILED,
                f"no capacity after {attempts} {'attempt' if attempts == 1 else 'attempts'}: "
                f"{_ended(latest)}; delete the request to try again",
            )
            self._annotate(job, latest.name, latest.class_name, result)
            return
        due = latest.since + policy.retry.delay(latest.attempt)
        if self.session.snapshot.now >= due and _needs_capacity(job, self.session):
            self._ask(job, latest.attempt + 1, policy, result)
            return
        self._report(job, latest, "retrying", result)
        job.scale_up = ScaleUpVerdict(
            "True",
            SCALE_UP_RETRYING,
            f"{_ended(latest)}; attempt {latest.attempt + 1} of {policy.retry.limit + 1} "
            f"is asked at {format_rfc3339(due)} if the gang still fits nowhere",
        )
        self._annotate(job, latest.name, latest.class_name, result)

    def _ask(
        self, job: JobInfo, attempt: int, policy: ScaleUpPolicy, result: SessionResult
    ) -> None:
        pending = self.session.sorted_tasks(job.pending_tasks())
        found = shapes(pending)
        if len(found) > MAX_POD_SETS:
            job.scale_up = ScaleUpVerdict(
                "False",
                SCALE_UP_FAILED,
                f"its {len(pending)} pending pods have {len(found)} distinct shapes (requests, "
                f"node and pod constraints), more than the {MAX_POD_SETS} pod sets a "
                "ProvisioningRequest holds; nothing is asked",
            )
            return
        name = request_name(job.name, attempt, native=job.native)
        pod_sets = tuple(
            PodSetTemplate(template_name(name, index), count, template_spec(shape))
            for index, (shape, count) in enumerate(found)
        )
        result.provisioning_requests.append(
            CreateProvisioningRequest(
                namespace=job.namespace,
                name=name,
                podgroup=job.name,
                podgroup_uid=job.uid,
                attempt=attempt,
                class_name=policy.class_name,
                parameters=policy.parameters,
                pod_sets=pod_sets,
                podgroup_api_version=(f"{NATIVE_GROUP}/{job.native_version}" if job.native else ""),
            )
        )
        result.scale_ups.append(
            ScaleUpReport(
                job.key,
                "asked",
                name,
                attempt,
                tuple((count, shape.request) for shape, count in found),
            )
        )
        job.scale_up = ScaleUpVerdict(
            "True",
            SCALE_UP_REQUESTED,
            f"asked for room for its {len(pending)} pending pods at once: ProvisioningRequest "
            f"{name} (attempt {attempt}, class {policy.class_name}, "
            f"{_adds(found)}); no autoscaler has answered yet",
        )
        self._annotate(job, name, policy.class_name, result)

    def _say_standing(
        self,
        job: JobInfo,
        request: ScaleUpRequest,
        result: SessionResult,
        held_for: Callable[[JobInfo], str],
    ) -> None:
        """The verdict on a gang whose latest request has not ended."""
        named = f"ProvisioningRequest {request.name} (attempt {request.attempt})"
        state = request.state
        if state is RequestState.PROVISIONED:
            holding = held_for(job)
            held = f": {holding}" if holding else ""
            self._report(job, request, "provisioned", result)
            job.scale_up = ScaleUpVerdict(
                "True",
                SCALE_UP_PROVISIONED,
                f"{named} is provisioned ({request.reason}); its room is held for the gang "
                f"against every other gang until it is placed{held}",
            )
        elif state is RequestState.NOT_FOUND:
            self._report(job, request, "pending", result)
            job.scale_up = ScaleUpVerdict(
                "True",
                SCALE_UP_NOT_FOUND,
                f"{named}: the autoscaler found no capacity for all {request.count} pods yet "
                f"({request.reason}: {request.message}); it tries again",
            )
        else:
            answer = (
                "accepted; the autoscaler is looking for capacity"
                if state is RequestState.ACCEPTED
                else "no autoscaler has answered yet"
            )
            self._report(job, request, "pending", result)
            job.scale_up = ScaleUpVerdict(
                "True",
                SCALE_UP_REQUESTED,
                f"asked for room for {request.count} pods at once: {named}, class "
                f"{request.class_name}; {answer}",
            )
        self._annotate(job, request.name, request.class_name, result)

    def _report(
        self, job: JobInfo, request: ScaleUpRequest, state: str, result: SessionResult
    ) -> None:
        pending = self.session.sorted_tasks(job.pending_tasks())
        adds = tuple((count, shape.request) for shape, count in shapes(pending))
        result.scale_ups.append(ScaleUpReport(job.key, state, request.name, request.attempt, adds))

    @staticmethod
    def _annotate(job: JobInfo, request: str, class_name: str, result: SessionResult) -> None:
        """The pending pods' annotations name `request` ("" removes muster's)."""
        for task in job.pending_tasks():
            current = task.scale_up_request
            if current == request:
                continue
            if not request and not _made_by_muster(job, current):
                continue  # another client's (Kueue's): not muster's to remove
            result.pod_annotations.append(
                AnnotatePod(task.namespace, task.name, task.uid, job.key, request, class_name)
            )


def _needs_capacity(job: JobInfo, session: Session) -> bool:
    """Whether the gang waits for nodes there are not: it was tried this session and no
    node had room; or it waits for admission or its queue's share while its pending pods
    ask more than all the nodes' allocatable together (its queue allowing that much), which
    no turn of its queue would ever give it."""
    if job.pipelined_count():
        return False
    if job.wait_reason == NOT_ENOUGH_RESOURCES:
        return may_place(job, session.config.actions)
    if job.wait_reason not in _CLUSTER_TOO_SMALL:
        return False
    need = Resource()
    for task in job.pending_tasks():
        need.add(task.request)
    total = session.snapshot.allocatable(session.node_list)
    if need.less_equal(total):
        return False
    queue = session.queues.get(job.queue)
    capability = queue.capability if queue is not None else None
    return capability is None or need.less_equal(capability, missing_is_infinite=True)


# Why a gang waits that a larger cluster may end: admission's room (enqueue), the queue's
# share or its admission limit (proportion and capacity size both from the nodes there are).
_CLUSTER_TOO_SMALL = frozenset({CLUSTER_FULL, QUEUE_FULL, QUEUE_SHARE_EXCEEDED})


def _made_by_muster(job: JobInfo, request: str) -> bool:
    """Whether a pod's annotation names one of muster's requests for the gang."""
    stem = request.removesuffix("-native") if job.native else request
    attempt = stem.rpartition("-")[2]
    return attempt.isdigit() and request == request_name(job.name, int(attempt), native=job.native)


def _delete(result: SessionResult, request: ScaleUpRequest, why: str) -> None:
    result.provisioning_deletions.append(
        DeleteProvisioningRequest(
            request.namespace,
            request.name,
            request.podgroup,
            request.templates,
            why,
            request.podgroup_api_version,
        )
    )


def _ended(request: ScaleUpRequest) -> str:
    what = {
        RequestState.FAILED: "failed",
        RequestState.EXPIRED: "had its booking expire before the gang was placed",
        RequestState.REVOKED: "had its capacity revoked",
    }[request.state]
    detail = f" ({request.reason}: {request.message})" if request.reason else ""
    return f"ProvisioningRequest {request.name} {what}{detail}"


def _adds(found: Iterable[tuple[PodShape, int]]) -> str:
    return "; ".join(f"{count} x {describe(shape.request)}" for shape, count in found)
