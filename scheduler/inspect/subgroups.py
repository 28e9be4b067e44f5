"""What `muster explain` says of a gang with spec.subGroupPolicy: per policy how many of
its subgroups are placed, and each subgroup's pods placed, whether it is placed whole or
waits, and why (the session's own words, JobInfo.subgroup_waits)."""

from __future__ import annotations

from typing import Any

from scheduler.api.gang_state import PLACED_STATUSES
from scheduler.api.job import JobInfo
from scheduler.api.subgroups import split


def subgroup_entries(job: JobInfo) -> list[dict[str, Any]]:
    """Each subgroup of the gang's subGroupPolicy: its policy, how many of its pods are
    placed of its subGroupSize, whether it is placed or waits, and why it waits."""
    groups, _ = split(job.subgroup_policies, job.tasks.values())
    return [
        {
            "policy": group.policy.label,
            "subgroup": group.name,
            "placed": group.placed(PLACED_STATUSES),
            "subGroupSize": group.policy.size,
            "verdict": "placed" if group.whole(PLACED_STATUSES) else "waits",
            "why": ""
            if group.whole(PLACED_STATUSES)
            else job.subgroup_waits.get(group.name, "not tried in this session"),
        }
        for group in groups
    ]


def subgroup_lines(job: JobInfo) -> list[str]:
    """The Subgroups section: per policy its counts, then each subgroup and why it waits."""
    entries = subgroup_entries(job)
    lines = ["", "Subgroups:"]
    for policy in job.subgroup_policies:
        mine = [e for e in entries if e["policy"] == policy.label]
        whole = sum(1 for e in mine if e["verdict"] == "placed")
        lines.append(
            f"  {policy.label}: {whole} of {len(mine)} subgroups of {policy.size} pods placed, "
            f"minSubGroups {policy.min_subgroups}"
        )
        for entry in mine:
            placed = f"{entry['placed']}/{entry['subGroupSize']} pods placed"
            why = f": {entry['why']}" if entry["why"] else ""
            lines.append(f"    {entry['subgroup']}: {entry['verdict']} ({placed}){why}")
    return lines
