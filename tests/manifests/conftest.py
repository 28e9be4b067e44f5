"""Fixtures for the manifest checks: the repository's manifests, rendered with kubectl.

The checks need kubectl (for `kubectl kustomize`); where it is missing they are
skipped with a message that says so. `make manifests` installs what they need.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CRDS = REPO / "crds"
DEPLOY = REPO / "deploy"
# Every kustomization a user may apply: the base, each overlay, the base with the
# optional webhooks component (composed in tests/manifests/webhooks/ as its comment says),
# and volcano-compat with the webhooks (tests/manifests/volcano-compat-webhooks/, composed
# as deploy/components/volcano-compat says).
WEBHOOKS = "tests/manifests/webhooks"
VOLCANO_COMPAT_WEBHOOKS = "tests/manifests/volcano-compat-webhooks"
KUSTOMIZATIONS = (
    "deploy",
    "deploy/overlays/servicemonitor",
    "deploy/overlays/volcano-compat",
    WEBHOOKS,
    VOLCANO_COMPAT_WEBHOOKS,
)

Doc = dict[str, Any]


def kubectl_path() -> str | None:
    """kubectl on PATH, if any."""
    return shutil.which("kubectl")


def need_kubectl() -> str:
    """kubectl's path, or skip the test and say why."""
    path = kubectl_path()
    if path is None:
        pytest.skip(
            "kubectl is not installed (make manifests installs Debian's kubernetes-client"
            " when it can): the rendered-manifest checks are skipped"
        )
    return path


_rendered: dict[str, list[Doc]] = {}


def render(kustomization: str) -> list[Doc]:
    """The objects `kubectl apply -k <kustomization>` would apply."""
    if kustomization not in _rendered:
        result = subprocess.run(
            [need_kubectl(), "kustomize", str(REPO / kustomization)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, f"kubectl kustomize {kustomization}:\n{result.stderr}"
        _rendered[kustomization] = [d for d in yaml.safe_load_all(result.stdout) if d]
    return _rendered[kustomization]


def find(docs: list[Doc], kind: str, name: str) -> Doc:
    """The one object of that kind and name."""
    matches = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]
