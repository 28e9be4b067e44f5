"""Argument types plugins share, re-exported from the framework's typed arguments."""

from __future__ import annotations

from scheduler.framework.arguments import Arguments, Count, Names, NoArguments, Seconds, Weight

__all__ = ["Arguments", "Count", "Names", "NoArguments", "Seconds", "Weight"]
