"""Trim the image's venv to what muster's processes load (run by the Dockerfile's build stage).

The image's root filesystem is read-only, so Python never writes bytecode there: every module a
process imports must arrive compiled, and its source is then read only for traceback text. So:

- muster's own package (`scheduler`) keeps its sources beside its compiled files: its tracebacks
  show their source lines.
- Every other package ships compiled only: each `x.py` becomes `x.pyc` beside it (Python loads
  such "sourceless" modules directly) and the source goes. Their traceback frames keep file and
  line, not the line's text.
- The OpenAPI-generated API and model modules of the `kubernetes` client are compiled without
  docstrings (optimize=2; they hold no asserts): the docstrings are much of their size, and no
  code reads them.
- Of those generated modules, only the API classes muster calls (`KEPT_APIS`) stay, with the
  models they import (the client loads both lazily, by name; each API module imports every model
  its methods return, so that closure is complete for them). The others are most of the client.
- Trees and distributions that no process imports go: the client's asyncio twin
  `kubernetes.aio` (muster uses the synchronous client), `UNUSED_DISTRIBUTIONS`, the packages'
  own test modules, console scripts other than `muster` and `python`, the build's bytecode caches.
- Shared objects lose their symbol tables (`strip --strip-unneeded`; about 14 MB).

`make image-test` runs every process in the trimmed image (`--version`, the demo, the scheduler and
the controller in-cluster): a module that a process needs and this script removed fails it.

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
# The kubernetes client's API modules that muster's code calls (scheduler/demo.py; the other
# processes talk to the API server through scheduler/kube, which uses only Configuration and
# ApiClient).
KEPT_APIS = frozenset({"core_v1_api", "custom_objects_api"})
# The models of the built-in kinds `muster sim` serves (the demo runs sim in the image): sim
# checks request bodies' JSON types against them (scheduler/sim/typed_decode.py), and
# tests/unit/sim/test_typed_decode.py holds this list to sim's registry.
SIM_MODELS = frozenset(
    {
        "core_v1_event",
        "events_v1_event",
        "v1_cluster_role",
        "v1_cluster_role_binding",
        "v1_config_map",
        "v1_csi_driver",
        "v1_csi_node",
        "v1_custom_resource_definition",
        "v1_deployment",
        "v1_job",
        "v1_lease",
        "v1_mutating_webhook_configuration",
        "v1_namespace",
        "v1_node",
        "v1_persistent_volume",
        "v1_persistent_volume_claim",
        "v1_pod",
        "v1_pod_disruption_budget",
        "v1_pod_template",
        "v1_priority_class",
        "v1_replica_set",
        "v1_role",
        "v1_role_binding",
        "v1_secret",
        "v1_service",
        "v1_service_account",
        "v1_stateful_set",
        "v1_storage_class",
        "v1_validating_webhook_configuration",
    }
)
API_DIR = Path("kubernetes/client/api")
MODELS_DIR = Path("kubernetes/client/models")
MODEL_IMPORT = re.compile(r"^\s*from kubernetes\.client\.models\.(\w+) import", re.MULTILINE)
# Generated code whose docstrings are much of its size; neither package holds an assert.
WITHOUT_DOCSTRINGS = (API_DIR, MODELS_DIR)
UNUSED_TREES = (Path("kubernetes/aio"),)
# Dependencies of dependencies that only code muster never runs imports: rich's syntax
# highlighting, tracebacks and Markdown (pygments, markdown-it), kopf's command line (click),
# and kubernetes.aio's retries (aiohttp-retry).
UNUSED_DISTRIBUTIONS = ("pygments", "markdown-it-py", "mdurl", "click", "aiohttp-retry")
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


def kept_models(site: Path) -> set[str]:
    """The model modules the kept API modules import and sim's (SIM_MODELS), with every
    model those import."""
    todo = [
        model
        for api in KEPT_APIS
        for model in MODEL_IMPORT.findall((site / API_DIR / f"{api}.py").read_text())
    ]
    todo += SIM_MODELS
    kept: set[str] = set()
    while todo:
        model = todo.pop()
        if model not in kept:
            kept.add(model)
            todo += MODEL_IMPORT.findall((site / MODELS_DIR / f"{model}.py").read_text())
    return kept


def prune_generated_client(site: Path) -> int:
    """Delete the API modules muster does not call and the models only those need."""
    models = kept_models(site)
    freed = 0
    for directory, kept in ((API_DIR, KEPT_APIS), (MODELS_DIR, models)):
        for module in (site / directory).glob("*.py"):
            if module.stem != "__init__" and module.stem not in kept:
                freed += remove(module)
    print(f"trim_venv: kubernetes client: kept APIs {sorted(KEPT_APIS)} and {len(models)} models")
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
        docstrings = not any(relative.is_relative_to(d) for d in WITHOUT_DOCSTRINGS)
        py_compile.compile(
            str(source),
            cfile=str(source.with_suffix(".pyc")),
            dfile=str(source),
            doraise=True,
            optimize=0 if docstrings else 2,
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
