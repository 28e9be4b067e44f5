"""Timestamps as the API server writes them."""

from __future__ import annotations

import datetime


def now_rfc3339() -> str:
    """The current time, to the second, in UTC (metav1.Time)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro() -> str:
    """The current time with microseconds (metav1.MicroTime, used by Leases)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
