"""overcommit: Volcano's plugin for the enqueue action's overcommit factor.

muster's enqueue always checks that the cluster can hold an admitted gang's
minResources, up to `overcommit-factor` times its allocatable; listing this plugin
(as Volcano's stock config does) sets that factor. It has no extension points.
"""

from __future__ import annotations

from pydantic import Field

from scheduler.framework.arguments import Arguments, Factor
from scheduler.framework.plugin import Plugin

# Volcano's default: admit up to 1.2x the cluster's allocatable.
DEFAULT_FACTOR = 1.2


class OvercommitArguments(Arguments):
    """overcommit's argument, in Volcano's spelling; below 1 is refused (Volcano warns
    and uses 1.2; muster says so at load instead)."""

    overcommit_factor: Factor = Field(DEFAULT_FACTOR, alias="overcommit-factor")


class OvercommitPlugin(Plugin[OvercommitArguments]):
    """Carries the overcommit factor to the enqueue action."""

    name = "overcommit"
