"""Creating a Queue that must exist (the default queue), shared by scheduler and controller."""

from __future__ import annotations

import asyncio
import logging

from scheduler.api import paths
from scheduler.api.names import GROUP, VERSION
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import Conflict, StatusError, TransportError

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


async def ensure_default_queue(client: KubeClient, name: str) -> None:
    """Make the default queue exist and have a state (Open when none is set), retrying
    with a growing pause (at most 30 s) until the API server accepts both.

    Every replica does this at its start, leading or not (and the controller too): so the
    state is written only on the queue as it was read, stateless (a resourceVersion
    precondition), never over a state someone set meanwhile, nor over a leader's status."""
    failures = 0
    while True:
        try:
            await create_queue_if_missing(client, name)
            queue = await client.get_json(paths.queue(name))
            if not (queue.get("status") or {}).get("state"):
                version = (queue.get("metadata") or {}).get("resourceVersion")
                body = {"metadata": {"resourceVersion": version}, "status": {"state": "Open"}}
                await client.patch(paths.queue(name) + "/status", body)
            return
        except Conflict:
            continue  # it changed since it was read: read it again
        except (StatusError, TransportError) as error:
            failures += 1
            log.warning("default queue %s not ready: %s", name, error)
            await asyncio.sleep(min(30.0, 0.5 * failures))
