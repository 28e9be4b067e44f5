"""RFC 3339 timestamps as Kubernetes writes them, to and from epoch seconds (no clock)."""

from __future__ import annotations

import functools
from datetime import UTC, datetime


@functools.lru_cache(maxsize=8)
def format_rfc3339(epoch: float) -> str:
    """ "2026-01-01T00:00:00Z" for an epoch time; "" for 0 (a time nobody set). Cached: a
    session stamps every PodGroup's conditions with its one time."""
    if epoch <= 0:
        return ""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.lru_cache(maxsize=16384)
def parse_rfc3339(text: str | None) -> float | None:
    """Epoch seconds of an RFC 3339 time, None when absent or unreadable. Cached: every
    session asks it of each waiting gang's creation time (framework/holds.py), and
    gangs created in the same second share one."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
