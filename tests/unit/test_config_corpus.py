"""The configs of tests/configs/volcano-1.15/: together they use every action, plugin,
switch, argument and key of Volcano 1.15's scheduler config; each loads (with a note for
each value that changes nothing) or is refused naming its key and what to do instead.

Each file says what to expect in its first lines:
    # expect: loads                     it loads
    # notes: KEY, KEY                   ...and the log notes say each KEY changes nothing
    # expect: refused: KEY; WORDS       the refusal names KEY and says WORDS
What each honoured value does is proven where it is implemented (tests/unit/plugins,
tests/unit/nodefit, tests/unit/actions, tests/unit/framework)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.api.errors import ConfigError
from scheduler.engine import load_config
from tests.unit.test_configuration_table import volcano_names

CORPUS = Path(__file__).resolve().parents[1] / "configs" / "volcano-1.15"
FILES = sorted(CORPUS.glob("*.yaml"))


def header(path: Path, field: str) -> str:
    for line in path.read_text().splitlines():
        if line.startswith(f"# {field}:"):
            return line.split(":", 1)[1].strip()
    return ""


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_config_loads_or_is_refused_as_it_says(path: Path) -> None:
    expect = header(path, "expect")
    if expect == "loads":
        config = load_config(path.read_text())
        notes = "\n".join(config.notes)
        wanted = [key.strip() for key in header(path, "notes").split(",") if key.strip()]
        for key in wanted:
            assert f"{key} changes nothing" in notes or f"{key}: " in notes, (key, notes)
        for note in config.notes:
            assert any(key in note for key in wanted), f"a note the file does not expect: {note}"
        return
    assert expect.startswith("refused:"), f"{path.name}: say what to expect"
    key, words = (part.strip() for part in expect.removeprefix("refused:").split(";"))
    with pytest.raises(ConfigError) as caught:
        load_config(path.read_text())
    assert key in str(caught.value) and words in str(caught.value), caught.value


def names_used(document: dict[str, Any], prefixed: list[str]) -> set[str]:
    """Every name (in the form of tests/configs/volcano-1.15-names.txt) a config uses."""
    used = {f"key {key}" for key in document}
    actions = document.get("actions", "")
    used |= {f"action {name.strip()}" for name in actions.split(",") if name.strip()}
    for configuration in document.get("configurations") or []:
        for argument in configuration.get("arguments") or {}:
            used.add(f"action {configuration['name']} {argument}")
    for tier in document.get("tiers") or []:
        for plugin in tier["plugins"]:
            name = plugin["name"]
            used.add(f"plugin {name}")
            used |= {f"switch {key}" for key in plugin if key not in ("name", "arguments")}
            for argument in plugin.get("arguments") or {}:
                used.add(f"plugin {name} {_named(name, argument, prefixed)}")
    return used


def _named(plugin: str, argument: str, prefixed: list[str]) -> str:
    for name in prefixed:
        owner, _, pattern = name.partition(" ")[2].partition(" ")
        if owner == plugin and argument.startswith(pattern.split("<")[0]):
            return pattern
    return argument


def test_the_configs_use_every_name_of_volcano_1_15() -> None:
    names = volcano_names()
    prefixed = [name for name in names if "<" in name]
    used: set[str] = set()
    for path in FILES:
        used |= names_used(yaml.safe_load(path.read_text()), prefixed)
    missing = names - used
    assert not missing, sorted(missing)
