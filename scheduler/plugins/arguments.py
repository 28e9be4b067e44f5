"""Plugin arguments from the scheduler config, read with errors naming plugin, key and value."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scheduler.api.errors import ConfigError


def weight_argument(plugin: str, arguments: Mapping[str, Any], key: str, default: float) -> float:
    """A weight of 0 or more; YAML may give it as a number or a string ("2")."""
    if key not in arguments:
        return default
    raw = arguments[key]
    value: float | None = None
    # bool is an int in Python; `binpack.weight: true` is a mistake, not 1.
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            value = None
    if value is None or not math.isfinite(value) or value < 0:
        raise ConfigError(
            f"plugin {plugin}: argument {key}={raw!r} is not a weight; "
            "use a number of 0 or more, e.g. 1"
        )
    return value


def list_argument(plugin: str, arguments: Mapping[str, Any], key: str) -> list[str]:
    """A comma-separated list ("nvidia.com/gpu, example.com/foo") or a YAML list of names."""
    raw = arguments.get(key)
    if raw is None:
        return []
    if isinstance(raw, str):
        items = raw.split(",")
    elif isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        items = raw
    else:
        raise ConfigError(
            f"plugin {plugin}: argument {key}={raw!r} is not a list of names; "
            'use a comma-separated string, e.g. "nvidia.com/gpu, example.com/foo"'
        )
    return [item.strip() for item in items if item.strip()]
