"""`muster sim` and `muster demo` where muster's test bench (muster_sim, and the sim extra's
modules) is missing, as in the image: a clear message saying how to get it and exit 1, never a
traceback; the help still lists them, and the other subcommands are untouched."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

# A process in which the named modules cannot be imported, as where they are not installed.
WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
from scheduler.cli import main
sys.exit(main(sys.argv[2:]))
"""


def muster_without(missing: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, missing, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [["sim"], ["sim", "--nodes", "4", "--crds", "crds/"], ["demo"], ["sim", "--help"]],
    ids=["sim", "sim-with-flags", "demo", "sim-help"],
)
def test_without_muster_sim_the_test_bench_says_how_to_get_it(args: list[str]) -> None:
    done = muster_without("muster_sim", *args)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f"muster {args[0]} is not in this installation" in done.stderr
    assert "pip install 'muster[sim]'" in done.stderr
    assert "make demo" in done.stderr


@pytest.mark.parametrize(
    ("command", "missing"),
    [("sim", "jsonschema"), ("demo", "jsonschema"), ("demo", "rich")],
    ids=["sim-without-jsonschema", "demo-without-sim's-modules", "demo-without-rich"],
)
def test_without_the_sim_extra_the_test_bench_names_the_missing_module(
    command: str, missing: str
) -> None:
    done = muster_without(missing, command)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f"muster {command} needs the Python module '{missing}'" in done.stderr
    assert "pip install 'muster[sim]'" in done.stderr


def test_the_help_lists_the_missing_test_bench_and_how_to_get_it() -> None:
    done = muster_without("muster_sim", "--help")
    assert done.returncode == 0, done.stderr
    listed = dict(re.findall(r"^ {4}(\w+) +(.+)$", done.stdout, re.M))
    assert listed["sim"] == listed["demo"] == "(not installed: pip install 'muster[sim]')"
    assert listed["scheduler"] == "run the scheduler against an API server"


def test_the_cluster_commands_run_without_the_test_bench() -> None:
    done = muster_without("muster_sim,jsonschema,rich", "status", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: muster status")
