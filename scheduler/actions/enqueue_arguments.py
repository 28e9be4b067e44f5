"""enqueue's arguments, apart from enqueue.py because enqueue is compiled with mypyc in the
image (scheduler/build.py), and a compiled module keeps only the plain types of a class's
fields: pydantic would lose the aliases and bounds it validates with."""

from __future__ import annotations

from pydantic import Field

from scheduler.framework.arguments import Arguments, Factor, Seconds

# Seconds an admitted gang may wait to start before it gives its reservation back.
DEFAULT_INQUEUE_TIMEOUT = 300.0


class EnqueueArguments(Arguments):
    """enqueue's arguments; the overcommit factor may also come from Volcano's
    `overcommit` plugin (its `overcommit-factor`), which muster folds into enqueue."""

    overcommit_factor: Factor | None = Field(None, alias="overcommit-factor")
    inqueue_timeout: Seconds = Field(DEFAULT_INQUEUE_TIMEOUT, alias="inqueue-timeout")
