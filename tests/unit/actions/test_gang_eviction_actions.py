"""gangpreempt and gangreclaim: Volcano 1.15's names and arguments on muster's preempt and
reclaim (actions/gangpreempt.py)."""

from __future__ import annotations

import pytest

from scheduler.api.errors import ConfigError
from scheduler.api.job import JobInfo
from scheduler.engine import load_config, schedule
from scheduler.framework.config import SchedulerConfig
from tests.unit.actions.eviction_helpers import TIERS, evicted_by_job
from tests.unit.builders import gang, node, running_gang, snapshot


def actions(names: str, configurations: str = "") -> SchedulerConfig:
    return load_config(f'actions: "{names}"\n{TIERS}{configurations}')


def victim_gang_cluster() -> tuple[list[JobInfo], str]:
    victim = running_gang("victim", 2, cpu=2, priority=1, on=["n0"])
    high = gang("high", 1, cpu=2, priority=100)
    return [victim, high], victim.key


def test_gangpreempt_evicts_a_whole_gang_by_default_as_allow_whole_bundle_says() -> None:
    jobs, victim = victim_gang_cluster()
    result = schedule(
        snapshot([node("n0", cpu=4)], jobs), actions("enqueue, allocate, gangpreempt")
    )
    assert evicted_by_job(result) == {victim: 2}


def test_gangpreempt_without_whole_bundles_breaks_no_gang() -> None:
    jobs, _ = victim_gang_cluster()
    config = actions(
        "enqueue, allocate, gangpreempt",
        "configurations:\n- name: gangpreempt\n  arguments: {allowWholeBundle: false}\n",
    )
    result = schedule(snapshot([node("n0", cpu=4)], jobs), config)
    assert result.evictions == []


def test_preempt_keeps_volcanos_default_of_never_evicting_a_whole_gang() -> None:
    jobs, _ = victim_gang_cluster()
    result = schedule(snapshot([node("n0", cpu=4)], jobs), actions("enqueue, allocate, preempt"))
    assert result.evictions == []


@pytest.mark.parametrize(
    ("names", "named"),
    [
        ("enqueue, allocate, preempt, gangpreempt", "'gangpreempt' and 'preempt' cannot be used"),
        ("enqueue, allocate, reclaim, gangreclaim", "'gangreclaim' and 'reclaim' cannot be used"),
    ],
    ids=["preempt", "reclaim"],
)
def test_a_gang_action_and_the_action_it_stands_for_are_refused_together(
    names: str, named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        actions(names)


def test_max_domains_below_one_is_refused_at_load() -> None:
    with pytest.raises(ConfigError, match="action gangreclaim: argument maxDomains=0"):
        actions(
            "enqueue, allocate, gangreclaim",
            "configurations:\n- name: gangreclaim\n  arguments: {maxDomains: 0}\n",
        )


def test_volcanos_pdb_and_cdp_plugins_load() -> None:
    config = load_config(
        'actions: "enqueue, allocate, preempt"\ntiers:\n- plugins: [{name: pdb}, {name: cdp}, '
        "{name: priority}, {name: gang}]\n- plugins: [{name: predicates}, {name: proportion}]\n"
    )
    assert [p.name for p in config.tiers[0].plugins][:2] == ["pdb", "cdp"]
