"""The pods a session's allocator is asked about, each read once: a number for its answers
and its claims up to the first that keeps it waiting.

A pod's claims are the session's (the allocator's claims do not change within a session),
so what keeps a pod waiting (kube-scheduler's PreEnqueue reasons: a template's claim not
made yet, a claim missing, being deleted or not the pod's own) is found once, and so is a
request's class that does not exist (the session's classes do not change either); only
whether a refused claim is allocated, which lifts its refusal, is asked each time
(dra/allocator.py). The scheduler asks with one object per pod: an entry is found by the
pod's uid and the object's identity, by value otherwise (a pod's hash walks all its
fields), so equal pods share one; it is kept for the next session (`PodEntries`) while the
pod and each claim it read are the same objects.

A pod whose claims a count answers (dra/allocator.py, the counted answer) gets a `Lane` too:
its claims' keys, how many devices they ask together, and the candidates of their shape by
node, so that each question about it reads those and nothing else.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.api.resource_claims import PodClaims
from scheduler.dra.candidates import Candidates
from scheduler.dra.fit import DeviceFit, Verdict
from scheduler.dra.inventory import Device
from scheduler.dra.requests import Claim


@dataclass(frozen=True, slots=True)
class Lane:
    """A pod whose claims a count answers: none waits or is refused, every request asks a
    count of one shape's candidates (dra/candidates.py, `shape`), no claim is
    named twice."""

    keys: tuple[str, ...]
    # How many devices the claims ask together, and the steps the matching would spend
    # finding them (its k-th slot walks past the k devices the earlier took).
    need: int
    steps: int
    # The shape's candidates by node, as far as found (Candidates.counted_nodes).
    nodes: dict[str, list[Device] | None]


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
    # Whether any of `claims` has a field muster refuses.
    refusals: bool
    lane: Lane | None


# A pod's entry as kept: the pod, the claims it was read from by key (None: missing), the
# entry.
_Kept = tuple[PodClaims, tuple[Claim | None, ...], PodEntry]


class PodEntries:
    """Pods' entries kept from one session to the next (dra/kept.py keeps one while the
    inventory and the classes stay the same objects, as the lanes' candidates are): an
    entry is reused while its pod is the same object, or an equal one, and each claim it
    read is the same object (claims are decoded again only when they change)."""

    def __init__(self) -> None:
        self.asked: dict[str, _Kept] = {}
        self.numbers = itertools.count()
        # The claims by key those entries were read from or checked against (read only):
        # while a session's are the very same mapping (dra/kept.py gives the same ClaimSet
        # for the same objects), every claim an entry read is unchanged.
        self.claims: Mapping[str, Claim] | None = None


class PodIndex:
    """The entry of every pod asked about in one session, over the session's claims and
    device classes; those of the pods the session before asked about come from `kept`,
    and this session's are kept there for the next (a pod not asked is forgotten)."""

    def __init__(
        self,
        claims: dict[str, Claim],
        classes: Mapping[str, object],
        candidates: Candidates,
        kept: PodEntries | None = None,
    ) -> None:
        self.claims = claims
        self.classes = classes
        self.candidates = candidates
        kept = kept if kept is not None else PodEntries()
        self._before = kept.asked
        # By uid: the pod, with the entry, so that an equal pod shares it.
        self._asked: dict[str, _Kept] = {}
        kept.asked = self._asked
        self._numbers = kept.numbers
        self._claims_unchanged = kept.claims is claims
        kept.claims = claims

    def entry(self, pod: PodClaims) -> PodEntry:
        """The pod's entry (read the first time the pod, or an equal one, is asked)."""
        known = self._asked.get(pod.uid)
        if known is not None and (known[0] is pod or known[0] == pod):
            return known[2]
        known = self._before.get(pod.uid)
        if (
            known is None
            or not (known[0] is pod or known[0] == pod)
            or not (self._claims_unchanged or self._same_claims(known[1], pod.claims))
        ):
            known = (pod, tuple([self.claims.get(key) for key in pod.claims]), self._read(pod))
        self._asked[pod.uid] = known
        return known[2]

    def _same_claims(self, seen: tuple[Claim | None, ...], keys: tuple[str, ...]) -> bool:
        """Whether the claims `keys` name are the very objects an entry read (`seen`, in
        the same order): asked of every pod once a session, so a plain loop."""
        claims = self.claims
        for key, claim in zip(keys, seen, strict=True):  # noqa: SIM110 (no generator)
            if claims.get(key) is not claim:
                return False
        return True

    def _read(self, pod: PodClaims) -> PodEntry:
        claims, waiting = read_claims(pod, self.claims)
        no_class = [self._no_class(claim) for claim in claims]
        refusals = any(claim.refusal is not None for claim in claims)
        lane = None if waiting is not None or refusals or any(no_class) else self._lane(claims)
        return PodEntry(next(self._numbers), claims, waiting, no_class, refusals, lane)

    def _lane(self, claims: list[Claim]) -> Lane | None:
        keys = tuple(claim.key for claim in claims)
        if not claims or len(set(keys)) != len(keys):
            return None
        shape = self.candidates.shape(claims[0])
        if shape is None or any(self.candidates.shape(claim) != shape for claim in claims):
            return None
        need = sum(request.choices[0].count for claim in claims for request in claim.requests)
        return Lane(keys, need, need * (need + 1) // 2, self.candidates.counted_nodes(shape))

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
