"""The compiled core's rules (scheduler/build.py), checked on plain Python so that a change
that would break the image's build or its config parsing fails here first."""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from scheduler import build

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", build.COMPILED_MODULES)
def test_no_compiled_module_declares_pydantic_fields(name: str) -> None:
    # A compiled class keeps only its fields' plain types: an alias or a bound would be lost.
    module = importlib.import_module(name)
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if cls.__module__ == name and issubclass(cls, BaseModel):
            assert not inspect.get_annotations(cls), f"{cls.__name__} declares fields"


@pytest.mark.parametrize("name", build.COMPILED_MODULES)
def test_every_listed_module_is_a_file_of_the_package(name: str) -> None:
    assert (ROOT / (name.replace(".", "/") + ".py")).is_file()


def test_device_selectors_stay_plain_python() -> None:
    # cel-python's transpiled code calls the CEL library's functions by module and name, and
    # a selector's time is cel-python's: scheduler/dra/cel/ is not compiled.
    assert [name for name in build.COMPILED_MODULES if name.startswith("scheduler.dra.cel")] == []


def test_plain_python_reports_plain() -> None:
    if os.environ.get("MUSTER_EXPECT_COMPILED") == "1":
        assert build.core() == "compiled"
    else:
        assert build.core() == "plain"


def test_setup_refuses_a_value_it_does_not_know() -> None:
    done = subprocess.run(
        [sys.executable, "setup.py", "--version"],
        cwd=ROOT,
        env={**os.environ, "MUSTER_COMPILE": "yes"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "MUSTER_COMPILE='yes' is not understood" in done.stderr
