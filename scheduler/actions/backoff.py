"""Backoff: how long a gang that failed to place waits before it is tried again.

Allocate's arguments (`backoff-base`, `backoff-max`, Volcano's names and defaults) set it;
allocate skips a gang whose backoff runs, and preempt and reclaim honour the same backoff,
so a gang that fails is not retried by another action meanwhile. The failures come from
the snapshot (the cache counts them), and time only as the snapshot's `now`."""

from __future__ import annotations

from pydantic import Field

from scheduler.api.job import JobInfo
from scheduler.framework.arguments import Arguments, Seconds
from scheduler.framework.session import Session

# Volcano's defaults for retrying a gang that failed to place.
DEFAULT_BACKOFF_BASE = 1.0
DEFAULT_BACKOFF_MAX = 10.0


class Backoff(Arguments):
    """How long a gang that failed to place waits before it is tried again (allocate's
    arguments; preempt and reclaim honour the same backoff)."""

    backoff_base: Seconds = Field(DEFAULT_BACKOFF_BASE, alias="backoff-base")
    backoff_max: Seconds = Field(DEFAULT_BACKOFF_MAX, alias="backoff-max")


_DEFAULT_BACKOFF = Backoff.model_validate({})


def retry_due(session: Session, job: JobInfo) -> bool:
    """Whether a job that failed to place before may be tried again now (exponential backoff).

    Nominated jobs (holding released room) are always due."""
    failures = session.snapshot.failures.get(job.key)
    if failures is None or job.key in session.snapshot.nominated:
        return True
    settings = session.config.action_settings("allocate")
    backoff = settings if isinstance(settings, Backoff) else _DEFAULT_BACKOFF
    delay = min(backoff.backoff_max, backoff.backoff_base * 2 ** min(failures.count - 1, 30))
    due: bool = session.snapshot.now >= failures.last + delay
    return due
