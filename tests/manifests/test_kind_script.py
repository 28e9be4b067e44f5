"""tests/e2e/kind.sh is valid bash, and shellcheck-clean where shellcheck is installed."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.manifests.conftest import REPO

SCRIPT = REPO / "tests" / "e2e" / "kind.sh"


def test_kind_script_parses() -> None:
    result = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_kind_script_is_shellcheck_clean() -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (Debian: apt-get install shellcheck)")
    result = subprocess.run([shellcheck, str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
