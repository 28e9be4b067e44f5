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

from collections.abc import Collection
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from scheduler.api.errors import ConfigError

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
    enable_cluster_order: bool | None = Field(None, alias="enableClusterOrder")
    enable_predicate: bool | None = Field(None, alias="enablePredicate")
    enable_best_node: bool | None = Field(None, alias="enableBestNode")
    enable_node_order: bool | None = Field(None, alias="enableNodeOrder")
    enable_target_job: bool | None = Field(None, alias="enableTargetJob")
    enable_job_enqueued: bool | None = Field(None, alias="enableJobEnqueued")
    enabled_victim: bool | None = Field(None, alias="enabledVictim")
    enable_job_starving: bool | None = Field(None, alias="enableJobStarving")
    enabled_overused: bool | None = Field(None, alias="enabledOverused")
    enabled_allocatable: bool | None = Field(None, alias="enabledAllocatable")
    arguments: dict[str, Any] = Field(default_factory=dict)

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


def parse_config(
    text: str, *, known_actions: Collection[str], known_plugins: Collection[str]
) -> SchedulerConfig:
    """A validated config from YAML; raises ConfigError naming what is wrong."""
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
        if action not in known_actions:
            raise ConfigError(
                f"scheduler config: unknown action {action!r}; "
                f"known: {', '.join(sorted(known_actions))}"
            )
    for configuration in config.configurations:
        if configuration.name not in known_actions:
            raise ConfigError(
                f"scheduler config: configurations names unknown action {configuration.name!r}"
            )
    seen: set[str] = set()
    for index, tier in enumerate(config.tiers):
        for plugin in tier.plugins:
            if plugin.name not in known_plugins:
                raise ConfigError(
                    f"scheduler config: tiers[{index}] names unknown plugin {plugin.name!r}; "
                    f"known: {', '.join(sorted(known_plugins))}"
                )
            if plugin.name in seen:
                raise ConfigError(f"scheduler config: plugin {plugin.name!r} is listed twice")
            seen.add(plugin.name)
    return config
