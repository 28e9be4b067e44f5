"""The `muster` command: one entry point, one subcommand per process."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from scheduler import __version__, gc_policy

# Each subcommand module exposes `add_parser(subparsers) -> None`, which sets
# `func` on its parser. Only the module of the subcommand being run is
# imported: the scheduler does not pay for kopf's import (about 0.6 s of CPU),
# which shortens its restart to first bind.
_SUBCOMMANDS: tuple[tuple[str, str], ...] = (
    ("scheduler", "scheduler.scheduler_cli"),
    ("demo", "muster_sim.demo"),
    ("sim", "muster_sim.cli"),
    ("controller", "scheduler.controller.cli"),
    ("queue", "scheduler.controller.queue_command"),
    ("status", "scheduler.inspect.status"),
    ("explain", "scheduler.inspect.explain"),
    ("whatif", "scheduler.inspect.whatif"),
)
# muster's test bench, a package of its own (muster_sim) with dependencies of its own (the
# `sim` extra): the image and an install without the extra leave it out, so these two
# subcommands may be missing where the others are not.
TEST_BENCH = frozenset({"sim", "demo"})
# Where a user gets the test bench, said whenever it is missing.
GET_TEST_BENCH = (
    "Install muster with its sim extra (pip install 'muster[sim]'), or run it from a checkout "
    "of muster (`make demo`, or `.venv/bin/muster sim` after `make venv`)."
)


# Installed as `kubectl-muster` too, kubectl runs it as the plugin `kubectl muster`.
KUBECTL_PLUGIN = "kubectl-muster"


def build_parser(only: str | None = None, prog: str = "muster") -> argparse.ArgumentParser:
    """The argument parser for every subcommand, or for the one named `only`."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument("--version", action="version", version=f"muster {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name, module_name in _SUBCOMMANDS:
        if only is not None and name != only:
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as missing:
            if name not in TEST_BENCH:
                raise
            _add_missing_test_bench(subparsers, name, missing)
            continue
        module.add_parser(subparsers)
    return parser


def missing_test_bench(name: str, missing: ModuleNotFoundError) -> str:
    """What `muster sim` or `muster demo` says where it cannot load: what is missing and
    how to get it."""
    module = (missing.name or "a module").split(".")[0]
    if module == "muster_sim":
        what = (
            f"muster {name} is not in this installation: it is muster's test bench (the "
            "muster_sim package), which the image and an install without the sim extra leave out."
        )
    else:
        what = f"muster {name} needs the Python module {module!r}, which is not installed."
    return f"{what}\n{GET_TEST_BENCH}"


def _add_missing_test_bench(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    missing: ModuleNotFoundError,
) -> None:
    """A stand-in subcommand that lists `name` in the help and says how to get it."""
    message = missing_test_bench(name, missing)
    stand_in = subparsers.add_parser(name, help="(not installed: pip install 'muster[sim]')")

    def refuse(_args: argparse.Namespace) -> int:
        print(message, file=sys.stderr)
        return 1

    stand_in.set_defaults(func=refuse)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the subcommand named on the command line; return its exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    named = words[0] if words and words[0] in dict(_SUBCOMMANDS) else None
    invoked = Path(sys.argv[0]).name if sys.argv else ""
    prog = "kubectl muster" if invoked == KUBECTL_PLUGIN else "muster"
    if named is not None and named in TEST_BENCH:
        # Before argparse, which would refuse the flags of a subcommand it cannot load. The
        # demo runs sim as a process of its own: sim's modules must load for either.
        try:
            for module_name in (dict(_SUBCOMMANDS)[named], dict(_SUBCOMMANDS)["sim"]):
                importlib.import_module(module_name)
        except ModuleNotFoundError as missing:
            print(missing_test_bench(named, missing), file=sys.stderr)
            return 1
    if named == "scheduler":
        # Before its modules are imported: the scheduler starts with the collector held
        # until its cache is loaded (scheduler/gc_policy.py).
        gc_policy.hold()
    try:
        args = build_parser(named, prog).parse_args(words)
        func: Callable[[argparse.Namespace], int] = args.func
        return func(args)
    finally:
        gc_policy.release()


if __name__ == "__main__":
    sys.exit(main())
