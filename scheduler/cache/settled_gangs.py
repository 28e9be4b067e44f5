"""SettledGangs: the gangs the last sessions left settled (framework/settled.py), kept until
something that could move them changes, and what they add to their queues, summed per queue.

An event about a gang itself (its PodGroup, its pods, a bind of its pods) unsettles that
gang (`touch`); a change to the cluster's room or rules (a node, a pod leaving a node, a
queue, a policy object, a PodGroup's spec going or changing) or to a gang holding room
unsettles them all (`unsettle`). The sums per queue (SettledTotals) move as gangs settle and
unsettle, so a session reads a queue's settled gangs as one figure. A snapshot shares the
settled gangs only while the last whole one (nothing settled) is younger than
WHOLE_SESSION_SECONDS, so the clock's rules are never later than that.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from scheduler.api.job import JobInfo
from scheduler.api.snapshot import SettledJob, SettledPart, SettledTotals
from scheduler.framework.settled import WHOLE_SESSION_SECONDS


class SettledGangs:
    """The settled gangs by job key, what each adds to its queue's figures, those figures
    summed per queue, the gangs holding room, and when the last whole snapshot was taken."""

    def __init__(self) -> None:
        self._jobs: dict[str, SettledJob] = {}
        self._parts: dict[str, SettledPart] = {}
        self._totals: dict[str, SettledTotals] = {}
        self._holders: frozenset[str] = frozenset()
        # When the last snapshot that settled nothing was taken (epoch seconds).
        self._whole_at = 0.0

    def shared_at(self, now: float) -> bool:
        """Whether a snapshot at `now` shares settled gangs: there are some, and the last
        whole snapshot is less than WHOLE_SESSION_SECONDS old."""
        return bool(self._jobs) and now - self._whole_at < WHOLE_SESSION_SECONDS

    def jobs(self) -> Mapping[str, SettledJob]:
        """The settled gangs, as one session reads them while the cache's move on."""
        return MappingProxyType(dict(self._jobs))

    def totals(self) -> dict[str, SettledTotals]:
        """Each queue's settled gangs summed, copied for one session."""
        return {queue: total.copy() for queue, total in self._totals.items()}

    def whole(self, now: float) -> None:
        """A snapshot at `now` settles nothing: the clock's rules are due again."""
        self.unsettle()
        self._whole_at = now

    def settle(
        self,
        settled: Mapping[str, SettledJob],
        jobs: Mapping[str, JobInfo],
        holders: frozenset[str],
    ) -> None:
        """The gangs a session left settled replace those before (those of `jobs`, the
        cache's records, only); their queues' totals move by the gangs that came and went.
        `holders` are the gangs the session held room for."""
        parts = self._parts
        for key in self._jobs.keys() - settled.keys():
            self._count(parts.pop(key), -1)
        kept: dict[str, SettledJob] = {}
        for key, known in settled.items():
            job = jobs.get(key)
            if job is None:
                continue
            kept[key] = known
            if key not in parts:
                part = parts[key] = SettledPart.of(job, known)
                self._count(part, 1)
        self._jobs = kept
        self._holders = holders

    def unsettle(self) -> None:
        """The cluster's room or rules changed: no gang stays settled."""
        self._jobs.clear()
        self._parts.clear()
        self._totals.clear()

    def touch(self, job: str) -> None:
        """An event about the gang itself: it is settled no more (nor is anything, when it
        held room for starving: the next gang to hold is chosen anew)."""
        if job in self._holders:
            self.unsettle()
        if self._jobs.pop(job, None) is not None:
            self._count(self._parts.pop(job), -1)

    def _count(self, part: SettledPart, sign: int) -> None:
        total = self._totals.get(part.queue)
        if total is None:
            total = self._totals[part.queue] = SettledTotals()
        total.count(part, sign)
