"""Evictor: a preempted or reclaimed pod gets the DisruptionTarget condition, an event
naming why, and is deleted (gracefully, so it can finish its work)."""

from __future__ import annotations

import logging

from scheduler.effects import paths
from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.framework.decisions import Evict
from scheduler.kube.client import STRATEGIC_MERGE_PATCH, KubeClient
from scheduler.kube.clock import now_rfc3339
from scheduler.kube.errors import NotFound, StatusError, TransportError

log = logging.getLogger(__name__)


class Evictor:
    """Carries out evictions decided by preempt and reclaim."""

    def __init__(self, client: KubeClient, recorder: EventRecorder) -> None:
        self.client = client
        self.recorder = recorder

    async def evict(self, eviction: Evict) -> bool:
        """Mark, announce and delete one pod; True when it is gone or going."""
        path = paths.pod(eviction.namespace, eviction.name)
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": f"muster: {eviction.reason}",
            "lastTransitionTime": now_rfc3339(),
        }
        try:
            await self.client.patch(
                path + "/status",
                {"status": {"conditions": [condition]}},
                content_type=STRATEGIC_MERGE_PATCH,
            )
            self.recorder.record(
                ObjectRef("Pod", "v1", eviction.namespace, eviction.name, eviction.uid),
                "Normal",
                "Preempted",
                eviction.reason,
            )
            # The uid precondition makes sure a pod recreated under the same name is spared.
            await self.client.request("DELETE", path, body={"preconditions": {"uid": eviction.uid}})
        except NotFound:
            return True
        except (StatusError, TransportError) as error:
            log.warning(
                "eviction failed: %s", error, extra={"pod": f"{eviction.namespace}/{eviction.name}"}
            )
            return False
        return True
