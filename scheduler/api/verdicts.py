"""A session's verdicts on a gang, kept on its JobInfo and written as its PodGroup's
conditions: Starving (framework/holds.py), PartlyBound (actions/allocate.py) and ScaleUp
(framework/scaleup.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Starving:
    """A session's verdict on a gang that waited past its waiting time: since when it
    starves (epoch seconds), and what is held for it or why nothing is (the PodGroup's
    Starving condition)."""

    since: float
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Completion:
    """A session's verdict on a partly bound gang (api/gang_state.py): since when it is
    partly bound (epoch seconds; None when no bound member says), when it is undone if it
    cannot be completed by then, and what the session did (the PodGroup's PartlyBound
    condition: a reason of api/reasons.py and a message)."""

    since: float | None
    deadline: float
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class ScaleUpVerdict:
    """A session's word on asking a cluster autoscaler for the gang's nodes (the PodGroup's
    ScaleUp condition: True while a request is asked for or provisioned, False when it
    failed for good)."""

    status: str
    reason: str
    message: str
