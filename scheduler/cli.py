"""The `muster` command: one entry point, one subcommand per process."""

from __future__ import annotations

import argparse
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
    ("demo", "scheduler.demo"),
    ("sim", "scheduler.sim.cli"),
    ("controller", "scheduler.controller.cli"),
    ("queue", "scheduler.controller.queue_command"),
    ("status", "scheduler.inspect.status"),
    ("explain", "scheduler.inspect.explain"),
    ("whatif", "scheduler.inspect.whatif"),
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
        module = __import__(module_name, fromlist=["add_parser"])
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the subcommand named on the command line; return its exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    named = words[0] if words and words[0] in dict(_SUBCOMMANDS) else None
    invoked = Path(sys.argv[0]).name if sys.argv else ""
    prog = "kubectl muster" if invoked == KUBECTL_PLUGIN else "muster"
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
