"""Which modules the image compiles with mypyc, and whether this process runs them so.

The modules a session spends its time in (the snapshot's records, the session, its state
and its node picker, the cycle builder, enqueue, allocate and backfill, the default
plugins and the pod-to-pod and device rules of nodefit/ they call, and DRA's allocation
core) are
compiled into C extension modules when muster is built with MUSTER_COMPILE=1 (setup.py;
the image is built so).
Plain Python runs the very same sources: it is what development and most of `make test`
use, and `make test-compiled` checks that both make the same decisions
(docs/design.md, "The compiled core").

A module listed here must compile as written: no pydantic model with fields of its own
(a compiled class keeps only its fields' plain types, so aliases and bounds would be
lost: such models live in a *_arguments module beside it), and objects built through
their constructors (a compiled class cannot be made with __new__ and filled in), named:
a classmethod builds with `TaskInfo(...)`, not `cls(...)`, since a call through `cls` is a
Python call whose keyword arguments are parsed at run time, where the named class is a
direct C call (docs/performance.md, "The compiled core", says what that saves).
"""

from __future__ import annotations

import importlib.machinery
import logging
import sys

COMPILED_MODULES = (
    "scheduler.api.resources",
    "scheduler.api.alike",
    "scheduler.api.task",
    "scheduler.api.selectors",
    "scheduler.api.placement",
    "scheduler.api.pod_requests",
    "scheduler.api.resource_claims",
    "scheduler.api.pod_topology",
    "scheduler.api.job",
    "scheduler.api.podgroup",
    "scheduler.api.verdicts",
    "scheduler.api.node",
    "scheduler.api.snapshot",
    "scheduler.api.queue",
    "scheduler.api.gang_state",
    "scheduler.framework.node_picker",
    "scheduler.framework.pod_shapes",
    "scheduler.framework.shape_heap",
    "scheduler.framework.session",
    "scheduler.framework.statement",
    "scheduler.framework.cycle_state",
    "scheduler.framework.cycle",
    "scheduler.framework.ordering",
    "scheduler.framework.job_status",
    "scheduler.framework.podgroup_conditions",
    "scheduler.framework.object_warnings",
    "scheduler.framework.settled",
    "scheduler.actions.enqueue",
    "scheduler.actions.allocate",
    "scheduler.actions.placement",
    "scheduler.actions.topology_placement",
    "scheduler.actions.subgroup_placement",
    "scheduler.actions.partly_bound",
    "scheduler.actions.backfill",
    "scheduler.plugins.nodeorder",
    "scheduler.plugins.gang",
    "scheduler.plugins.priority",
    "scheduler.plugins.predicates",
    "scheduler.plugins.proportion",
    "scheduler.plugins.drf",
    "scheduler.nodefit.podtopologyspread",
    "scheduler.nodefit.interpodaffinity",
    "scheduler.nodefit.dynamicresources",
    "scheduler.engine",
    # DRA's allocation core (scheduler/dra/): what fits asks per pod and node. Its CEL
    # package (dra/cel/) stays plain: its time is cel-python's, and cel-python's
    # transpiled code calls the library's functions by module and name. dra/kept.py stays
    # plain too: its DeviceMemo extends the CEL package's SelectorMemo.
    "scheduler.dra.fit",
    "scheduler.dra.inventory",
    "scheduler.dra.requests",
    "scheduler.dra.holdings",
    "scheduler.dra.search",
    "scheduler.dra.candidates",
    "scheduler.dra.results",
    "scheduler.dra.allocation",
    "scheduler.dra.shortage",
    "scheduler.dra.pods",
    "scheduler.dra.records",
    "scheduler.dra.allocator",
)


def is_compiled(module: str) -> bool:
    """Whether the module, once imported, came from an extension module."""
    __import__(module)
    origin = sys.modules[module].__file__ or ""
    return origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def core() -> str:
    """How this process runs the core: "compiled", "plain" (Python), or "mixed" (some
    modules compiled: an install gone wrong, which the scheduler logs as a warning)."""
    compiled = [is_compiled(module) for module in COMPILED_MODULES]
    if all(compiled):
        return "compiled"
    return "mixed" if any(compiled) else "plain"


def log_core(log: logging.Logger) -> None:
    """Say how this process runs the core: a warning when "mixed" (an install gone wrong,
    slower than it should be)."""
    core_now = core()
    (log.warning if core_now == "mixed" else log.info)(
        "scheduling core: %s (scheduler/build.py lists the compiled modules)", core_now
    )
