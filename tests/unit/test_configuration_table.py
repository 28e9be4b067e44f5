"""docs/configuration.md's tables and the config loader say the same thing: every row's
example loads as the row says (honoured, a no-op said in the notes, or refused naming the
key), and every name of Volcano 1.15's scheduler config has a row."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from scheduler.api.errors import ConfigError
from scheduler.engine import load_config
from scheduler.framework.config import SchedulerConfig

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "configuration.md"
NAMES = ROOT / "tests" / "configs" / "volcano-1.15-names.txt"
# Arguments Volcano removed before 1.15 that configs still carry: rows that refuse them.
REMOVED = {
    f"plugin predicates {argument}"
    for argument in (
        "predicate.ProportionalEnable",
        "predicate.resources",
        "predicate.resources.<name>",
        "predicate.GPUSharingEnable",
        "predicate.GPUNumberEnable",
    )
}
STATUSES = ("honoured", "no-op", "refused", "refused when false", "refused when true")
SECTIONS = {
    "Top-level keys": "key",
    "Plugin switches": "switch",
    "Actions": "action",
    "Plugins and their arguments": "plugin",
}


@dataclass(frozen=True)
class Row:
    """One row of a table: what it is about and what muster does with its example."""

    kind: str
    name: str
    arguments: tuple[str, ...]
    example: str
    status: str

    @property
    def id(self) -> str:
        return " ".join([self.kind, self.name, *self.arguments[:1]])


def _code(cell: str) -> list[str]:
    return re.findall(r"`([^`]*)`", cell)


def table_rows() -> list[Row]:
    rows: list[Row] = []
    kind = ""
    for line in TABLE.read_text().splitlines():
        if line.startswith("## "):
            kind = SECTIONS.get(line[3:].strip(), "")
            continue
        if not kind or not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        (name,) = _code(cells[0])
        example = _code(cells[2])
        rows.append(
            Row(kind, name, tuple(_code(cells[1])), example[0] if example else "", cells[3])
        )
    return rows


def volcano_names() -> set[str]:
    names = set()
    for line in NAMES.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            names.add(line.strip())
    return names


def covered(row: Row) -> set[str]:
    if not row.arguments:
        return {f"{row.kind} {row.name}"}
    return {f"{row.kind} {row.name} {argument}" for argument in row.arguments}


PLUGINS_FOR_ACTIONS = "- plugins:\n  - name: gang\n  - name: predicates\n  - name: nodeorder\n"


def config_of(row: Row) -> str:
    """The smallest config that uses the row's name with its example."""
    if row.kind == "key":
        extra = f"{row.name}: {row.example}\n" if row.name == "metrics" else ""
        return f"actions: allocate\ntiers:\n{PLUGINS_FOR_ACTIONS}{extra}"
    if row.kind == "switch":
        plugin, value = (part.strip() for part in row.example.split(":"))
        return (
            f"actions: allocate\ntiers:\n- plugins:\n  - name: {plugin}\n    {row.name}: {value}\n"
        )
    if row.kind == "action":
        actions = "allocate" if row.name == "allocate" else f"allocate, {row.name}"
        text = f'actions: "{actions}"\ntiers:\n{PLUGINS_FOR_ACTIONS}'
        if row.example:
            text += f"configurations:\n- name: {row.name}\n  arguments: {row.example}\n"
        return text
    arguments = f"\n    arguments: {row.example}" if row.example else ""
    return f"actions: allocate\ntiers:\n- plugins:\n  - name: {row.name}{arguments}\n"


REFUSED_PLUGINS = {
    r.name for r in table_rows() if r.kind == "plugin" and not r.arguments and r.status == "refused"
}


def about(row: Row) -> str:
    """What a note or refusal about the row must name: the argument, or the plugin when
    the plugin itself is refused."""
    if row.arguments and row.name not in REFUSED_PLUGINS:
        return row.arguments[0].split("<")[0]
    return row.name


def load(row: Row) -> SchedulerConfig:
    return load_config(config_of(row))


ROWS = table_rows()


def test_the_tables_have_a_row_for_each_name_of_volcano_1_15_and_no_other() -> None:
    in_table = [name for row in ROWS for name in covered(row)]
    assert len(in_table) == len(set(in_table)), "a name has two rows"
    assert set(in_table) == volcano_names() | REMOVED


def test_every_row_says_honoured_no_op_or_refused() -> None:
    unknown = {row.status for row in ROWS} - set(STATUSES)
    assert not unknown, f"statuses the test does not know: {unknown}"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_each_row_loads_as_it_says(row: Row) -> None:
    if row.status.startswith("refused"):
        with pytest.raises(ConfigError) as caught:
            load(row)
        assert about(row) in str(caught.value), caught.value
        return
    config = load(row)
    noted = [note for note in config.notes if about(row) in note]
    if row.status == "no-op":
        assert noted, f"no note says {about(row)} changes nothing: {config.notes}"
    else:
        assert noted == [], noted


def test_every_example_is_yaml() -> None:
    for row in ROWS:
        if row.example and row.kind != "switch":
            assert isinstance(yaml.safe_load(row.example), dict), row.id
