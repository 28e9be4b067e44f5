"""allocate's arguments, apart from allocate.py because allocate is compiled with mypyc in
the image (setup.py), and a compiled module keeps only the plain types of a class's fields:
pydantic would lose the aliases and bounds it validates with."""

from __future__ import annotations

from pydantic import Field

from scheduler.actions.backoff import Backoff
from scheduler.actions.predicate_cache import PredicateErrorCache
from scheduler.framework.arguments import Count


class AllocateArguments(Backoff, PredicateErrorCache):
    """allocate's arguments: kube-scheduler's node sampling, the retry backoff, and
    Volcano's predicateErrorCacheEnable (noted as changing nothing)."""

    percentage_of_nodes_to_score: Count = Field(0, alias="percentageOfNodesToScore", ge=0, le=100)
    min_feasible_nodes_to_find: Count = Field(100, alias="minFeasibleNodesToFind", ge=1)
