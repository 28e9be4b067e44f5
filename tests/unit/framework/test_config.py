"""The scheduler config: Volcano's YAML shape, validated, errors that name the problem."""

from __future__ import annotations

import pytest

from scheduler.api.errors import ConfigError
from scheduler.api.podgroup import PodGroupPhase
from scheduler.engine import default_config, load_config, schedule
from scheduler.plugins.nodeorder_arguments import NodeOrderArguments
from tests.unit.builders import gang, node, queue, resources, running_gang, snapshot


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


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: nodeorder\n"
            "    arguments: {leastrequested.weight: heavy}",
            "plugin nodeorder: argument leastrequested.weight='heavy' is not a number",
        ),
        (
            "actions: enqueue\ntiers: []\nconfigurations:\n- name: enqueue\n"
            "  arguments: {overcommit-factor: lots}",
            "action enqueue: argument overcommit-factor='lots' is not a number",
        ),
        (
            "actions: allocate\ntiers: []\nconfigurations:\n- name: allocate\n"
            "  arguments: {percentageOfNodesToScore: 1, minFeasibleNodesToFind: 0}",
            "action allocate: argument minFeasibleNodesToFind=0",
        ),
        (
            "actions: allocate\ntiers: []\nconfigurations:\n- name: allocate\n"
            "  arguments: {percentageOfNodesToScore: 150}",
            "percentageOfNodesToScore=150",
        ),
        (
            "actions: allocate\ntiers: []\nconfigurations:\n- name: allocate\n"
            "  arguments: {percentageOfNodesToScore: 'inf'}",
            "action allocate: argument percentageOfNodesToScore='inf' is not a finite number",
        ),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: nodeorder\n"
            "    arguments: {leastrequested.weight: 'nan'}",
            "plugin nodeorder: argument leastrequested.weight='nan' is not a finite number",
        ),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: nodeorder\n"
            "    arguments: {leastrequested.wieght: 2}",
            "leastrequested.wieght=2 is not an argument of plugin nodeorder; known arguments:",
        ),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: overcommit\n"
            "    arguments: {overcommit-factor: 0.5}",
            "plugin overcommit: argument overcommit-factor=0.5",
        ),
        (
            "actions: preempt\ntiers: []\nconfigurations:\n- name: preempt\n"
            "  arguments: {evictWholeGangs: 'yes'}",
            "action preempt: argument evictWholeGangs='yes'",
        ),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: sla\n"
            "    arguments: {sla-waiting-time: 1x}",
            "plugin sla: argument sla-waiting-time='1x' is not a duration",
        ),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: sla\n"
            "    arguments: {sla-waiting-time: 0s}",
            "plugin sla: argument sla-waiting-time='0s'",
        ),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: tdm",
            "Volcano's plugin 'tdm', which muster does not have: remove it",
        ),
        ("actions: 'enqueue, reserve, allocate'\ntiers: []", "Volcano's action 'reserve'"),
    ],
)
def test_bad_argument_is_refused_at_load_naming_plugin_argument_and_value(
    text: str, named: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(text)
    assert named in str(raised.value)


# Volcano's stock volcano-scheduler.conf (installer/helm/chart/volcano/config), as shipped.
VOLCANO_STOCK_CONFIG = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


def test_volcano_stock_config_loads_and_schedules() -> None:
    config = load_config(VOLCANO_STOCK_CONFIG)
    job = gang("a", 2, phase=PodGroupPhase.PENDING)
    result = schedule(snapshot([node("n1", cpu=4)], [job]), config)
    assert len(result.binds) == 2


def test_volcano_spellings_of_extension_switches_load() -> None:
    config = load_config(
        "actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    enabledClusterOrder: false\n"
        "    enableJobStarving: false\n    enablePreemptable: false\n"
        "    enabledHyperNodeOrder: false\n    enableReservedNodes: false\n"
    )
    drf = config.tiers[0].plugins[0]
    assert not drf.enabled("enableJobStarving") and not drf.enabled("enablePreemptable")


def test_overcommit_plugin_sets_the_enqueue_factor() -> None:
    # 10 cpu, 6 in use: a factor of 2 leaves 14 cpu to admit 8 of minResources; 1.2 leaves 6.
    text = VOLCANO_STOCK_CONFIG.replace(
        "  - name: overcommit\n", "  - name: overcommit\n    arguments: {overcommit-factor: 2}\n"
    )

    def phase_of_big(config_text: str) -> PodGroupPhase:
        busy = running_gang("busy", 6, queue="other", on=["n1"])
        big = gang("big", 8, phase=PodGroupPhase.PENDING, min_resources=resources(8))
        snap = snapshot([node("n1", cpu=10)], [busy, big], [queue("other")])
        result = schedule(snap, load_config(config_text))
        return next(u.phase for u in result.podgroups if u.name == "big")

    assert phase_of_big(text) is PodGroupPhase.INQUEUE
    assert phase_of_big(VOLCANO_STOCK_CONFIG) is PodGroupPhase.PENDING


def test_arguments_are_parsed_once_when_the_config_loads() -> None:
    config = load_config(
        "actions: allocate\ntiers:\n- plugins:\n  - name: nodeorder\n"
        "    arguments: {leastrequested.weight: '3'}"
    )
    parsed = config.tiers[0].plugins[0].parsed_arguments
    assert isinstance(parsed, NodeOrderArguments)
    assert parsed.least_requested_weight == 3.0


@pytest.mark.parametrize(
    ("plugin", "switch"),
    [
        ("gang", "enabledSubJobReady"),
        ("gang", "enabledSubJobPipelined"),
        ("priority", "enabledSubJobOrder"),
        ("network-topology-aware", "enabledHyperNodeGradient"),
        ("network-topology-aware", "enabledHyperNodeOrder"),
    ],
)
def test_a_switch_of_what_muster_always_does_is_refused_off_and_loads_on(
    plugin: str, switch: str
) -> None:
    text = f"actions: allocate\ntiers:\n- plugins:\n  - name: {plugin}\n    {switch}: %s\n"
    with pytest.raises(ConfigError) as caught:
        load_config(text % "false")
    assert f"{switch}: false cannot be honoured" in str(caught.value)
    assert load_config(text % "true").notes == []


def test_switches_that_change_nothing_load_and_are_said_in_the_notes() -> None:
    config = load_config(
        "actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    enableBestNode: true\n"
        "    EnabledClusterOrder: true\n    enabledSubJobReady: false\n    enableHierarchy: true\n"
        "metrics:\n  type: prometheus\n  address: http://prometheus:9090\n"
    )
    notes = "\n".join(config.notes)
    assert "tiers[0] plugin drf: enableBestNode changes nothing" in notes
    assert "EnabledClusterOrder changes nothing" in notes
    assert "enabledSubJobReady changes nothing: only the gang plugin answers it" in notes
    assert "enableHierarchy changes nothing" in notes
    assert "metrics: changes nothing" in notes


def test_volcanos_numa_aware_plugin_is_refused_by_its_name() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config("actions: allocate\ntiers:\n- plugins:\n  - name: numa-aware\n")
    assert "Volcano's plugin 'numa-aware'" in str(caught.value)
