"""Trim the image's venv to what muster's processes load (run by the Dockerfile's build stage).

The image's root filesystem is read-only, so Python never writes bytecode there: every module a
process imports must arrive compiled, and its source is then read only for traceback text. So:

- muster's own package (`scheduler`) keeps its sources beside its compiled files: its tracebacks
  show their source lines.
- Every other package ships compiled only: each `x.py` becomes `x.pyc` beside it (Python loads
  such "sourceless" modules directly) and the source goes. Their traceback frames keep file and
  line, not the line's text.
- The OpenAPI-generated API and model modules of the `kubernetes` client go, all of them: the
  image's processes talk to the API server through scheduler/kube, which uses only the client's
  Configuration and ApiClient, and the client loads its API and model modules lazily, by name.
  (The image carries no `muster sim` or `muster demo`: the test bench, which checks request
  bodies against those models and calls the generated API, lives beside the image, in a
  checkout or an install with the sim extra.)
- Trees and distributions that no process imports go: the client's asyncio twin
  `kubernetes.aio` (muster uses the synchronous client), `UNUSED_DISTRIBUTIONS`, the packages'
  own test modules, the CRD files the wheel carries for the test bench (share/muster), console
  scripts other than `muster` and `python`, the build's bytecode caches.
- Shared objects lose their symbol tables (`strip --strip-unneeded`).

`make image-test` runs every process in the trimmed image (`--version`, the scheduler and the
controller in-cluster, `status`, `explain` and `whatif` imported with every other module): a
module that a process needs and this script removed fails it.

Usage: python trim_venv.py VENV
"""

from __future__ import annotations

import argparse
import importlib.metadata
import py_compile
import re
import shutil
import subprocess
import sys
from pathlib import Path

OWN_PACKAGES = frozenset({"scheduler"})
API_DIR = Path("kubernetes/client/api")
MODELS_DIR = Path("kubernetes/client/models")
UNUSED_TREES = (Path("kubernetes/aio"),)
# Relative to the venv: the CRDs the wheel installs for `muster sim` and `muster demo`.
UNUSED_DATA = (Path("share/muster"),)
# Dependencies of dependencies that only code muster never runs imports: kopf's command line
# (click) and kubernetes.aio's retries (aiohttp-retry).
UNUSED_DISTRIBUTIONS = ("click", "aiohttp-retry")
KEPT_SCRIPTS = frozenset({"muster", "python", "python3", f"python3.{sys.version_info.minor}"})


def size_of(path: Path) -> int:
    """The bytes a file or tree takes (symbolic links, such as bin/python, count as nothing)."""
    if path.is_symlink():
        return 0
    if path.is_dir():
        return sum(size_of(f) for f in path.rglob("*") if f.is_file())
    return path.stat().st_size


def remove(path: Path) -> int:
    """Delete a file or tree; the bytes it took."""
    size = size_of(path)
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    return size


def is_test_module(relative: Path) -> bool:
    """A third-party package's own test module or test directory."""
    if any(part in {"tests", "test"} for part in relative.parts[1:-1]):
        return True
    return relative.name.endswith("_test.py") or relative.name.startswith("test_")


def remove_distribution(site: Path, name: str) -> int:
    """Delete every file of an installed distribution (as its RECORD lists them)."""
    found = [
        d
        for d in importlib.metadata.distributions(path=[str(site)])
        if re.sub(r"[-_.]+", "-", d.metadata["Name"] or "").lower() == name
    ]
    if len(found) != 1:
        sys.exit(
            f"trim_venv: UNUSED_DISTRIBUTIONS names {name!r}, installed {len(found)} times "
            "(expected once): update the list to the venv's dependencies"
        )
    (dist,) = found
    files = list(dist.files or ())  # read RECORD once: it is among the files deleted
    freed = 0
    for file in files:
        path = site / file
        if path.is_file():
            freed += remove(path)
    # The metadata directory whole (it may hold files RECORD does not list), then the package
    # directories the deletions emptied.
    for metadata in {f.parts[0] for f in files if f.parts[0].endswith(".dist-info")}:
        if (site / metadata).exists():
            freed += remove(site / metadata)
    for directory in sorted({(site / f).parent for f in files}, reverse=True):
        if directory != site and directory.is_dir() and not any(directory.rglob("*.*")):
            shutil.rmtree(directory)
    return freed


def prune_generated_client(site: Path) -> int:
    """Delete every generated API and model module of the kubernetes client."""
    freed = 0
    for directory in (API_DIR, MODELS_DIR):
        for module in (site / directory).glob("*.py"):
            if module.stem != "__init__":
                freed += remove(module)
    print("trim_venv: kubernetes client: no generated API or model module kept")
    return freed


def compile_tree(site: Path) -> tuple[int, int]:
    """Compile every module; drop third-party sources and tests. (modules compiled only, bytes)"""
    compiled_only = freed = 0
    for source in sorted(site.rglob("*.py")):
        relative = source.relative_to(site)
        if relative.parts[0].removesuffix(".py") in OWN_PACKAGES:
            if any(source.parent.glob(f"{source.stem}.*.so")):
                # Compiled with mypyc (scheduler/build.py): the extension module is what
                # imports; the source stays for tracebacks, no bytecode is ever read.
                continue
            py_compile.compile(
                str(source),
                doraise=True,
                invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
            )
            continue
        if len(relative.parts) > 1 and is_test_module(relative):
            freed += remove(source)
            continue
        py_compile.compile(
            str(source),
            cfile=str(source.with_suffix(".pyc")),
            dfile=str(source),
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
        freed += remove(source)
        compiled_only += 1
    return compiled_only, freed


def strip_shared_objects(venv: Path) -> int:
    """Drop the symbol tables of every shared object; the bytes saved."""
    strip = shutil.which("strip")
    if strip is None:
        sys.exit("trim_venv: `strip` is missing: the build stage must install binutils")
    objects = sorted(p for p in venv.rglob("*.so*") if p.is_file() and not p.is_symlink())
    before = sum(p.stat().st_size for p in objects)
    subprocess.run([strip, "--strip-unneeded", *map(str, objects)], check=True)
    return before - sum(p.stat().st_size for p in objects)


def trim(venv: Path) -> None:
    """Trim VENV in place and print what went."""
    (site,) = venv.glob("lib/python3.*/site-packages")
    before = size_of(venv)
    for tree in UNUSED_TREES:
        remove(site / tree)
    for data in UNUSED_DATA:
        remove(venv / data)
    for name in UNUSED_DISTRIBUTIONS:
        remove_distribution(site, name)
    prune_generated_client(site)
    for cache in sorted(venv.rglob("__pycache__"), reverse=True):
        remove(cache)
    for script in (venv / "bin").iterdir():
        if script.name not in KEPT_SCRIPTS and not script.name.startswith("activate"):
            remove(script)
    compiled_only, _ = compile_tree(site)
    stripped = strip_shared_objects(venv)
    after = size_of(venv)
    print(
        f"trim_venv: {compiled_only} third-party modules compiled only; shared objects "
        f"{stripped / 1e6:.1f} MB smaller; venv {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB"
    )


def main() -> None:
    """Parse the venv path and trim it."""
    parser = argparse.ArgumentParser(description="Trim the image's venv (see the module doc).")
    parser.add_argument("venv", type=Path)
    trim(parser.parse_args().venv)


if __name__ == "__main__":
    main()
