"""The pods a session's allocator is asked about, each read once: a number for its answers
and its claims up to the first that keeps it waiting.

A pod's claims are the session's (the allocator's claims do not change within a session),
so what keeps a pod waiting (kube-scheduler's PreEnqueue reasons: a template's claim not
made yet, a claim missing, being deleted or not the pod's own) is found once; only a claim's
refusal, which its allocation lifts, is asked each time (dra/allocator.py); so is a
request's class that does not exist (the session's classes do not change either). A pod's hash
walks all its fields, and the scheduler asks with one object per pod: an entry is found by
the object's identity first, by value otherwise, so equal pods share one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.api.resource_claims import PodClaims
from scheduler.dra.fit import DeviceFit, Verdict
from scheduler.dra.requests import Claim


@dataclass(frozen=True, slots=True)
class PodEntry:
    """One pod as the allocator knows it: a number for its answers, its claims up to the
    first that keeps it waiting, and the words of that wait (None: none does)."""

    index: int
    claims: list[Claim]
    waiting: DeviceFit | None
    # For each of `claims`: the words of its first request whose class does not exist
    # (kube-scheduler's PreFilter reason), or None.
    no_class: list[str | None]


class PodIndex:
    """The entry of every pod asked about in one session, over the session's claims and
    device classes."""

    def __init__(self, claims: Mapping[str, Claim], classes: Mapping[str, object]) -> None:
        self.claims = claims
        self.classes = classes
        self._by_value: dict[PodClaims, PodEntry] = {}
        # The pod is kept with its entry, so that its id stands for no other object.
        self._by_id: dict[int, tuple[PodClaims, PodEntry]] = {}

    def entry(self, pod: PodClaims) -> PodEntry:
        """The pod's entry (read the first time the pod, or an equal one, is asked)."""
        known = self._by_id.get(id(pod))
        if known is not None and known[0] is pod:
            return known[1]
        entry = self._by_value.get(pod)
        if entry is None:
            claims, waiting = read_claims(pod, self.claims)
            no_class = [self._no_class(claim) for claim in claims]
            entry = PodEntry(len(self._by_value), claims, waiting, no_class)
            self._by_value[pod] = entry
        self._by_id[id(pod)] = (pod, entry)
        return entry

    def _no_class(self, claim: Claim) -> str | None:
        for choice in claim.choices:
            if choice.device_class not in self.classes:
                return f"request {choice.name}: device class {choice.device_class} does not exist"
        return None


def read_claims(
    pod: PodClaims, claims: Mapping[str, Claim]
) -> tuple[list[Claim], DeviceFit | None]:
    """The pod's claims up to the first that keeps it waiting, and the words of that wait
    (kube-scheduler's PreEnqueue reasons), or None."""
    if pod.waiting is not None:
        return [], DeviceFit(Verdict.POD, pod.waiting)
    found: list[Claim] = []
    for key in pod.claims:
        claim = claims.get(key)
        if claim is None:
            return found, DeviceFit(Verdict.POD, f'could not find ResourceClaim "{key}"')
        if claim.deleting:
            return found, DeviceFit(Verdict.POD, f'resourceclaim "{claim.name}" is being deleted')
        if key in pod.from_template and claim.owner_pod_uid != pod.uid:
            return found, DeviceFit(
                Verdict.POD,
                f"ResourceClaim {key} was not created for Pod {pod.key} (Pod is not owner)",
            )
        found.append(claim)
    return found, None
