"""Which scheduler configuration the inspect commands run their session with: a file named
by --scheduler-conf, else the scheduler's own ConfigMap (as the deployment mounts it), else
muster's built-in default, and how to say which one it was.

The ConfigMap is read with one GET; when it is absent or the user may not read it, the
default is used and the commands say so on stderr and in their output (never silently).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import yaml

from scheduler.api.errors import ConfigError
from scheduler.engine import load_config
from scheduler.framework.config import DEFAULT_CONFIG_YAML, SchedulerConfig
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import NotFound, StatusError

# deploy/base/scheduler/configmap.yaml, mounted whole at /etc/muster by the deployment,
# whose --scheduler-conf names /etc/muster/scheduler.yaml: the key is that file's name.
DEFAULT_CONFIG_MAP = "muster-system/muster-scheduler-config"
CONFIG_MAP_KEY = "scheduler.yaml"

BUILT_IN = "built-in default"

# The actions that evict for a waiting gang; what "could preempt or reclaim make room"
# is asked with.
EVICTING_ACTIONS = ("preempt", "reclaim")


@dataclass(frozen=True)
class Configuration:
    """A loaded scheduler config, the YAML it came from and where that YAML was found."""

    config: SchedulerConfig
    text: str
    # "file PATH", "ConfigMap NS/NAME key KEY" or BUILT_IN
    source: str
    # Why the built-in default is used although a ConfigMap was asked for ("" otherwise).
    fallback: str = ""

    @property
    def actions(self) -> list[str]:
        """The configured actions, in the order a session runs them."""
        return list(self.config.actions)

    def describe(self) -> str:
        """One line: where the config came from and its actions."""
        return f"{self.source} (actions: {', '.join(self.actions)})"

    def as_dict(self) -> dict[str, Any]:
        """The configuration as -o json|yaml print it."""
        return {"source": self.source, "actions": self.actions}

    def with_actions(self, extra: tuple[str, ...]) -> Configuration | None:
        """This config with the `extra` actions it lacks run right after allocate (where
        Volcano's configs put preempt and reclaim), loaded by the same loader; None when
        it has them all already."""
        missing = [name for name in extra if name not in self.config.actions]
        if not missing:
            return None
        actions = list(self.config.actions)
        at = actions.index("allocate") + 1 if "allocate" in actions else len(actions)
        actions[at:at] = missing
        document = yaml.safe_load(self.text)
        document["actions"] = ", ".join(actions)
        text = yaml.safe_dump(document, sort_keys=False)
        added = ", ".join(missing)
        return Configuration(load_config(text), text, f"{self.source} with {added} added")


def built_in() -> Configuration:
    """muster's default config (what the scheduler runs with when given none)."""
    return Configuration(load_config(DEFAULT_CONFIG_YAML), DEFAULT_CONFIG_YAML, BUILT_IN)


def from_file(path: Path) -> Configuration:
    """The config of a file; raises OSError or ConfigError (the loader's message)."""
    text = path.read_text()
    return Configuration(_load(text, f"{path}"), text, f"file {path}")


def _load(text: str, where: str) -> SchedulerConfig:
    try:
        return load_config(text)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None


def split_reference(reference: str) -> tuple[str, str]:
    """NAMESPACE/NAME of a ConfigMap; raises ConfigError on another shape."""
    namespace, slash, name = reference.partition("/")
    if not slash or not namespace or not name or "/" in name:
        raise ConfigError(
            f"--scheduler-config-map {reference!r} is not NAMESPACE/NAME; e.g. {DEFAULT_CONFIG_MAP}"
        )
    return namespace, name


def from_config_map(reference: str, configmap: Any) -> Configuration:
    """The config held under CONFIG_MAP_KEY in a ConfigMap as the API serves it; raises
    ConfigError when the key is missing or does not load."""
    data = (configmap.get("data") if isinstance(configmap, dict) else None) or {}
    where = f"ConfigMap {reference} key {CONFIG_MAP_KEY}"
    text = data.get(CONFIG_MAP_KEY)
    if not isinstance(text, str):
        keys = ", ".join(sorted(data)) or "none"
        raise ConfigError(
            f"ConfigMap {reference} has no data key {CONFIG_MAP_KEY!r} (its keys: {keys}); "
            "the scheduler's deployment reads the config from that key: add it, or pass "
            "--scheduler-conf FILE"
        )
    return Configuration(_load(text, where), text, where)


async def read_config_map(client: KubeClient, reference: str) -> Configuration:
    """The scheduler config from the ConfigMap `reference` (NS/NAME), or the built-in one
    when the ConfigMap is absent or cannot be read (then `fallback` says why).

    Raises ConfigError when it holds a config that does not load; other API errors (a
    server that does not answer) propagate."""
    namespace, name = split_reference(reference)
    path = f"/api/v1/namespaces/{namespace}/configmaps/{name}"
    try:
        body = await client.request("GET", path, retry=False)
    except NotFound:
        return _fallback(f"ConfigMap {reference} not found")
    except StatusError as error:
        if error.code not in (401, 403):
            raise
        return _fallback(f"ConfigMap {reference} cannot be read ({error.code} {error.reason})")
    return from_config_map(reference, msgspec.json.decode(body))


def _fallback(why: str) -> Configuration:
    chosen = built_in()
    return Configuration(chosen.config, chosen.text, f"{BUILT_IN} ({why})", fallback=why)


def fallback_notice(configuration: Configuration) -> str | None:
    """The one stderr line that says the built-in default stands in for the ConfigMap."""
    if not configuration.fallback:
        return None
    return (
        f"{configuration.fallback}; using the {BUILT_IN} scheduler configuration "
        "(pass --scheduler-conf FILE or --scheduler-config-map NS/NAME to use another)"
    )
