"""Volcano's `predicateErrorCacheEnable` action argument, which allocate, backfill, preempt
and reclaim accept: muster caches filter verdicts whatever it says, so it changes nothing."""

from __future__ import annotations

from pydantic import Field

from scheduler.framework.arguments import Arguments


class PredicateErrorCache(Arguments):
    """The switch of Volcano's cache of predicate errors per pod template: muster's node
    picker keeps every node's verdict per pod shape for the session (and the static
    filters' per placement spec) whatever the switch says."""

    predicate_error_cache: bool | None = Field(None, alias="predicateErrorCacheEnable")

    def load_notes(self) -> list[str]:
        """The switch changes nothing."""
        notes = super().load_notes()
        if self.predicate_error_cache is not None:
            notes.append(
                "predicateErrorCacheEnable changes nothing: muster always keeps each node's "
                "verdict per pod shape for the session"
            )
        return notes
