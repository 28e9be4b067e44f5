"""What `muster explain` and `muster whatif` say of a gang's scale-up: whether muster asks a
cluster autoscaler for its nodes (a ProvisioningRequest, framework/scaleup.py), where that
stands, and what it adds, from the session's own ScaleUpReport."""

from __future__ import annotations

from typing import Any

from scheduler.api.resources import describe
from scheduler.framework.decisions import ScaleUpReport, SessionResult

# What each state means, in a report's words.
_STATES = {
    "asked": "asked now",
    "pending": "asked, waiting for the autoscaler",
    "provisioned": "provisioned: the new capacity is held for the gang",
    "retrying": "the last request ended; another attempt comes after its backoff",
    "failed": "failed for good",
}


def scale_up_of(result: SessionResult, key: str) -> ScaleUpReport | None:
    """The session's report on the gang's scale-up, if muster asks (or asked) for it."""
    return next((report for report in result.scale_ups if report.job == key), None)


def adds(report: ScaleUpReport) -> str:
    """What the request asks room for, in words: "8 pods: 8 x cpu 4"."""
    count = sum(n for n, _ in report.adds)
    shapes = "; ".join(f"{n} x {describe(request)}" for n, request in report.adds)
    return f"{count} {'pod' if count == 1 else 'pods'}: {shapes}"


def scale_up_lines(report: ScaleUpReport | None, *, would: bool = False) -> list[str]:
    """The "Scale-up" section (`would`: the words of a submission not yet made)."""
    if report is None:
        return []
    state = "would be asked" if would and report.state == "asked" else _STATES[report.state]
    return [
        "",
        f"Scale-up: {state}",
        f"  ProvisioningRequest {report.request} (attempt {report.attempt})",
        f"  adds room for {adds(report)}",
    ]


def scale_up_document(report: ScaleUpReport | None) -> dict[str, Any] | None:
    """The same as JSON (-o json|yaml)."""
    if report is None:
        return None
    return {
        "state": report.state,
        "request": report.request,
        "attempt": report.attempt,
        "adds": [{"pods": n, "request": request.to_list()} for n, request in report.adds],
    }
