"""The scheduler config: Volcano's YAML shape, validated, errors that name the problem."""

from __future__ import annotations

import pytest

from scheduler.api.errors import ConfigError
from scheduler.engine import default_config, load_config


def test_default_config_runs_enqueue_allocate_backfill_with_two_tiers() -> None:
    config = default_config()
    assert config.actions == ["enqueue", "allocate", "backfill"]
    assert [[p.name for p in tier.plugins] for tier in config.tiers] == [
        ["priority", "gang", "conformance"],
        ["drf", "predicates", "proportion", "nodeorder"],
    ]


def test_volcano_config_with_flags_arguments_and_configurations_loads() -> None:
    config = load_config(
        """
actions: "enqueue,allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enableJobOrder: false
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
    arguments:
      leastrequested.weight: 2
  - name: binpack
configurations:
- name: enqueue
  arguments:
    overcommit-factor: 1.5
"""
    )
    gang = config.tiers[0].plugins[1]
    assert not gang.enabled("enableJobOrder") and gang.enabled("enableJobReady")
    assert config.tiers[1].plugins[3].arguments == {"leastrequested.weight": 2}
    assert config.action_arguments("enqueue") == {"overcommit-factor": 1.5}
    assert config.action_arguments("allocate") == {}


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("actions: 'enqueue, fly'\ntiers: []", "unknown action 'fly'"),
        ("actions: allocate\ntiers:\n- plugins:\n  - name: magic", "unknown plugin 'magic'"),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enableJobOrdr: true",
            "enableJobOrdr",
        ),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enableJobOrder: maybe",
            "enableJobOrder",
        ),
        ("actions: allocate\ntiers: [", "not valid YAML"),
        ("- just\n- a list", "must be a mapping"),
        ("actions: ''\ntiers: []", "names no actions"),
        ("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: gang", "listed twice"),
    ],
)
def test_bad_config_is_refused_with_a_message_naming_the_problem(text: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        load_config(text)
