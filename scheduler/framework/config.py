"""The scheduler configuration, in Volcano's YAML shape, validated with pydantic.

actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: gang
    enableJobOrder: false
    arguments: {...}
configurations:
- name: allocate
  arguments: {...}
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from scheduler.api.errors import ConfigError
from scheduler.framework.arguments import Arguments, NoArguments, parse_arguments

# Volcano plugins muster does not have, and what to use instead. A config naming one is
# refused by name: loading it and ignoring the plugin would silently change the policy.
VOLCANO_ONLY_PLUGINS: dict[str, str] = {
    "tdm": "remove it; muster has no time-division multiplexing of nodes",
    "numa-aware": "remove it; muster does not place pods by NUMA topology",
    "deviceshare": "remove it; muster schedules whole devices (extended resources) only",
    "task-topology": "remove it; use required node affinity on the pods instead",
    "nodegroup": "remove it; use the queue's pods' node affinity instead",
    "usage": "remove it; muster scores nodes by requests (nodeorder, binpack), not usage",
    "rescheduling": "remove it; muster does not move running pods",
    "resourcequota": "remove it; the API server enforces ResourceQuota when pods are created",
    "extender": "remove it; muster calls no scheduler extenders",
    "reservation": "remove it; muster keeps a Running gang's minResources reserved itself",
    "resource-strategy-fit": "use binpack (fill nodes) or nodeorder (spread) instead",
}
VOLCANO_ONLY_ACTIONS: dict[str, str] = {
    "reserve": "remove it; muster keeps a Running gang's minResources reserved itself",
    "shuffle": "remove it; muster does not move running pods",
}

# Volcano's per-plugin switches that turn on no extension point of muster's plugins:
# accepted, and the log says so when the config loads.
NO_OP_SWITCHES: dict[str, str] = {
    "enableBestNode": "no muster plugin picks a best node of its own; the node picker takes "
    "the best-scored node",
    "enabledVictim": "no muster plugin picks victims of its own (Volcano's tdm and "
    "rescheduling do, which muster does not have)",
    "enableTargetJob": "no muster plugin picks a target job (Volcano's tdm does)",
    "enableReservedNodes": "no muster plugin reserves nodes (Volcano's tdm does)",
    "EnabledClusterOrder": "no muster plugin orders clusters",
    "enabledClusterOrder": "no muster plugin orders clusters",
}
# Switches of what muster always does, on the plugins that answer them in Volcano:
# accepted on, refused off there, saying what to do (elsewhere they change nothing).
ALWAYS_ON_SWITCHES: dict[str, tuple[frozenset[str], str]] = {
    "enabledSubJobReady": (
        frozenset({"gang"}),
        "muster always holds each subgroup of a PodGroup's spec.subGroupPolicy whole and "
        "counts minSubGroups; remove the switch, or the PodGroups' subGroupPolicy",
    ),
    "enabledSubJobPipelined": (
        frozenset({"gang"}),
        "muster always holds each subgroup of a PodGroup's spec.subGroupPolicy whole and "
        "counts minSubGroups; remove the switch, or the PodGroups' subGroupPolicy",
    ),
    "enabledSubJobOrder": (
        frozenset({"gang", "priority"}),
        "muster always places the subgroups still needed for minSubGroups first; remove the switch",
    ),
    "enabledHyperNodeGradient": (
        frozenset({"network-topology-aware"}),
        "muster always tries a topology gang's domains lowest tier first; remove the "
        "switch, or use soft mode on the PodGroups",
    ),
    "enabledHyperNodeOrder": (
        frozenset({"network-topology-aware"}),
        "to try domains by tier and name only, set hypernode.binpack.cpu and "
        "hypernode.binpack.memory to 0 instead",
    ),
}

DEFAULT_CONFIG_YAML = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


class PluginOption(BaseModel):
    """One plugin in a tier, with Volcano's per-extension-point switches."""

    # Volcano's keys are camelCase and spelled both enableX and enabledX; we
    # accept exactly Volcano's spellings so its config files load unchanged.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    name: str
    enable_job_order: bool | None = Field(None, alias="enableJobOrder")
    enable_namespace_order: bool | None = Field(None, alias="enableNamespaceOrder")
    enable_hierarchy: bool | None = Field(None, alias="enableHierarchy")
    enable_job_ready: bool | None = Field(None, alias="enableJobReady")
    enable_job_pipelined: bool | None = Field(None, alias="enableJobPipelined")
    enable_task_order: bool | None = Field(None, alias="enableTaskOrder")
    enable_preemptable: bool | None = Field(None, alias="enablePreemptable")
    enable_reclaimable: bool | None = Field(None, alias="enableReclaimable")
    enable_preemptive: bool | None = Field(None, alias="enablePreemptive")
    enable_queue_order: bool | None = Field(None, alias="enableQueueOrder")
    enable_cluster_order: bool | None = Field(None, alias="enabledClusterOrder")
    # Volcano 1.15 spells this one with a capital E.
    enabled_cluster_order: bool | None = Field(None, alias="EnabledClusterOrder")
    enable_predicate: bool | None = Field(None, alias="enablePredicate")
    enable_best_node: bool | None = Field(None, alias="enableBestNode")
    enable_node_order: bool | None = Field(None, alias="enableNodeOrder")
    enable_target_job: bool | None = Field(None, alias="enableTargetJob")
    enable_job_enqueued: bool | None = Field(None, alias="enableJobEnqueued")
    enabled_victim: bool | None = Field(None, alias="enabledVictim")
    enable_job_starving: bool | None = Field(None, alias="enableJobStarving")
    enabled_overused: bool | None = Field(None, alias="enabledOverused")
    enabled_allocatable: bool | None = Field(None, alias="enabledAllocatable")
    enable_reserved_nodes: bool | None = Field(None, alias="enableReservedNodes")
    enabled_hyper_node_order: bool | None = Field(None, alias="enabledHyperNodeOrder")
    enabled_sub_job_ready: bool | None = Field(None, alias="enabledSubJobReady")
    enabled_sub_job_pipelined: bool | None = Field(None, alias="enabledSubJobPipelined")
    enabled_sub_job_order: bool | None = Field(None, alias="enabledSubJobOrder")
    enabled_hyper_node_gradient: bool | None = Field(None, alias="enabledHyperNodeGradient")
    arguments: dict[str, Any] = Field(default_factory=dict)
    # The arguments as the plugin's typed model, set by parse_config (never from YAML).
    _parsed: Arguments | None = PrivateAttr(default=None)

    @property
    def parsed_arguments(self) -> Arguments | None:
        """The arguments parsed into the plugin's model when the config was loaded."""
        return self._parsed

    def switches_set(self) -> dict[str, bool]:
        """The per-extension-point switches the config sets, by Volcano's spelling."""
        return {
            info.alias: value
            for field_name, info in type(self).model_fields.items()
            if info.alias is not None
            and field_name != "arguments"
            and (value := getattr(self, field_name)) is not None
        }

    def enabled(self, flag: str) -> bool:
        """Whether the extension point behind a Volcano flag is on (unset means on)."""
        if not flag:
            return True
        for field_name, info in type(self).model_fields.items():
            if info.alias == flag:
                value = getattr(self, field_name)
                return value is None or bool(value)
        return True


class Tier(BaseModel):
    """Plugins whose answers are combined before the next tier is asked."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    plugins: list[PluginOption]


class ActionConfiguration(BaseModel):
    """Arguments for one action."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class SchedulerConfig(BaseModel):
    """A whole scheduler configuration."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    actions: list[str]
    tiers: list[Tier]
    configurations: list[ActionConfiguration] = Field(default_factory=list)
    # Volcano's metrics source (for its usage plugin): accepted, noted as changing nothing.
    metrics: dict[str, Any] | None = None
    # Per action, its arguments parsed into the action's model by parse_config.
    _action_settings: dict[str, Arguments] = PrivateAttr(default_factory=dict)
    # What the config sets that changes nothing in muster, for the log (parse_config).
    _notes: list[str] = PrivateAttr(default_factory=list)

    @property
    def notes(self) -> list[str]:
        """What the config sets that muster accepts but that changes nothing, one line
        each; the scheduler logs them when the config loads."""
        return list(self._notes)

    @field_validator("actions", mode="before")
    @classmethod
    def _split_actions(cls, value: Any) -> Any:
        # Volcano writes the action list as one comma-separated string.
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    def action_arguments(self, action: str) -> dict[str, Any]:
        """The arguments configured for an action ({} when none)."""
        for configuration in self.configurations:
            if configuration.name == action:
                return configuration.arguments
        return {}

    def action_settings(self, action: str) -> Arguments | None:
        """The action's arguments as parsed when the config was loaded (None if not parsed)."""
        return self._action_settings.get(action)


def parse_config(
    text: str,
    *,
    known_actions: Collection[str],
    known_plugins: Collection[str],
) -> SchedulerConfig:
    """A validated config from YAML; raises ConfigError naming what is wrong.

    `known_actions` and `known_plugins` are the names muster has; when they map each name
    to its class (with an `arguments_model`), every argument is parsed here, once, so a
    config that loads cannot fail a session."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"scheduler config is not valid YAML: {error}") from None
    if not isinstance(document, dict):
        raise ConfigError("scheduler config must be a mapping with 'actions' and 'tiers'")
    try:
        config = SchedulerConfig.model_validate(document)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors()
        )
        raise ConfigError(f"scheduler config is invalid: {problems}") from None
    if not config.actions:
        raise ConfigError('scheduler config names no actions; e.g. actions: "enqueue, allocate"')
    for action in config.actions:
        _check_known("action", action, known_actions, VOLCANO_ONLY_ACTIONS, "")
    for configuration in config.configurations:
        _check_known(
            "action", configuration.name, known_actions, VOLCANO_ONLY_ACTIONS, "configurations "
        )
    seen: set[str] = set()
    for index, tier in enumerate(config.tiers):
        for plugin in tier.plugins:
            _check_known(
                "plugin", plugin.name, known_plugins, VOLCANO_ONLY_PLUGINS, f"tiers[{index}] "
            )
            if plugin.name in seen:
                raise ConfigError(f"scheduler config: plugin {plugin.name!r} is listed twice")
            seen.add(plugin.name)
            config._notes.extend(_switch_notes(f"tiers[{index}] plugin {plugin.name}", plugin))
            plugin._parsed = parse_arguments(
                "plugin", plugin.name, _model_of(known_plugins, plugin.name), plugin.arguments
            )
            config._notes.extend(
                f"plugin {plugin.name}: {note}" for note in plugin._parsed.load_notes()
            )
    _check_queue_policies(seen)
    _check_eviction_actions(config.actions)
    for action in {*config.actions, *(c.name for c in config.configurations)}:
        settings = parse_arguments(
            "action", action, _model_of(known_actions, action), config.action_arguments(action)
        )
        config._action_settings[action] = settings
        config._notes.extend(f"action {action}: {note}" for note in settings.load_notes())
    if config.metrics is not None:
        config._notes.append(
            "metrics: changes nothing: it tells Volcano's usage plugin where to read node "
            "usage, and muster has no usage plugin"
        )
    return config


def _switch_notes(where: str, plugin: PluginOption) -> list[str]:
    """Notes for the switches that change nothing; ConfigError for one turned off that
    muster cannot turn off."""
    notes = []
    for switch, value in plugin.switches_set().items():
        if switch in ALWAYS_ON_SWITCHES:
            answered_by, what = ALWAYS_ON_SWITCHES[switch]
            if plugin.name not in answered_by:
                names = " and ".join(sorted(answered_by))
                plugins = "plugins answer" if len(answered_by) > 1 else "plugin answers"
                notes.append(f"{where}: {switch} changes nothing: only the {names} {plugins} it")
            elif not value:
                raise ConfigError(
                    f"scheduler config: {where}: {switch}: false cannot be honoured: {what}"
                )
        if switch in NO_OP_SWITCHES:
            notes.append(f"{where}: {switch} changes nothing: {NO_OP_SWITCHES[switch]}")
        if switch == "enableHierarchy" and plugin.name != "capacity":
            notes.append(
                f"{where}: enableHierarchy changes nothing: only the capacity plugin reads "
                f"it (proportion honours Queue spec.parent whatever it says; Volcano's "
                f"hierarchical drf is not in muster)"
            )
    return notes


# Plugins that each divide the cluster between queues: one config may enable only one.
QUEUE_POLICIES = ("proportion", "capacity")


def _check_queue_policies(plugins: Collection[str]) -> None:
    """Refuse proportion and capacity together, as Volcano's capacity guide says they
    conflict: two answers to what a queue deserves would contradict each other."""
    enabled = [name for name in QUEUE_POLICIES if name in plugins]
    if len(enabled) > 1:
        raise ConfigError(
            "scheduler config: plugins 'proportion' and 'capacity' cannot be used together: "
            "both decide what each queue deserves (proportion by spec.weight, capacity by "
            "spec.deserved); remove 'proportion' to honour spec.deserved, or 'capacity' to "
            "share the cluster by weight"
        )


# Volcano 1.15's gang-aware actions and the actions they stand in for: Volcano's design
# says the two of a pair must not be configured together.
GANG_EVICTION_ACTIONS = {"gangpreempt": "preempt", "gangreclaim": "reclaim"}


def _check_eviction_actions(actions: Collection[str]) -> None:
    """Refuse gangpreempt with preempt, or gangreclaim with reclaim: each pair decides the
    same evictions, and running both would evict twice for one gang."""
    for gang, legacy in GANG_EVICTION_ACTIONS.items():
        if gang in actions and legacy in actions:
            raise ConfigError(
                f"scheduler config: actions {gang!r} and {legacy!r} cannot be used together: "
                f"{gang} is {legacy} with Volcano 1.15's arguments (maxDomains, "
                f"allowWholeBundle); list one of them"
            )


def _model_of(known: Collection[str], name: str) -> type[Arguments]:
    """The arguments model of a known plugin or action class (none: no arguments)."""
    kind = known.get(name) if isinstance(known, Mapping) else None
    model = getattr(kind, "arguments_model", None)
    if isinstance(model, type) and issubclass(model, Arguments):
        return model
    return NoArguments


def _check_known(
    kind: str, name: str, known: Collection[str], volcano_only: dict[str, str], where: str
) -> None:
    if name in known:
        return
    if name in volcano_only:
        raise ConfigError(
            f"scheduler config: {where}names Volcano's {kind} {name!r}, which muster does not "
            f"have: {volcano_only[name]}"
        )
    raise ConfigError(
        f"scheduler config: {where}names unknown {kind} {name!r}; known: {', '.join(sorted(known))}"
    )
