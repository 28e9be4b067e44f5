"""The `muster` command: one entry point, one subcommand per process."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from scheduler import __version__

# Each subcommand module exposes `add_parser(subparsers) -> None`, which sets
# `func` on its parser; importing lazily keeps `muster --help` fast and lets a
# process start without importing the others' dependencies.
_SUBCOMMANDS: tuple[tuple[str, str], ...] = (
    ("scheduler", "scheduler.server"),
    ("demo", "scheduler.demo"),
    ("sim", "scheduler.sim.cli"),
    ("controller", "scheduler.controller.cli"),
    ("queue", "scheduler.controller.queue_command"),
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = argparse.ArgumentParser(prog="muster", description=__doc__)
    parser.add_argument("--version", action="version", version=f"muster {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for _name, module_name in _SUBCOMMANDS:
        module = __import__(module_name, fromlist=["add_parser"])
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the subcommand named on the command line; return its exit code."""
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
