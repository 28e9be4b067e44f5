"""Moves queues' status.state (queues.py's rules) when a queue or a PodGroup naming it changes.

A queue asked to close is Closing while PodGroups it admitted remain, then Closed: what
remains is the census's (census.py) to say, so a queue's move waits until the census has
listed every PodGroup once, and the census's completion settles every closing queue. Moves
to Open need no PodGroup and are written at once.
"""

from __future__ import annotations

import asyncio
import logging

from scheduler.controller import queues as rules
from scheduler.controller.census import PodGroupCensus
from scheduler.controller.objects import ClusterObjects
from scheduler.controller.queues import QueueView

log = logging.getLogger("muster.controller")


class QueueStates:
    """The queues as last seen, and the writer of their state."""

    def __init__(self, objects: ClusterObjects, census: PodGroupCensus) -> None:
        self.objects = objects
        self.census = census
        self.views: dict[str, QueueView] = {}
        self._due: set[str] = set()
        self._wake = asyncio.Event()

    async def run(self) -> None:
        """Settle the queues whose PodGroups changed, and every one once the census is
        complete, until cancelled."""
        await self.census.wait_synced()
        self._due.update(self.views)
        while True:
            while self._due:
                name = self._due.pop()
                view = self.views.get(name)
                if view is not None:
                    await self.settle(view)
            self._wake.clear()
            await self._wake.wait()

    async def queue_changed(self, view: QueueView) -> None:
        """A queue's event (kopf): remember it and settle it."""
        self.views[view.name] = view
        await self.settle(view)

    def queue_deleted(self, name: str) -> None:
        """A queue is gone: nothing to settle."""
        self.views.pop(name, None)

    def podgroup_changed(self, queue: str) -> None:
        """A PodGroup naming `queue` came, went or changed phase: settle the queue if it is
        closing (the census calls this for every PodGroup it sees: it must be cheap)."""
        view = self.views.get(queue)
        if view is not None and rules.requested_state(view) is rules.State.CLOSED:
            self._due.add(queue)
            self._wake.set()

    async def settle(self, view: QueueView) -> None:
        """Write the queue's state if it is not what its rules say."""
        if rules.requested_state(view) is rules.State.CLOSED and not self.census.is_synced():
            return  # which PodGroups it admitted is not known yet: settled on completion
        change = rules.state_change(view, self.census.in_queue(view.name))
        if change is None:
            return
        log.info("queue is %s", change.value, extra={"queue": view.name})
        await self.objects.set_queue_state(view.name, change.value)
        self.views[view.name] = QueueView(view.name, change.value, view.requested, view.parent)
