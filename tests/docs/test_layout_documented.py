"""README's Layout section names every package and top-level module of `scheduler/` and
`muster_sim/` and every top-level directory of the repository, names no path that is not
there, and every package says in its docstring what lives in it."""

from __future__ import annotations

import ast
import re
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEDULER = ROOT / "scheduler"
# The packages of the distribution: the scheduler's, and the test bench's (muster sim, demo).
PACKAGES = (SCHEDULER, ROOT / "muster_sim")


def layout() -> str:
    """The text of README's "## Layout" section."""
    readme = (ROOT / "README.md").read_text()
    section = re.search(r"^## Layout\n(.*?)(?=^## )", readme, re.M | re.S)
    assert section is not None, "README.md has no '## Layout' section"
    return section.group(1)


def named_paths(text: str) -> set[str]:
    """Every `backticked` path in the table's first column, as the repository spells it: a
    bare module name is a module of the directory of its row's first path (`scheduler/x.py`,
    `y.py` names scheduler/y.py)."""
    found: set[str] = set()
    for row in re.findall(r"^\| (.*?) \|", text, re.M):
        names = re.findall(r"`([^`]+)`", row)
        paths = [name for name in names if "/" in name]
        directory = paths[0].rstrip("/").rpartition("/")[0] if paths else "scheduler"
        for name in names:
            if "/" in name or name in {"Dockerfile", "setup.py"}:
                found.add(name.rstrip("/"))
            else:
                found.add(f"{directory or 'scheduler'}/{name}")
    return found


def test_every_package_and_top_level_module_of_both_packages_is_in_the_layout() -> None:
    named = named_paths(layout())
    present = {
        f"{package.name}/{entry.name}"
        for package in PACKAGES
        for entry in package.iterdir()
        if (entry.is_dir() and (entry / "__init__.py").exists())
        or (entry.suffix == ".py" and entry.name != "__init__.py")
    }
    assert sorted(present - named) == [], "in scheduler/ or muster_sim/ but not in README's Layout"


def test_every_top_level_directory_is_in_the_layout() -> None:
    named = {path.split("/")[0] for path in named_paths(layout())}
    # What .gitignore keeps out of the repository (build/, dist/, *.egg-info/) is no layout.
    ignored = [
        line.rstrip("/")
        for line in (ROOT / ".gitignore").read_text().splitlines()
        if line.endswith("/") and "/" not in line.rstrip("/")
    ]
    present = {
        entry.name
        for entry in ROOT.iterdir()
        if entry.is_dir()
        and not entry.name.startswith(".")
        and not any(fnmatch(entry.name, pattern) for pattern in ignored)
    }
    assert sorted(present - named) == [], "a top-level directory missing from README's Layout"


def test_every_path_the_layout_names_exists() -> None:
    missing = sorted(path for path in named_paths(layout()) if not (ROOT / path).exists())
    assert missing == [], "README's Layout names paths that are not in the repository"


def test_every_package_says_what_lives_in_it() -> None:
    silent = sorted(
        str(init.relative_to(ROOT))
        for package in PACKAGES
        for init in package.rglob("__init__.py")
        if not ast.get_docstring(ast.parse(init.read_text()))
    )
    assert silent == [], "packages without a docstring"
