"""Helpers for preempt and reclaim tests: running gangs and a config with both actions."""

from __future__ import annotations

from scheduler.api.job import JobInfo, PodGroupPhase
from scheduler.api.task import TaskStatus
from scheduler.engine import load_config
from scheduler.framework.config import DEFAULT_CONFIG_YAML, SchedulerConfig

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


def running(job: JobInfo, *nodes: str) -> JobInfo:
    """Put the job's pods on the given nodes (cycled) as Running; the gang Running."""
    for index, member in enumerate(sorted(job.tasks.values(), key=lambda t: t.name)):
        job.set_task_status(member, TaskStatus.RUNNING)
        member.node_name = nodes[index % len(nodes)]
    job.phase = job.observed_phase = PodGroupPhase.RUNNING
    return job


def evicted_by_job(result: object) -> dict[str, int]:
    counts: dict[str, int] = {}
    for evict in result.evictions:  # type: ignore[attr-defined]
        counts[evict.job] = counts.get(evict.job, 0) + 1
    return counts
