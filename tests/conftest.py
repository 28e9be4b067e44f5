"""With MUSTER_EXPECT_COMPILED=1 (`make test-compiled`), the run refuses to start unless every
module scheduler/build.py lists was imported compiled: a run on plain Python by mistake
(a failed build, the wrong tree first on the path) would prove nothing about the image."""

from __future__ import annotations

import os

import pytest

from scheduler.build import COMPILED_MODULES, is_compiled


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("MUSTER_EXPECT_COMPILED") != "1":
        return
    plain = [module for module in COMPILED_MODULES if not is_compiled(module)]
    if plain:
        raise pytest.UsageError(f"MUSTER_EXPECT_COMPILED=1 but these run as plain Python: {plain}")
