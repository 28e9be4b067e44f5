"""Evictor: the evictions one preemptor's decision made, through the Eviction API.

The evictions made for one gang are sent as one group, one after another:

1. each is asked first as a dry run (`POST pods/NAME/eviction?dryRun=All`), which the
   API server answers as it would the real one, PodDisruptionBudgets included, and
   changes nothing;
2. if a budget refuses one (429 naming the budget), none of the group is sent: no gang
   is evicted in part for a preemptor that cannot be placed, and the refusal is handed
   to the cache, whose next snapshot says it on the preemptor's condition (planning
   also reads the budgets first, so this is the race of a budget that changed);
3. else each victim gets the DisruptionTarget condition and a Preempted event (the
   members of an undone partly bound gang: PartlyBoundUndoing), then its real eviction;
   one refused even so (another client evicted from its budget meanwhile) stops the rest
   of the group the same way.

An undo (actions/partly_bound.py) is a group too, named for the gang undone: a refusal is said
on that gang's condition, and it backs off before it tries again.

A victim of a whole-gang eviction given up on would leave that gang running below
minMember, so an eviction that fails for a passing reason (5xx, a rate-limiting 429,
a broken connection) is sent again for up to RETRY_SECONDS. Each attempt asks the
lease when it is written, as binds do: a replica that lost the lease evicts nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    RetryError,
    retry_if_exception,
    stop_after_delay,
    wait_exponential,
)

from scheduler.api import paths
from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.framework.decisions import Evict
from scheduler.kube.client import STRATEGIC_MERGE_PATCH, KubeClient
from scheduler.kube.clock import now_rfc3339
from scheduler.kube.errors import Fenced, NotFound, StatusError, TransportError, is_retryable

log = logging.getLogger(__name__)

# How long an eviction failing for a passing reason is sent again, and its backoff.
RETRY_SECONDS = 60.0
RETRY_BASE = 0.5
RETRY_MAX = 5.0
# The cause kube-apiserver gives when a PodDisruptionBudget refuses an eviction.
DISRUPTION_BUDGET = "DisruptionBudget"


class BudgetRefused(Exception):
    """A PodDisruptionBudget refused an eviction (429 with a DisruptionBudget cause)."""

    def __init__(self, pod: str, message: str) -> None:
        self.pod = pod
        self.message = message
        super().__init__(f"the Eviction API refused to evict {pod}: {message}")


def _budget_refusal(error: StatusError) -> str:
    """The budget's words when `error` is a PodDisruptionBudget's refusal, else ""."""
    if error.code != 429:
        return ""
    return "; ".join(message for reason, message in error.causes if reason == DISRUPTION_BUDGET)


def _passing(error: BaseException) -> bool:
    if isinstance(error, TransportError):
        return True
    return (
        isinstance(error, StatusError) and is_retryable(error.code) and not _budget_refusal(error)
    )


class Evictor:
    """Carries out evictions decided by preempt and reclaim, a preemptor's group at a time."""

    def __init__(
        self,
        client: KubeClient,
        recorder: EventRecorder,
        *,
        may_evict: Callable[[], bool] = lambda: True,
        on_refused: Callable[[str, str], None] = lambda preemptor, why: None,
        on_sent: Callable[[str], None] = lambda preemptor: None,
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.may_evict = may_evict
        # Told (preemptor, why) when a budget refuses a group: the cache keeps it for the
        # preemptor's condition; and told the preemptor when a group's dry runs passed.
        self.on_refused = on_refused
        self.on_sent = on_sent
        self.retry_seconds = retry_seconds

    async def evict_group(self, group: list[Evict]) -> list[bool]:
        """Evict a preemptor's victims, all or (as far as the API server lets it tell
        beforehand) none; per victim, whether it is gone or going."""
        gone = [False] * len(group)
        try:
            for index, eviction in enumerate(group):
                gone[index] = await self._attempt(eviction, dry_run=True)
            self.on_sent(group[0].preemptor)
            for index, eviction in enumerate(group):
                if gone[index]:
                    continue  # it went meanwhile: nothing to evict
                gone[index] = await self._attempt(eviction, dry_run=False)
        except BudgetRefused as refused:
            preemptor = group[0].preemptor
            log.warning("%s; no more of the evictions for %s are sent", refused, preemptor)
            self.on_refused(preemptor, str(refused))
        except _GivenUp:
            pass
        return gone

    async def evict(self, eviction: Evict) -> bool:
        """Evict one pod (a group of one)."""
        return (await self.evict_group([eviction]))[0]

    async def _attempt(self, eviction: Evict, *, dry_run: bool) -> bool:
        """Send one eviction (or its dry run) until it lands or fails for good: True when
        the pod is gone (404) or, for a real eviction, going; False for a dry run that
        passed. BudgetRefused on a budget's refusal; _GivenUp on any other failure."""
        pod = f"{eviction.namespace}/{eviction.name}"

        def again(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            log.info("eviction failed, sending it again: %s", error, extra={"pod": pod})

        announced = False

        async def once() -> None:
            nonlocal announced
            if not dry_run:
                await self._mark(eviction)
                if not announced:  # one event, however many attempts the eviction takes
                    announced = True
                    self._announce(eviction)
            await self._post(eviction, dry_run=dry_run)

        attempts = AsyncRetrying(
            retry=retry_if_exception(_passing),
            stop=stop_after_delay(self.retry_seconds),
            wait=wait_exponential(multiplier=RETRY_BASE, max=RETRY_MAX),
            before_sleep=again,
        )
        try:
            async for attempt in attempts:
                with attempt:
                    await once()
        except NotFound:
            return True
        except Fenced:
            raise _GivenUp from None  # the lease was lost: the next leader decides again
        except RetryError as gave_up:
            log.warning(
                "eviction failed for %.0fs, given up: %s",
                self.retry_seconds,
                gave_up.last_attempt.exception(),
                extra={"pod": pod},
            )
            raise _GivenUp from None
        except StatusError as error:
            refusal = _budget_refusal(error)
            if refusal:
                raise BudgetRefused(pod, refusal) from None
            log.warning("eviction failed: %s", error, extra={"pod": pod})
            raise _GivenUp from None
        except TransportError as error:
            log.warning("eviction failed: %s", error, extra={"pod": pod})
            raise _GivenUp from None
        return not dry_run

    async def _mark(self, eviction: Evict) -> None:
        # DisruptionTarget first, as kube-scheduler does: the pod's owner learns why it goes.
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": f"muster: {eviction.reason}",
            "lastTransitionTime": now_rfc3339(),
        }
        await self.client.patch(
            paths.pod(eviction.namespace, eviction.name) + "/status",
            {"status": {"conditions": [condition]}},
            content_type=STRATEGIC_MERGE_PATCH,
            gate=self.may_evict,
        )

    def _announce(self, eviction: Evict) -> None:
        self.recorder.record(
            ObjectRef("Pod", "v1", eviction.namespace, eviction.name, eviction.uid),
            "Normal",
            eviction.event,
            eviction.reason,
        )

    async def _post(self, eviction: Evict, *, dry_run: bool) -> None:
        # policy/v1 Eviction; the uid precondition spares a pod recreated under the name.
        options: dict[str, object] = {"preconditions": {"uid": eviction.uid}}
        if dry_run:
            options["dryRun"] = ["All"]
        await self.client.request(
            "POST",
            paths.pod(eviction.namespace, eviction.name) + "/eviction",
            params={"dryRun": "All"} if dry_run else None,
            body={
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": eviction.name, "namespace": eviction.namespace},
                "deleteOptions": options,
            },
            retry=False,
            gate=self.may_evict,
        )


class _GivenUp(Exception):
    """An eviction that failed for good (already logged): the group stops."""
