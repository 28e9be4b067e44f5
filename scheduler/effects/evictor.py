"""Evictor: a preempted or reclaimed pod gets the DisruptionTarget condition, an event
naming why, and is deleted (gracefully, so it can finish its work).

A gang is evicted whole (or only members above its minMember), so an eviction that fails
for a reason that passes (5xx, 429, a broken connection, after the client's own retries)
is sent again for up to RETRY_SECONDS: giving up on one member of a whole-gang eviction
would leave that gang running below minMember for good. Each attempt asks the lease when
it is written, as binds do: a replica that lost the lease evicts nothing.
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

from scheduler.effects import paths
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


def _passing(error: BaseException) -> bool:
    return isinstance(error, TransportError) or (
        isinstance(error, StatusError) and is_retryable(error.code)
    )


class Evictor:
    """Carries out evictions decided by preempt and reclaim."""

    def __init__(
        self,
        client: KubeClient,
        recorder: EventRecorder,
        *,
        may_evict: Callable[[], bool] = lambda: True,
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.may_evict = may_evict
        self.retry_seconds = retry_seconds

    async def evict(self, eviction: Evict) -> bool:
        """Mark, announce and delete one pod; True when it is gone or going."""
        pod = f"{eviction.namespace}/{eviction.name}"

        def again(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            log.info("eviction failed, sending it again: %s", error, extra={"pod": pod})

        announced = False

        async def once() -> None:
            nonlocal announced
            await self._mark(eviction)
            if not announced:  # one event, however many attempts the delete takes
                announced = True
                self._announce(eviction)
            await self._delete(eviction)

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
            return False  # the lease was lost: the next leader decides again
        except RetryError as gave_up:
            log.warning(
                "eviction failed for %.0fs, given up: %s",
                self.retry_seconds,
                gave_up.last_attempt.exception(),
                extra={"pod": pod},
            )
            return False
        except (StatusError, TransportError) as error:
            log.warning("eviction failed: %s", error, extra={"pod": pod})
            return False
        return True

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
            "Preempted",
            eviction.reason,
        )

    async def _delete(self, eviction: Evict) -> None:
        # The uid precondition makes sure a pod recreated under the same name is spared.
        await self.client.request(
            "DELETE",
            paths.pod(eviction.namespace, eviction.name),
            body={"preconditions": {"uid": eviction.uid}},
            gate=self.may_evict,
        )
