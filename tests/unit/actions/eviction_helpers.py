"""Helpers for preempt and reclaim tests: a config with both actions, evictions per job."""

from __future__ import annotations

from collections import Counter

from scheduler.engine import load_config
from scheduler.framework.config import DEFAULT_CONFIG_YAML, SchedulerConfig
from scheduler.framework.decisions import SessionResult
from tests.unit.builders import evictions_per_job

# The default config's tiers, with the actions each test names.
TIERS = DEFAULT_CONFIG_YAML[DEFAULT_CONFIG_YAML.index("tiers:") :]


def config(
    actions: str = "enqueue, allocate, preempt, reclaim, backfill", *, whole_gangs: bool = False
) -> SchedulerConfig:
    """The default tiers with these actions; `whole_gangs` turns on evictWholeGangs for
    preempt and reclaim (off by default, as in Volcano)."""
    text = f'actions: "{actions}"\n{TIERS}'
    if whole_gangs:
        text += (
            "configurations:\n"
            "- name: preempt\n  arguments: {evictWholeGangs: true}\n"
            "- name: reclaim\n  arguments: {evictWholeGangs: true}\n"
        )
    return load_config(text)


def evicted_by_job(result: SessionResult) -> Counter[str]:
    """How many pods of each job (namespace/name) the session evicts."""
    return evictions_per_job(result)
