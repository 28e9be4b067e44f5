"""No import circles, and the packages import only what their layering allows, read from the
source: every import counts, at module level or inside a function, but those under
`if TYPE_CHECKING:`, which never run.

`from a.b import c` depends on the package a.b (its __init__ runs first) and, when c is a
module, on a.b.c; `import a.b.c` depends on a.b.c. A circle is a strongly connected set of
modules: each imports, directly or not, every other. To hold another package to the same
rules, add its name to CHECKED.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The packages whose modules may take part in no import circle: all of muster's.
CHECKED = ("scheduler", "muster_sim")
Graph = dict[str, set[str]]


def module_name(path: Path) -> str:
    """`a/b/c.py` -> `a.b.c`; `a/b/__init__.py` -> `a.b`."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules(package: str) -> dict[str, Path]:
    """Every module of a package of the repository, by its dotted name."""
    return {module_name(path): path for path in sorted((ROOT / package).rglob("*.py"))}


def known(name: str) -> bool:
    """Whether `name` is a module of the repository's packages (scheduler, muster_sim)."""
    return any(name in modules(package) for package in ("scheduler", "muster_sim"))


def type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: inside functions too, not under TYPE_CHECKING."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and type_checking_only(node):
            for branch in node.orelse:
                yield from import_nodes(ast.Module(body=[branch], type_ignores=[]))
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from import_nodes(node)


def imported_by(name: str, path: Path) -> set[str]:
    """The repository's modules that module `name` (at `path`) imports."""
    return imports_in(name, path.read_text(), is_package=path.name == "__init__.py")


def imports_in(name: str, source: str, *, is_package: bool) -> set[str]:
    """The repository's modules that the source of module `name` imports."""
    found: set[str] = set()
    for node in import_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            # relative: from the module's package, one level up per dot past the first
            package = name if is_package else name.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        found.add(base)
        found.update(f"{base}.{alias.name}" for alias in node.names)
    return {module for module in found if known(module) and module != name}


def import_graph(package: str) -> Graph:
    """Module -> the repository's modules it imports, for every module of `package`."""
    return {name: imported_by(name, path) for name, path in modules(package).items()}


def circles(graph: Graph) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = lowest[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.get(module, ())):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                lowest[module] = min(lowest[module], lowest[target])
            elif target in on_stack:
                lowest[module] = min(lowest[module], index[target])
        if lowest[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def collapsed(graph: Graph, depth: int) -> Graph:
    """The graph between packages: each module counted as its ancestor `depth` names deep."""
    packages: Graph = {}
    for module, targets in graph.items():
        source = ".".join(module.split(".")[:depth])
        edges = packages.setdefault(source, set())
        edges.update(".".join(t.split(".")[:depth]) for t in targets)
        edges.discard(source)
    return packages


@pytest.mark.parametrize("package", CHECKED)
def test_no_module_takes_part_in_an_import_circle(package: str) -> None:
    assert circles(import_graph(package)) == []


def test_no_circle_between_the_packages_of_muster_sim() -> None:
    # apiserver, validation, access, http, cluster and the top-level modules layer on one
    # another: validation under apiserver, apiserver under access, http and cluster
    assert circles(collapsed(import_graph("muster_sim"), 2)) == []


def test_the_scheduler_imports_no_muster_sim() -> None:
    # `muster sim` and `muster demo` are dispatched by name (scheduler/cli.py), never imported
    graph = import_graph("scheduler")
    importers = sorted(
        module
        for module, targets in graph.items()
        if any(target.split(".")[0] == "muster_sim" for target in targets)
    )
    assert importers == []


def test_muster_sim_imports_only_the_plain_data_of_the_scheduler() -> None:
    # scheduler.api, and the package root for the version sim reports (it holds nothing else)
    graph = import_graph("muster_sim")
    used = {t for targets in graph.values() for t in targets if t.split(".")[0] == "scheduler"}
    allowed = [
        t for t in used if t in ("scheduler", "scheduler.api") or t.startswith("scheduler.api.")
    ]
    assert sorted(used - set(allowed)) == []


def test_the_graph_counts_imports_inside_functions_but_not_type_checking_ones() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import muster_sim.errors\n"
        "from . import selectors\n"
        "if TYPE_CHECKING:\n"
        "    from muster_sim.apiserver import store\n"
        "def later() -> None:\n"
        "    from muster_sim.validation.pods import validate_pod\n"
    )
    assert imports_in("muster_sim.server", source, is_package=False) == {
        "muster_sim",
        "muster_sim.errors",
        "muster_sim.selectors",
        "muster_sim.validation.pods",
    }


def test_a_circle_is_found_however_long() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
