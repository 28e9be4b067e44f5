"""What plugins answer that the session combines: votes, reasons to wait, sort keys.

Below both the session (which reads the answers) and the Plugin contract (whose extension
points return them), so neither imports the other for them."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# A job's or task's place in an order: a number, or a tuple of numbers and strings.
SortKey = float | str | tuple[float | str, ...]

# The plugins' answers at one extension point, tier by tier, each tier's in the config's
# order (the session combines them by the point's tier rule).
Tiered = list[list[Callable[..., Any]]]


class Vote(enum.IntEnum):
    """An answer to a yes/no question that a plugin may abstain from."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


@dataclass(frozen=True, slots=True)
class Waiting:
    """Why a job cannot be scheduled now: a CamelCase reason and a message for users."""

    reason: str
    message: str
