"""allocate's arguments, apart from allocate.py because allocate is compiled with mypyc in
the image (setup.py), and a compiled module keeps only the plain types of a class's fields:
pydantic would lose the aliases and bounds it validates with."""

from __future__ import annotations

from pydantic import Field

from scheduler.actions.backoff import Backoff
from scheduler.actions.predicate_cache import PredicateErrorCache
from scheduler.framework.arguments import Count, Duration

# How long a partly bound gang may wait to be completed before its bound members are
# evicted: a successor takes over within the lease (15 s) and 2 s, and preemption's
# evictions take the victims' grace period (30 s unless they say otherwise) to free room.
DEFAULT_PARTLY_BOUND_TIMEOUT = 60.0


class AllocateArguments(Backoff, PredicateErrorCache):
    """allocate's arguments: kube-scheduler's node sampling, the retry backoff, how long a
    partly bound gang may wait to be completed (`partly-bound-timeout`, a Go duration or
    seconds) before it is undone, and Volcano's predicateErrorCacheEnable (noted as
    changing nothing)."""

    percentage_of_nodes_to_score: Count = Field(0, alias="percentageOfNodesToScore", ge=0, le=100)
    min_feasible_nodes_to_find: Count = Field(100, alias="minFeasibleNodesToFind", ge=1)
    partly_bound_timeout: Duration = Field(
        DEFAULT_PARTLY_BOUND_TIMEOUT, alias="partly-bound-timeout", gt=0
    )
