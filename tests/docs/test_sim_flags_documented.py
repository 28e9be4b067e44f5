"""Every flag of `muster sim` has a row in docs/configuration.md's "Flags of muster sim" (the
stand-in autoscaler's, in scale-up.md), and that section names no other flag."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from muster_sim.cli import add_parser

ROOT = Path(__file__).resolve().parents[2]


def sim_flags() -> set[str]:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    sim = next(
        action.choices["sim"]
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    return {
        option
        for action in sim._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }


def section(page: str, title: str) -> str:
    text = (ROOT / "docs" / page).read_text()
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert found is not None, f"{page} has no '## {title}' section"
    return found.group(1)


def test_every_sim_flag_is_documented_and_no_other() -> None:
    documented = set(
        re.findall(
            r"`(--[a-z0-9]+(?:-[a-z0-9]+)*)", section("configuration.md", "Flags of muster sim")
        )
    )
    autoscaler = set(
        re.findall(
            r"`(--autoscaler-[a-z0-9-]+)",
            section("scale-up.md", "In muster sim: a stand-in autoscaler"),
        )
    )
    flags = sim_flags()
    assert sorted(flags - documented - autoscaler) == []
    assert sorted(documented - flags) == []
