"""Timestamps as sim's API writes them."""

from __future__ import annotations

import time


def now_rfc3339(offset: float = 0.0) -> str:
    """A timestamp as the API writes them (second precision, UTC)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + offset))
