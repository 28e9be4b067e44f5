"""Where the CRD manifests sim and the demo serve are: crds/ of a source checkout, else
share/muster/crds of the environment (pyproject.toml installs them there)."""

from __future__ import annotations

import sys
from pathlib import Path


def crds_dir() -> Path:
    """The CRDs: crds/ of a source checkout, else share/muster/crds of the environment."""
    checkout = Path(__file__).resolve().parent.parent / "crds"
    if checkout.is_dir():
        return checkout
    return Path(sys.prefix) / "share" / "muster" / "crds"
