"""Which scheduling core the bench's `muster` runs: the checkout's plain Python, or the
mypyc-compiled copy `make compiled` leaves in build/compiled (what the image runs).

A compiled tree older than the checkout is refused, naming the first source that differs:
a benchmark of stale code would be read as a figure of this one. Either tree gets its
bytecode written before the runs, as the image ships it (tests/image/trim_venv.py), so no run
pays for compiling muster's sources at start (this machine's environment may set
PYTHONDONTWRITEBYTECODE, and then every start would).
"""

from __future__ import annotations

import compileall
import filecmp
import importlib.machinery
from pathlib import Path

from harness.cluster import REPO
from scheduler.build import COMPILED_MODULES

CORES = ("plain", "compiled")
COMPILED_TREE = REPO / "build" / "compiled"


def tree_of(core: str) -> Path:
    """The directory to run muster from for `core`; a stale compiled tree is refused."""
    if core not in CORES:
        raise ValueError(f"--core {core!r}: choose one of {', '.join(CORES)}")
    tree = REPO if core == "plain" else COMPILED_TREE
    if core == "compiled":
        stale = stale_in(tree)
        if stale:
            raise ValueError(f"--core compiled: {stale}; run `make compiled` first")
    return tree


def write_bytecode(tree: Path) -> None:
    """Compile the tree's Python sources to bytecode beside them, as the image ships them."""
    compileall.compile_dir(tree / "scheduler", quiet=1)


def stale_in(tree: Path) -> str:
    """Why `tree` is not the checkout's sources compiled, or "" when it is."""
    if not (tree / "scheduler").is_dir():
        return f"{tree} holds no compiled copy of muster"
    sources = sorted((REPO / "scheduler").rglob("*.py"))
    for source in sources:
        relative = source.relative_to(REPO)
        copy = tree / relative
        if not copy.is_file() or not filecmp.cmp(source, copy, shallow=False):
            return f"{relative} in {tree} differs from the checkout's"
    for module in COMPILED_MODULES:
        stem = tree / Path(*module.split("."))
        if not any(
            Path(f"{stem}{suffix}").is_file() for suffix in importlib.machinery.EXTENSION_SUFFIXES
        ):
            return f"{module} has no extension module in {tree}"
    return ""
