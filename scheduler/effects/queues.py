"""Creating a Queue that must exist (the default queue), shared by scheduler and controller."""

from __future__ import annotations

import logging

from scheduler.api.names import GROUP, VERSION
from scheduler.effects import paths
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import Conflict

log = logging.getLogger(__name__)


async def create_queue_if_missing(client: KubeClient, name: str) -> None:
    """Create the Queue with Volcano's defaults (weight 1, reclaimable); existing is fine."""
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, "reclaimable": True},
    }
    try:
        await client.create(f"{paths.GROUP_PATH}/queues", body)
        log.info("created queue %s", name, extra={"queue": name})
    except Conflict:
        pass
