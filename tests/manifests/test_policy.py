"""checkov's policy scan of the rendered manifests and the Dockerfile finds nothing.

Free checkov reports no severities, so this is stricter than "nothing high": every
failed check fails the test. A deliberate exception is skipped where it applies, with
its reason: `checkov.io/skipN` annotations in deploy/, `# checkov:skip=` in the
Dockerfile. checkov lives in its own venv (.venv-checkov, made by `make manifests`)
because it pins dozens of packages that would fight the project's.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.manifests.conftest import KUSTOMIZATIONS, REPO, need_kubectl

CHECKOV = REPO / ".venv-checkov" / "bin" / "checkov"


def test_checkov_finds_no_failed_check(tmp_path: Path) -> None:
    if not CHECKOV.exists():
        pytest.skip("checkov is not installed in .venv-checkov: run make manifests")
    kubectl = need_kubectl()
    scan = tmp_path / "scan"
    scan.mkdir()
    for kustomization in KUSTOMIZATIONS:
        rendered = subprocess.run(
            [kubectl, "kustomize", str(REPO / kustomization)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        (scan / f"{kustomization.replace('/', '_')}.yaml").write_text(rendered)
    shutil.copy(REPO / "Dockerfile", scan / "Dockerfile")
    result = subprocess.run(
        [
            str(CHECKOV),
            "--directory",
            str(scan),
            "--framework",
            "kubernetes",
            "dockerfile",
            "--compact",
            "--quiet",
            # Offline: no download of Bridgecrew's policy metadata.
            "--skip-download",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"checkov found failed checks:\n{result.stdout}{result.stderr}"
