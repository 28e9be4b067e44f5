"""The pure core's modules import each other in one direction only, and its packages as
docs/design.md's rule of dependencies says. Every import counts: at module level, inside
functions and under `if TYPE_CHECKING:` (an import hidden there still ties two modules
together, and would hide a circle the design does not have)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE_PACKAGES = ("api", "dra", "framework", "nodefit", "actions", "plugins")
# Which core packages each may import (engine.py, the entry point, may import them all).
# dra/ (devices) stands on api/ alone; what places pods may ask it.
MAY_IMPORT = {
    "api": set(),
    "dra": {"api"},
    "framework": {"api", "dra"},
    "nodefit": {"api", "dra", "framework"},
    "actions": {"api", "framework", "dra"},
    "plugins": {"api", "framework", "nodefit", "dra"},
    "engine": {"api", "dra", "framework", "nodefit", "actions", "plugins"},
}


def core_modules() -> dict[str, Path]:
    """Every module of the core, by dotted name (a package by its own name)."""
    found = {"scheduler.engine": ROOT / "scheduler" / "engine.py"}
    for package in CORE_PACKAGES:
        for path in (ROOT / "scheduler" / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imports(path: Path) -> set[str]:
    """Every muster module the file imports, wherever the import statement is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("scheduler.")}


def graph() -> dict[str, set[str]]:
    """Per core module, the core modules it imports."""
    modules = core_modules()
    return {
        name: {other for other in imports(path) if other in modules and other != name}
        for name, path in modules.items()
    }


def test_no_core_module_imports_by_a_relative_name() -> None:
    relative = [
        str(path.relative_to(ROOT))
        for path in core_modules().values()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    assert relative == [], "relative imports escape the checks below"


def test_core_modules_import_each_other_in_one_direction_only() -> None:
    edges = graph()
    circles: list[list[str]] = []
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            circles.append([*path[path.index(module) :], module])
            return
        if module in done:
            return
        for other in sorted(edges[module]):
            visit(other, [*path, module])
        done.add(module)

    for module in sorted(edges):
        visit(module, [])
    assert circles == []


def test_core_packages_import_only_the_packages_below_them() -> None:
    wrong: list[str] = []
    for name, path in core_modules().items():
        package = name.split(".")[1]
        for other in imports(path):
            target = other.split(".")[1]
            if target != package and target not in MAY_IMPORT[package]:
                wrong.append(f"{name} imports {other}")
    assert wrong == []
