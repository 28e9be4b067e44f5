"""docs/configuration.md has a row for every name the config loader knows (top-level
keys, plugin switches, actions, plugins, and each one's typed arguments), and no row names
something the loader does not know."""

from __future__ import annotations

import re
from pathlib import Path

from scheduler.actions import ACTIONS
from scheduler.framework.arguments import Arguments
from scheduler.framework.config import (
    VOLCANO_ONLY_ACTIONS,
    VOLCANO_ONLY_PLUGINS,
    PluginOption,
    SchedulerConfig,
)
from scheduler.plugins import PLUGINS

CONFIGURATION_MD = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def argument_names(model: type[Arguments]) -> set[str]:
    """The argument names a model parses, as a user writes them: a prefix field
    (`binpack.resources.*`) as `binpack.resources.<name>`; removed names too, as the loader
    refuses them by name."""
    names = {info.alias or field for field, info in model.model_fields.items()}
    names |= {old.rstrip(".") + (".<name>" if old.endswith(".") else "") for old in model.removed}
    return {name.replace(".*", ".<name>") for name in names}


def known_to_loader() -> set[str]:
    """Every name the loader knows, as `kind name[ argument]`."""
    known = {f"key {field}" for field in SchedulerConfig.model_fields}
    known |= {
        f"switch {info.alias}"
        for field, info in PluginOption.model_fields.items()
        if info.alias is not None
    }
    for kind, registry, refused in (
        ("action", ACTIONS, VOLCANO_ONLY_ACTIONS),
        ("plugin", PLUGINS, VOLCANO_ONLY_PLUGINS),
    ):
        known |= {f"{kind} {name}" for name in [*registry, *refused]}
        for name, cls in registry.items():
            known |= {f"{kind} {name} {arg}" for arg in argument_names(cls.arguments_model)}
    return known


def documented() -> set[str]:
    """Every name the page's tables give a row, as `kind name[ argument]`: a row of the
    switches' table is a switch, a row naming an action or plugin (with or without
    arguments) is that; the argument cell may list several, each one a name. The arguments
    of a plugin the loader refuses whole are refused with it, so they name nothing more."""
    rows: set[str] = set()
    flags = False
    for line in CONFIGURATION_MD.read_text().splitlines():
        if line.startswith("## "):
            # The processes' command-line flags are not the config file's.
            flags = line.startswith("## Flags")
        if flags or not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        (name,) = re.findall(r"`([^`]*)`", cells[0])
        arguments = re.findall(r"`([^`]*)`", cells[1])
        if name in ACTIONS or name in VOLCANO_ONLY_ACTIONS:
            kind = "action"
        elif name in PLUGINS or name in VOLCANO_ONLY_PLUGINS:
            kind = "plugin"
        elif name in SchedulerConfig.model_fields:
            kind = "key"
        else:
            kind = "switch"
        rows.add(f"{kind} {name}")
        if name not in VOLCANO_ONLY_PLUGINS:
            rows |= {f"{kind} {name} {argument}" for argument in arguments}
    return rows


def test_every_name_the_loader_knows_has_a_row() -> None:
    missing = sorted(known_to_loader() - documented())
    assert missing == [], f"known to the config loader, without a row in {CONFIGURATION_MD.name}"


def test_every_row_names_something_the_loader_knows() -> None:
    unknown = sorted(documented() - known_to_loader())
    assert unknown == [], f"rows of {CONFIGURATION_MD.name} the config loader does not know"
